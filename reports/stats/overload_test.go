package stats

import (
	"slices"
	"strings"
	"testing"
)

// TestDetectOverload: a backlog that grows through the measurement and
// leaves RPCs unfinished is an overload, with its start, peak and oldest
// unfinished RPC; a steady one (a closed loop, or an open loop the network
// keeps up with) is not, nor one the drain clears or that leaves a stray
// RPC or two.
func TestDetectOverload(t *testing.T) {
	const s = int64(1e9)
	// 10 s of measurement from t=0, 10 RPCs a second.
	steady := func(rtt int64) []span {
		var out []span
		for i := range int64(100) {
			out = append(out, newSpan(i*s/10, i*s/10+rtt, 1000, 0, true))
		}
		return out
	}
	growing := steady(s / 100)
	// From 4 s on, every RPC issued stays unfinished.
	for i := range growing {
		if growing[i].issued >= 4*s {
			growing[i] = newSpan(growing[i].issued, 0, 1000, 0, false)
		}
	}
	// The same backlog, cleared by the drain: every RPC ends by 11 s.
	drained := steady(s / 100)
	for i := range drained {
		if drained[i].issued >= 4*s {
			drained[i].done = 10*s + drained[i].issued/10
		}
	}
	// It grows, but one RPC of the 60 is left at the end: a transport
	// that lost track of it, not a load it could not carry.
	oneLeft := slices.Clone(drained)
	oneLeft[len(oneLeft)-1] = newSpan(oneLeft[len(oneLeft)-1].issued, 0, 1000, 0, false)
	tests := []struct {
		name  string
		spans []span
		want  *Overload
	}{
		{"steady open loop", steady(s / 100), nil},
		{"grew, the drain cleared it", drained, nil},
		{"grew, one RPC left", oneLeft, nil},
		{"steady, each RPC 2 s", steady(2 * s), nil},
		{"growing", growing, &Overload{SinceS: 4, BacklogPeak: 60, Unfinished: 60, OldestS: 8}},
		{"no spans", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := detectOverload(tc.spans, 0, 10*s, 12*s)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("overload %+v, want %+v", got, tc.want)
			}
		})
	}
	e := Experiment{Overload: &Overload{SinceS: 4, BacklogPeak: 60, Unfinished: 60, OldestS: 8},
		Receivers: []ReceiverLoad{{Host: "h1", OfferedMbps: 24.3, DeliveredMbps: 18.6}}}
	got := OverloadSentence(&e)
	for _, want := range []string{"could not carry the offered load", "from 4.0 s into the measurement", "to 60 at its peak", "60 were still unfinished at the end", "h1 was offered 24.3 Mbit/s"} {
		if !strings.Contains(got, want) {
			t.Errorf("sentence %q lacks %q", got, want)
		}
	}
}

// TestSpanPacking: a span gives back the bytes, server and completion it
// was made with, at the ends of their ranges.
func TestSpanPacking(t *testing.T) {
	for _, c := range []struct {
		bytes     int64
		server    uint16
		completed bool
	}{{0, 0, false}, {1000, 7, true}, {maxSpanBytes, 65535, true}, {maxSpanBytes, 0, false}, {1, 65534, false}} {
		s := newSpan(5, 9, c.bytes, c.server, c.completed)
		if s.bytes() != c.bytes || s.server() != c.server || s.completed() != c.completed || s.issued != 5 || s.done != 9 {
			t.Errorf("span of %+v gives bytes %d server %d completed %v", c, s.bytes(), s.server(), s.completed())
		}
	}
}

// TestNotesSayAnomalies: the notes printed under an experiment include
// what Anomalies finds, without the experiment's name before it, and only
// under that experiment.
func TestNotesSayAnomalies(t *testing.T) {
	slowest := 534.2
	m := MatrixStats{Phase: "inc"}
	m.Slowdown.Max = &slowest
	s := &Summary{Experiments: []Experiment{
		{Name: "mx-homa", Transport: "homa", Homa: &TransportStats{Retries: 60}, Switch: SwitchStats{Present: true, Drops: 428}, Flows: []MatrixStats{m}},
		{Name: "mx-uet", Transport: "uet"},
	}}
	notes := s.Notes("mx-homa")
	want := "the slowest flow of inc took 534.2x its ideal while the switches dropped 428 packets"
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
		t.Errorf("notes %q: want one starting %q", notes, want)
	}
	if n := s.Notes("mx-uet"); len(n) != 0 {
		t.Errorf("notes of the other experiment %q, want none", n)
	}
}
