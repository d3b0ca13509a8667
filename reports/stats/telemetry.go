package stats

import (
	"cmp"
	"context"
	"slices"

	"github.com/homatb/homatb/rundir"
)

// Point is one (x, y) of a chart series.
type Point struct{ X, Y float64 }

// TelemetryRow is one telemetry.csv line, reduced to what reports use.
type TelemetryRow struct {
	Time  int64
	Port  int
	Queue int
	Sent  int64 // cumulative sent bytes
	depth int64 // packets queued at the sample
}

// telemetry holds telemetry.csv rows by experiment, then switch.
type telemetry map[string]map[string][]TelemetryRow

// readTelemetry reads telemetry.csv; a missing file yields no telemetry.
func readTelemetry(ctx context.Context, dir string) (telemetry, error) {
	tel := telemetry{}
	err := readSeries(ctx, dir, rundir.Telemetry(), func(r *rundir.TelemetryRow) {
		if tel[r.Experiment] == nil {
			tel[r.Experiment] = make(map[string][]TelemetryRow)
		}
		tel[r.Experiment][r.Switch] = append(tel[r.Experiment][r.Switch], TelemetryRow{
			Time: r.UnixNano, Port: r.Port, Queue: r.Queue, Sent: r.SentBytes, depth: int64(r.DepthPkts)})
	})
	return tel, err
}

// SwitchSeries is the time series of one switch in one experiment.
type SwitchSeries struct {
	Switch string
	// Busiest is the port whose queues held the most packets; depth is its
	// occupancy per queue over time.
	Busiest int
	Depth   map[int][]Point // queue -> (s, packets)
	// Util is utilisation (fraction of the port rate) per port over time.
	Util map[int][]Point
	// NoRate lists ports whose rate is unknown (no utilisation).
	NoRate []int
}

// AnalyseTelemetry turns one experiment's rows into series and link stats.
// defaultRate (bit/s) is used for ports the switch statistics do not rate.
// Times are seconds since origin (unix ns), or since the first sample when
// origin is 0.
func AnalyseTelemetry(bySwitch map[string][]TelemetryRow, rates map[portKey]float64, defaultRate float64, origin int64) ([]SwitchSeries, []LinkStats) {
	var out []SwitchSeries
	var links []LinkStats
	for _, sw := range SortedKeys(bySwitch) {
		rows := bySwitch[sw]
		slices.SortFunc(rows, func(a, b TelemetryRow) int {
			if a.Time != b.Time {
				return cmp.Compare(a.Time, b.Time)
			}
			if a.Port != b.Port {
				return a.Port - b.Port
			}
			return a.Queue - b.Queue
		})
		t0 := rows[0].Time
		if origin > 0 {
			t0 = origin
		}
		ss := SwitchSeries{Switch: sw, Depth: map[int][]Point{}, Util: map[int][]Point{}}
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
			p := ports[r.Port]
			if p == nil {
				p = &portAcc{last: map[int]int64{}, round: map[int]bool{}}
				ports[r.Port] = p
			}
			if p.round[r.Queue] {
				closeRound(p)
			}
			if len(p.round) == 0 {
				p.roundStart = r.Time
			}
			p.round[r.Queue] = true
			p.total += r.Sent - p.last[r.Queue]
			p.last[r.Queue] = r.Sent
			p.peak = max(p.peak, r.depth)
			p.qsum += r.depth
		}
		for _, p := range ports {
			closeRound(p)
		}
		portIDs := SortedKeys(ports)
		ss.Busiest = portIDs[0]
		for _, id := range portIDs {
			if ports[id].qsum > ports[ss.Busiest].qsum {
				ss.Busiest = id
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
				ss.NoRate = append(ss.NoRate, id)
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
				ss.Util[id] = append(ss.Util[id], Point{float64(p.times[i]-t0) / 1e9, u})
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
			if r.Port == ss.Busiest {
				ss.Depth[r.Queue] = append(ss.Depth[r.Queue], Point{float64(r.Time-t0) / 1e9, float64(r.depth)})
			}
		}
		out = append(out, ss)
	}
	return out, links
}
