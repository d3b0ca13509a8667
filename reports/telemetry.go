package reports

import (
	"cmp"
	"context"
	"slices"

	"github.com/homatb/homatb/rundir"
)

// point is one (x, y) of a chart series.
type point struct{ x, y float64 }

// telemetryRow is one telemetry.csv line, reduced to what reports use.
type telemetryRow struct {
	t     int64
	port  int
	queue int
	sent  int64 // cumulative sent bytes
	depth int64 // packets queued at the sample
}

// telemetry holds telemetry.csv rows by experiment, then switch.
type telemetry map[string]map[string][]telemetryRow

// readTelemetry reads telemetry.csv; a missing file yields no telemetry.
func readTelemetry(ctx context.Context, dir string) (telemetry, error) {
	tel := telemetry{}
	err := readSeries(ctx, dir, rundir.Telemetry(), func(r *rundir.TelemetryRow) {
		if tel[r.Experiment] == nil {
			tel[r.Experiment] = make(map[string][]telemetryRow)
		}
		tel[r.Experiment][r.Switch] = append(tel[r.Experiment][r.Switch], telemetryRow{
			t: r.UnixNano, port: r.Port, queue: r.Queue, sent: r.SentBytes, depth: int64(r.DepthPkts)})
	})
	return tel, err
}

// switchSeries is the time series of one switch in one experiment.
type switchSeries struct {
	sw string
	// busiest is the port whose queues held the most packets; depth is its
	// occupancy per queue over time.
	busiest int
	depth   map[int][]point // queue -> (s, packets)
	// util is utilisation (fraction of the port rate) per port over time.
	util map[int][]point
	// noRate lists ports whose rate is unknown (no utilisation).
	noRate []int
}

// analyseTelemetry turns one experiment's rows into series and link stats.
// defaultRate (bit/s) is used for ports the switch statistics do not rate.
// Times are seconds since origin (unix ns), or since the first sample when
// origin is 0.
func analyseTelemetry(bySwitch map[string][]telemetryRow, rates map[portKey]float64, defaultRate float64, origin int64) ([]switchSeries, []LinkStats) {
	var out []switchSeries
	var links []LinkStats
	for _, sw := range sortedKeys(bySwitch) {
		rows := bySwitch[sw]
		slices.SortFunc(rows, func(a, b telemetryRow) int {
			if a.t != b.t {
				return cmp.Compare(a.t, b.t)
			}
			if a.port != b.port {
				return a.port - b.port
			}
			return a.queue - b.queue
		})
		t0 := rows[0].t
		if origin > 0 {
			t0 = origin
		}
		ss := switchSeries{sw: sw, depth: map[int][]point{}, util: map[int][]point{}}
		// Per port: total sent bytes per sample time and peak depth.
		// A port's total is the sum of each queue's latest cumulative count.
		// Rows are grouped into polling rounds (a round ends when a queue
		// reports again), so queues sampled at slightly different times
		// still add up; counters start at an arbitrary value, so a port's
		// series begins with its first complete round.
		type portAcc struct {
			times      []int64
			sent       []int64
			last       map[int]int64 // queue -> latest cumulative sent bytes
			round      map[int]bool  // queues seen in the current round
			roundStart int64
			total      int64
			peak, qsum int64
		}
		closeRound := func(p *portAcc) {
			if len(p.round) > 0 {
				p.times = append(p.times, p.roundStart)
				p.sent = append(p.sent, p.total)
			}
			clear(p.round)
		}
		ports := map[int]*portAcc{}
		for _, r := range rows {
			p := ports[r.port]
			if p == nil {
				p = &portAcc{last: map[int]int64{}, round: map[int]bool{}}
				ports[r.port] = p
			}
			if p.round[r.queue] {
				closeRound(p)
			}
			if len(p.round) == 0 {
				p.roundStart = r.t
			}
			p.round[r.queue] = true
			p.total += r.sent - p.last[r.queue]
			p.last[r.queue] = r.sent
			p.peak = max(p.peak, r.depth)
			p.qsum += r.depth
		}
		for _, p := range ports {
			closeRound(p)
		}
		portIDs := sortedKeys(ports)
		ss.busiest = portIDs[0]
		for _, id := range portIDs {
			if ports[id].qsum > ports[ss.busiest].qsum {
				ss.busiest = id
			}
		}
		for _, id := range portIDs {
			p := ports[id]
			rate := rates[portKey{sw, id}]
			if rate <= 0 {
				rate = defaultRate
			}
			ls := LinkStats{Switch: sw, Port: id, RateBps: rate, MaxDepthPkts: p.peak}
			if rate <= 0 {
				ss.noRate = append(ss.noRate, id)
				links = append(links, ls)
				continue
			}
			var sum, span float64
			for i := 1; i < len(p.times); i++ {
				dt := float64(p.times[i]-p.times[i-1]) / 1e9
				if dt <= 0 {
					continue
				}
				bits := float64(p.sent[i]-p.sent[i-1]) * 8
				u := bits / dt / rate
				ss.util[id] = append(ss.util[id], point{float64(p.times[i]-t0) / 1e9, u})
				ls.MaxUtil = max(ls.MaxUtil, u)
				sum += bits
				span += dt
			}
			if span > 0 {
				ls.MeanUtil = sum / span / rate
			}
			links = append(links, ls)
		}
		for _, r := range rows {
			if r.port == ss.busiest {
				ss.depth[r.queue] = append(ss.depth[r.queue], point{float64(r.t-t0) / 1e9, float64(r.depth)})
			}
		}
		out = append(out, ss)
	}
	return out, links
}
