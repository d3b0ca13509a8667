package stats

import (
	"fmt"
	"slices"
	"strings"
)

// span is one measured RPC's life for the backlog: when it was issued,
// when it ended (completed or failed; 0 while still unfinished at the
// end), its server and its bytes both ways.
type span struct {
	issued, done int64
	// packed is the bytes (47 bits), the server's index into the
	// experiment's servers (16 bits) and whether it completed (1 bit): 24
	// bytes a span, for the hundreds of millions of a collective at scale.
	packed uint64
}

// maxSpanBytes bounds the bytes a span holds.
const maxSpanBytes = 1<<47 - 1

func newSpan(issued, done, bytes int64, server uint16, completed bool) span {
	s := span{issued: issued, done: done, packed: uint64(bytes)<<17 | uint64(server)<<1}
	if completed {
		s.packed |= 1
	}
	return s
}

func (s span) bytes() int64    { return int64(s.packed >> 17) }
func (s span) server() uint16  { return uint16(s.packed >> 1) }
func (s span) completed() bool { return s.packed&1 != 0 }

// Overload says that the configuration could not carry the offered load:
// the backlog of RPCs issued but not finished grew through the measurement.
type Overload struct {
	// SinceS is when the backlog started to grow, in seconds since the
	// measurement began.
	SinceS float64 `json:"since_s"`
	// BacklogPeak is the most RPCs unfinished at once; Unfinished how many
	// were still unfinished when the experiment ended (they are the
	// in-flight RPCs of the books).
	BacklogPeak int64 `json:"backlog_peak"`
	Unfinished  int64 `json:"unfinished"`
	// OldestS is how long the oldest RPC unfinished at the end had waited
	// by then (with none unfinished, the longest any measured RPC took).
	OldestS float64 `json:"oldest_s"`
}

// ReceiverLoad is one server's offered and delivered load over the
// measurement: request and response bytes of the RPCs issued to it, and
// of those that completed.
type ReceiverLoad struct {
	Host          string  `json:"host"`
	OfferedMbps   float64 `json:"offered_mbps"`
	DeliveredMbps float64 `json:"delivered_mbps"`
}

// backlogPoints is how many times the measurement's backlog is sampled.
const backlogPoints = 20

// The backlog grows through the measurement when, over its last quarter,
// it averages at least overloadGrowth times its first quarter's average
// plus overloadMinRPCs, and ends the measurement at least that high. It is
// an overload when, besides, some receiver was left short: the RPCs to it
// still unfinished when the experiment ended carry at least
// overloadShortfall of the bytes it was offered. A backlog the drain
// clears (a link down late in the measurement, a burst) is not one, nor a
// few RPCs a transport lost track of while it carried the load.
const (
	overloadGrowth    = 2
	overloadMinRPCs   = 10
	overloadShortfall = 0.05
)

// leftShort reports whether the unfinished spans of some server carry at
// least overloadShortfall of the bytes offered to it.
func leftShort(spans []span) bool {
	offered, unfinished := map[uint16]int64{}, map[uint16]int64{}
	for _, s := range spans {
		offered[s.server()] += s.bytes()
		if s.done == 0 {
			unfinished[s.server()] += s.bytes()
		}
	}
	for srv, u := range unfinished {
		if float64(u) >= overloadShortfall*float64(offered[srv]) {
			return true
		}
	}
	return false
}

// backlogAt is the number of spans issued by t and not ended by then.
func backlogAt(spans []span, t int64) int64 {
	var n int64
	for _, s := range spans {
		if s.issued <= t && (s.done == 0 || s.done > t) {
			n++
		}
	}
	return n
}

