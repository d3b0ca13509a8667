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

// telemetry holds what telemetry.csv's rows add up to, by experiment,
// then switch. A long run's file holds hundreds of thousands of rows (a
// 10-minute experiment on a star of 4: 192,481), so it is read twice
// instead of kept: once to add up each port's rounds, once for the
// depth of the busiest port, the one series kept per row.
type telemetry map[string]map[string]*telAcc

// readTelemetry reads telemetry.csv; a missing file yields no telemetry.
// A switch's rows out of order (time, port, queue) are kept and sorted
// (files written other than by runs).
func readTelemetry(ctx context.Context, dir string) (telemetry, error) {
	tel := telemetry{}
	row := func(r *rundir.TelemetryRow) TelemetryRow {
		return TelemetryRow{Time: r.UnixNano, Port: r.Port, Queue: r.Queue, Sent: r.SentBytes, depth: int64(r.DepthPkts)}
	}
	err := readSeries(ctx, dir, rundir.Telemetry(), func(r *rundir.TelemetryRow) {
		if tel[r.Experiment] == nil {
			tel[r.Experiment] = make(map[string]*telAcc)
		}
		a := tel[r.Experiment][r.Switch]
		if a == nil {
			a = newTelAcc()
			tel[r.Experiment][r.Switch] = a
		}
		a.add(row(r))
	})
	if err != nil || len(tel) == 0 {
		return tel, err
	}
	for _, bySw := range tel {
		for _, a := range bySw {
			a.pickBusiest()
		}
	}
	err = readSeries(ctx, dir, rundir.Telemetry(), func(r *rundir.TelemetryRow) {
		if a := tel[r.Experiment][r.Switch]; a != nil { // nil: a row written since the first reading
			a.keep(row(r))
		}
	})
	for exp, bySw := range tel {
		for sw, a := range bySw {
			if a.unordered {
				tel[exp][sw] = telAccOf(a.rows)
			}
		}
	}
	return tel, err
}

// telAcc adds up one switch's rows of one experiment, taken in the order
// (time, port, queue): per port, its total sent bytes per polling round
// and its depths. A port's total is the sum of each queue's latest
// cumulative count. Rows are grouped into polling rounds (a round ends
// when a queue reports again), so queues sampled at slightly different
// times still add up; counters start at an arbitrary value, so a port's
// series begins with its first complete round.
type telAcc struct {
	first     int64 // time of the first row
	lastKey   TelemetryRow
	n         int
	unordered bool
	ports     map[int]*portAcc
	busiest   int
	depth     []TelemetryRow // the busiest port's rows
	rows      []TelemetryRow // every row, when unordered
}

type portAcc struct {
	times      []int64
	sent       []int64
	last       map[int]int64 // queue -> latest cumulative sent bytes
	round      map[int]bool  // queues seen in the current round
	roundStart int64
	total      int64
	peak, qsum int64
}

func newTelAcc() *telAcc { return &telAcc{ports: map[int]*portAcc{}} }

// telAccOf adds up rows in any order.
func telAccOf(rows []TelemetryRow) *telAcc {
	slices.SortFunc(rows, func(a, b TelemetryRow) int {
		if a.Time != b.Time {
			return cmp.Compare(a.Time, b.Time)
		}
		if a.Port != b.Port {
			return a.Port - b.Port
		}
		return a.Queue - b.Queue
	})
	a := newTelAcc()
	for _, r := range rows {
		a.add(r)
	}
	a.pickBusiest()
	for _, r := range rows {
		a.keep(r)
	}
	return a
}

// before reports whether row r comes before row p in (time, port, queue).
func before(r, p TelemetryRow) bool {
	if r.Time != p.Time {
		return r.Time < p.Time
	}
	if r.Port != p.Port {
		return r.Port < p.Port
	}
	return r.Queue < p.Queue
}

func (a *telAcc) add(r TelemetryRow) {
	if a.n == 0 {
		a.first = r.Time
	} else if before(r, a.lastKey) {
		a.unordered = true
	}
	a.n++
	a.lastKey = r
	p := a.ports[r.Port]
	if p == nil {
		p = &portAcc{last: map[int]int64{}, round: map[int]bool{}}
		a.ports[r.Port] = p
	}
	if p.round[r.Queue] {
		p.closeRound()
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

func (p *portAcc) closeRound() {
	if len(p.round) > 0 {
		p.times = append(p.times, p.roundStart)
		p.sent = append(p.sent, p.total)
	}
	clear(p.round)
}

// pickBusiest ends the rounds and picks the port whose queues held the
// most packets.
func (a *telAcc) pickBusiest() {
	ids := SortedKeys(a.ports)
	a.busiest = ids[0]
	for _, id := range ids {
		a.ports[id].closeRound()
		if a.ports[id].qsum > a.ports[a.busiest].qsum {
			a.busiest = id
		}
	}
}

// keep takes a row of the second reading: the busiest port's depth, or
// every row when the first found them out of order.
func (a *telAcc) keep(r TelemetryRow) {
	switch {
	case a.unordered:
		a.rows = append(a.rows, r)
	case r.Port == a.busiest:
		a.depth = append(a.depth, r)
	}
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
	accs := map[string]*telAcc{}
	for sw, rows := range bySwitch {
		accs[sw] = telAccOf(rows)
	}
	return analyseTelemetry(accs, rates, defaultRate, origin)
}

// analyseTelemetry is AnalyseTelemetry of rows added up.
func analyseTelemetry(bySwitch map[string]*telAcc, rates map[portKey]float64, defaultRate float64, origin int64) ([]SwitchSeries, []LinkStats) {
	var out []SwitchSeries
	var links []LinkStats
	for _, sw := range SortedKeys(bySwitch) {
		a := bySwitch[sw]
		t0 := a.first
		if origin > 0 {
			t0 = origin
		}
		ss := SwitchSeries{Switch: sw, Busiest: a.busiest, Depth: map[int][]Point{}, Util: map[int][]Point{}}
		ports := a.ports
		portIDs := SortedKeys(ports)
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
		for _, r := range a.depth {
			ss.Depth[r.Queue] = append(ss.Depth[r.Queue], Point{float64(r.Time-t0) / 1e9, float64(r.depth)})
		}
		out = append(out, ss)
	}
	return out, links
}
