package main

import (
	"testing"

	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/reports/stats"
)

func TestVersusLine(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		v    reports.Versus
		want string
	}{
		{"both", reports.Versus{Baseline: "homa", Config: "tcp-cubic",
			Base: reports.Headline{ShortP50us: f(733), ShortP99us: f(9322)}, Other: reports.Headline{ShortP50us: f(61525), ShortP99us: f(126800)},
			RatioP50: f(83.9), RatioP99: f(13.6)},
			"headline: short-message P99 homa 9.32 ms, tcp-cubic 127 ms: 13.6x lower with homa; P50 733 µs vs 61.5 ms (83.9x lower with homa)"},
		{"params named", reports.Versus{Params: "load=0.5", Baseline: "homa", Config: "tcp-dctcp",
			Base: reports.Headline{ShortP99us: f(10)}, Other: reports.Headline{ShortP99us: f(20)}, RatioP99: f(2)},
			"headline (load=0.5): short-message P99 homa 10.0 µs, tcp-dctcp 20.0 µs: 2.0x lower with homa"},
		{"other faster", reports.Versus{Baseline: "homa", Config: "pfabric",
			Base: reports.Headline{ShortP99us: f(100)}, Other: reports.Headline{ShortP99us: f(50)}, RatioP99: f(0.5)},
			"headline: short-message P99 homa 100 µs, pfabric 50.0 µs: 2.0x lower with pfabric"},
		{"no P99", reports.Versus{Base: reports.Headline{ShortP99us: f(10)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versusLine(tc.v); got != tc.want {
				t.Errorf("versusLine = %q\nwant          %q", got, tc.want)
			}
		})
	}
}

func TestRepetitionLines(t *testing.T) {
	sp := func(med, lo, hi float64) *reports.Spread {
		return &reports.Spread{Median: med, Min: lo, Max: hi, Values: []float64{lo, med, hi}}
	}
	params := map[string]any{"load": "0.5"}
	sum := &reports.Summary{
		Headline: []reports.HeadlineRow{
			{Config: "homa", Params: params, Repetitions: 3, ShortP50us: sp(558, 500, 700), ShortP99us: sp(4741, 2700, 13800)},
			{Config: "tcp-cubic", Params: params, Repetitions: 3, ShortP50us: sp(57931, 57000, 59000), ShortP99us: sp(118007, 113600, 143600)},
		},
		Ratios: []reports.RatioRow{{Params: params, Config: "tcp-cubic", Baseline: "homa", Repetitions: 3, P99: sp(24.9, 10.4, 41.5)}},
	}
	want := "headline (load=0.5), median of 3 repetitions (range): short-message P99 homa 4.74 ms (2.70 ms–13.8 ms), " +
		"tcp-cubic 118 ms (114 ms–144 ms); tcp-cubic/homa 24.9 (10.4–41.5)x; P50 homa 558 µs (500 µs–700 µs), tcp-cubic 57.9 ms (57.0 ms–59.0 ms)"
	got := repetitionLines(sum)
	if len(got) != 1 || got[0] != want {
		t.Errorf("repetitionLines = %q\nwant %q", got, want)
	}
	sum.Ratios[0].Repetitions = 1
	if got := repetitionLines(sum); len(got) != 0 {
		t.Errorf("one repetition: %q, want the single-run headline instead", got)
	}
}

func TestFailuresText(t *testing.T) {
	for _, tc := range []struct {
		name string
		by   map[string]int64
		want string
	}{
		{"none", nil, ""},
		{"one reason", map[string]int64{"timeout": 1}, " (timeout 1)"},
		{"most first, then by name", map[string]int64{"timeout": 3, "peer_unknown": 1, "abandoned": 1}, " (timeout 3, abandoned 1, peer_unknown 1)"},
		{"in flight counted apart", map[string]int64{stats.Unfinished: 2}, ""},
		{"in flight beside a failure", map[string]int64{stats.Unfinished: 2, "timeout": 1}, " (timeout 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := failuresText(tc.by); got != tc.want {
				t.Errorf("failuresText(%v) = %q, want %q", tc.by, got, tc.want)
			}
		})
	}
}

func TestUnfinishedText(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    stats.RPCCounts
		want string
	}{
		{"all completed", stats.RPCCounts{Issued: 5, Completed: 5}, ""},
		{"failed with reasons", stats.RPCCounts{Issued: 5, Completed: 2, Failed: 3, Failures: map[string]int64{"timeout": 2, "peer_unknown": 1}},
			", failed 3 (timeout 2, peer_unknown 1)"},
		{"in flight", stats.RPCCounts{Issued: 5, Completed: 4, InFlight: 1, Failures: map[string]int64{stats.Unfinished: 1}}, ", in flight 1"},
		{"both", stats.RPCCounts{Issued: 5, Completed: 3, Failed: 1, InFlight: 1, Failures: map[string]int64{"timeout": 1, stats.Unfinished: 1}},
			", failed 1 (timeout 1), in flight 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unfinishedText(tc.c); got != tc.want {
				t.Errorf("unfinishedText(%+v) = %q, want %q", tc.c, got, tc.want)
			}
		})
	}
}

func TestCollectiveText(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	done := reports.CollectiveStats{Phase: "ring", Iterations: 2, IdealCCT: f(1000)}
	done.CCT.P50 = f(2500)
	partly := done
	partly.Incomplete = 1
	for _, tc := range []struct {
		name string
		c    reports.CollectiveStats
		want string
	}{
		{"all finished", done, "; ring CCT P50 2.50 ms (2.50x ideal)"},
		{"one finished, one not", reports.CollectiveStats{Phase: "ring", Iterations: 1, Incomplete: 1}, "; ring 1 iteration finished, 1 not"},
		{"one unfinished", partly, "; ring CCT P50 2.50 ms (2.50x ideal); ring 2 iterations finished, 1 not"},
		{"none finished", reports.CollectiveStats{Phase: "ring", Incomplete: 1}, "; ring 0 iterations finished, 1 not"},
		{"cut by the measurement's end", reports.CollectiveStats{Phase: "a2a", Iterations: 1, Requested: 2, CCT: done.CCT, IdealCCT: f(1000)},
			"; a2a CCT P50 2.50 ms (2.50x ideal) over 1 of 2 iterations (the measurement ended before the rest began)"},
		{"one unfinished, more not begun", reports.CollectiveStats{Phase: "ring", Iterations: 1, Incomplete: 1, Requested: 5},
			"; ring 1 iteration finished, 1 not, 3 not begun (the measurement ended first)"},
		{"all asked for finished", reports.CollectiveStats{Phase: "ring", Iterations: 2, Requested: 2, CCT: done.CCT}, "; ring CCT P50 2.50 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := collectiveText(tc.c); got != tc.want {
				t.Errorf("collectiveText = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMatrixText(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	done := reports.MatrixStats{Phase: "inc", Flows: 30, Completed: 30, Completion: f(2500)}
	done.Slowdown.Max = f(1.5)
	half := reports.MatrixStats{Phase: "inc", Flows: 30, Completed: 12, Failed: 1, InFlight: 2, Unstarted: 15}
	for _, tc := range []struct {
		name string
		m    reports.MatrixStats
		want string
	}{
		{"all done", done, "; inc 30/30 flows in 2.50 ms, slowest 1.50x its ideal"},
		{"the rest said", half, "; inc 12/30 flows (1 failed, 2 still in flight, 15 never started, their trigger not fired by the measurement's end)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := matrixText(tc.m); got != tc.want {
				t.Errorf("matrixText = %q, want %q", got, tc.want)
			}
		})
	}
}
