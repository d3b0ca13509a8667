package main

import (
	"strings"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

func TestComparisonLines(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	c := &stats.Comparison{A: "runs/a", B: "runs/b", RunA: "x-seed1", RunB: "x-seed2", OnlyB: []string{"x-tcp"},
		Pairs: []stats.Pair{
			{Name: "x-homa", A: stats.Headline{Completed: 10, ShortP99us: f(20)}, B: stats.Headline{Completed: 9, ShortP99us: f(30), Drops: 4}, RatioP99: f(1.5)},
			{Name: "x-uet", A: stats.Headline{Completed: 8, CCTPhase: "ar", CCTP50us: f(2000)}, B: stats.Headline{Completed: 8, CCTPhase: "ar", CCTP50us: f(91)}, RatioCCT: f(0.0455)},
		}}
	got := strings.Join(comparisonLines(c), "\n")
	for _, want := range []string{
		"A = x-seed1 (runs/a), B = x-seed2 (runs/b)",
		"x-homa                       completed 10 / 9; short P99 20.0 µs / 30.0 µs (1.5); switch drops 0 / 4",
		"x-uet                        completed 8 / 8; ar CCT P50 2.00 ms / 91.0 µs (0.0455); switch drops 0 / 0",
		"only in B: x-tcp",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("comparison lines\n%s\nlack %q", got, want)
		}
	}
}