// detectOverload samples the backlog through the measurement [m0, m1] and
// returns the overload it shows (nil when it does not grow), with the peak
// and the oldest unfinished RPC as of end, the experiment's end.
func detectOverload(spans []span, m0, m1, end int64) (*Overload, []Point) {
	if len(spans) == 0 || m1 <= m0 {
		return nil, nil
	}
	pts := make([]Point, backlogPoints)
	for k := range pts {
		t := m0 + (m1-m0)*int64(k+1)/backlogPoints
		pts[k] = Point{X: float64(t-m0) / 1e9, Y: float64(backlogAt(spans, t))}
	}
	q := backlogPoints / 4
	mean := func(ps []Point) float64 {
		var s float64
		for _, p := range ps {
			s += p.Y
		}
		return s / float64(len(ps))
	}
	first, last := mean(pts[:q]), mean(pts[backlogPoints-q:])
	bar := overloadGrowth*first + overloadMinRPCs
	if last < bar || pts[backlogPoints-1].Y < bar || !leftShort(spans) {
		return nil, pts
	}
	o := &Overload{BacklogPeak: backlogPeak(spans)}
	for _, p := range pts {
		if p.Y <= first {
			o.SinceS = p.X
		}
	}
	oldest := int64(0)
	for _, s := range spans {
		switch {
		case s.done == 0:
			o.Unfinished++
			oldest = max(oldest, end-s.issued)
		case o.Unfinished == 0:
			oldest = max(oldest, s.done-s.issued)
		}
	}
	o.OldestS = float64(oldest) / 1e9
	return o, pts
}

// backlogPeak is the most spans unfinished at any one time.
func backlogPeak(spans []span) int64 {
	type ev struct {
		t int64
		d int64
	}
	evs := make([]ev, 0, 2*len(spans))
	for _, s := range spans {
		evs = append(evs, ev{s.issued, 1})
		if s.done > 0 {
			evs = append(evs, ev{s.done, -1})
		}
	}
	// Ends before starts at the same instant: an RPC that ends as another
	// starts does not overlap it.
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return int(min(max(a.t-b.t, -1), 1))
		}
		return int(a.d - b.d)
	})
	var n, peak int64
	for _, e := range evs {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

// receiverLoads is each server's offered and delivered load over a
// measurement of dur seconds.
func receiverLoads(spans []span, servers []string, dur float64) []ReceiverLoad {
	if dur <= 0 || len(servers) == 0 {
		return nil
	}
	out := make([]ReceiverLoad, len(servers))
	for i, h := range servers {
		out[i].Host = h
	}
	for _, s := range spans {
		r := &out[s.server()]
		r.OfferedMbps += float64(s.bytes()) * 8 / dur / 1e6
		if s.completed() {
			r.DeliveredMbps += float64(s.bytes()) * 8 / dur / 1e6
		}
	}
	sortHostLoads(out)
	return out
}

// sortHostLoads orders receivers by the load they were offered, most first.
func sortHostLoads(rs []ReceiverLoad) {
	slices.SortStableFunc(rs, func(a, b ReceiverLoad) int {
		switch {
		case a.OfferedMbps > b.OfferedMbps:
			return -1
		case a.OfferedMbps < b.OfferedMbps:
			return 1
		}
		return strings.Compare(a.Host, b.Host)
	})
}

// OverloadSentence says in one sentence that an experiment's configuration
// could not carry its offered load, since when and how far behind it fell;
// "" when it carried it.
func OverloadSentence(e *Experiment) string {
	o := e.Overload
	if o == nil {
		return ""
	}
	s := fmt.Sprintf("overload: the configuration could not carry the offered load: from %.1f s into the measurement the backlog of unfinished RPCs grew, to %d at its peak", o.SinceS, o.BacklogPeak)
	if o.Unfinished > 0 {
		s += fmt.Sprintf(", and %d were still unfinished at the end (the in-flight RPCs), the oldest issued %.1f s before", o.Unfinished, o.OldestS)
	}
	if len(e.Receivers) > 0 {
		r := e.Receivers[0]
		s += fmt.Sprintf("; %s was offered %.1f Mbit/s (requests and responses) and delivered %.1f Mbit/s", r.Host, r.OfferedMbps, r.DeliveredMbps)
	}
	return s
}

// Notes are what the terminal says of an experiment beyond its books: the
// overload sentence, where the switches dropped packets and the shortest
// half's headline, when there are.
func (s *Summary) Notes(experiment string) []string {
	var out []string
	for i := range s.Experiments {
		e := &s.Experiments[i]
		if e.Name != experiment {
			continue
		}
		for _, n := range []string{OverloadSentence(e), DropsSentence(e.Switch), HalfFallback(e)} {
			if n != "" {
				out = append(out, n)
			}
		}
		// What would surprise a reader of the transports' papers, said
		// under the experiment it is about (the report's groups say it too).
		for _, n := range Anomalies(e) {
			out = append(out, strings.TrimPrefix(n, e.Name+": "))
		}
	}
	return out
}
