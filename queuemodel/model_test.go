package queuemodel

import (
	"math"
	"testing"

	"github.com/homatb/homatb/workloads"
)

// TestPoliciesByHand runs tiny inputs whose completions can be worked out
// on paper: a job of 4 bytes at time 0 and one of 2 bytes at time 1.
//
//	FCFS: 4 bytes done at 4, 2 bytes at 6.
//	PS:   alone until 1 (3 left); then each at rate 1/2: the short one
//	      done at 1+2*2 = 5, the long one's last byte alone, done at 6.
//	SRPT: at 1 the short one (2 < 3) preempts: done at 3, the long at 6.
func TestPoliciesByHand(t *testing.T) {
	arrive, size := []float64{0, 1}, []float64{4, 2}
	tests := []struct {
		name   string
		policy Policy
		want   []float64 // slowdowns
	}{
		{"fcfs", Policy{Kind: FCFS}, []float64{4.0 / 4, 5.0 / 2}},
		{"ps", Policy{Kind: PS}, []float64{6.0 / 4, 4.0 / 2}},
		{"srpt", Policy{Kind: SRPT}, []float64{6.0 / 4, 2.0 / 2}},
		{"two levels, short above", Policy{Kind: Priority, Levels: 2, Within: FCFS, Cuts: []float64{3}}, []float64{6.0 / 4, 2.0 / 2}},
		{"two levels, both in the top one (fifo)", Policy{Kind: Priority, Levels: 2, Within: FCFS, Cuts: []float64{10}}, []float64{1, 5.0 / 2}},
		{"two levels, both in the top one (ps)", Policy{Kind: Priority, Levels: 2, Within: PS, Cuts: []float64{10}}, []float64{6.0 / 4, 2}},
		{"one level of ps is ps", Policy{Kind: Priority, Levels: 1, Within: PS}, []float64{6.0 / 4, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Simulate(arrive, size, tt.policy, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tt.want {
				if math.Abs(r.Slowdowns[i]-w) > 1e-12 {
					t.Errorf("job %d: slowdown %g, want %g", i, r.Slowdowns[i], w)
				}
			}
		})
	}
}

// TestThreeJobsPS checks processor sharing as the number in service
// changes twice: 3 bytes at 0, 3 at 0, 1 at 1. Until 1 two jobs share
// (2.5 left each); from 1 three share, the 1-byte job done at 1+3 = 4
// (the others have 1.5 left); then two share, done at 4+3 = 7.
func TestThreeJobsPS(t *testing.T) {
	r, err := Simulate([]float64{0, 0, 1}, []float64{3, 3, 1}, Policy{Kind: PS}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{7.0 / 3, 7.0 / 3, 3}
	for i, w := range want {
		if math.Abs(r.Slowdowns[i]-w) > 1e-12 {
			t.Errorf("job %d: slowdown %g, want %g", i, r.Slowdowns[i], w)
		}
	}
}

// TestSRPTPreemptsInService: a job arriving with less work than the one
// in service's remaining preempts it; one with more waits.
func TestSRPTPreemptsInService(t *testing.T) {
	// 10 at 0; 5 at 2 (8 left: preempts, done 7); 9 at 3 (waits: 8 left
	// of the first is less, done 7+8 = 15 for the first, 24 for it).
	r, err := Simulate([]float64{0, 2, 3}, []float64{10, 5, 9}, Policy{Kind: SRPT}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{15.0 / 10, 5.0 / 5, 21.0 / 9}
	for i, w := range want {
		if math.Abs(r.Slowdowns[i]-w) > 1e-12 {
			t.Errorf("job %d: slowdown %g, want %g", i, r.Slowdowns[i], w)
		}
	}
}

func TestCuts(t *testing.T) {
	got := LogCuts(10, 1000, 2)
	if len(got) != 1 || math.Abs(got[0]-100) > 1e-9 {
		t.Errorf("LogCuts(10, 1000, 2) = %v, want [100]", got)
	}
	// Bytes 1+1+2+4+8 = 16: half the bytes (8) are reached at 4.
	if got := ByteCuts([]float64{8, 1, 4, 2, 1}, 2); len(got) != 1 || got[0] != 4 {
		t.Errorf("ByteCuts = %v, want [4]", got)
	}
}

// TestSplits checks where each split cuts, on messages far enough apart
// that none waits: 1, 2, 4, ..., 128 bytes.
func TestSplits(t *testing.T) {
	size := []float64{1, 2, 4, 8, 16, 32, 64, 128}
	arrive := make([]float64, len(size))
	for i := range arrive {
		arrive[i] = float64(1000 * i)
	}
	pri := func(k int, s Split, lo, hi float64) Policy {
		return Policy{Kind: Priority, Levels: k, Within: PS, Split: s, Lo: lo, Hi: hi}
	}
	tests := []struct {
		name string
		p    Policy
		want []float64
	}{
		{"log-spaced between the messages' own bounds", pri(2, LogSpaced, 0, 0), []float64{math.Sqrt(128)}},
		{"log-spaced between given bounds", pri(2, LogSpaced, 10, 1000), []float64{100}},
		{"log-spaced from a given lower bound to the largest", pri(2, LogSpaced, 2, 0), []float64{16}},
		{"log-spaced from the smallest to a given upper bound", pri(3, LogSpaced, 0, 1000), []float64{10, 100}},
		// Ranks 2, 4 and 6 of 8.
		{"equal shares of messages", pri(4, EqualMessages, 0, 0), []float64{2, 8, 32}},
		// 1+2+...+64 = 127 bytes, below half of 255: the cut is at 128.
		{"equal shares of bytes", pri(2, EqualBytes, 0, 0), []float64{128}},
		{"cuts as given", Policy{Kind: Priority, Levels: 2, Within: FCFS, Cuts: []float64{5}}, []float64{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Simulate(arrive, size, tt.p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Cuts) != len(tt.want) {
				t.Fatalf("cuts %v, want %v", r.Cuts, tt.want)
			}
			for i, w := range tt.want {
				if math.Abs(r.Cuts[i]-w) > 1e-9*w {
					t.Errorf("cuts %v, want %v", r.Cuts, tt.want)
				}
			}
		})
	}
}

// TestPolicyNames: policies that cut differently have different names
// (the claims cache runs by name).
func TestPolicyNames(t *testing.T) {
	seen := map[string]Policy{}
	for _, p := range []Policy{
		{Kind: PS}, {Kind: SRPT},
		{Kind: Priority, Levels: 2, Within: PS, Split: LogSpaced},
		{Kind: Priority, Levels: 2, Within: FCFS, Split: LogSpaced},
		{Kind: Priority, Levels: 2, Within: PS, Split: LogSpaced, Lo: 1000},
		{Kind: Priority, Levels: 2, Within: PS, Split: LogSpaced, Lo: 1000, Hi: 1.6e6},
		{Kind: Priority, Levels: 2, Within: PS, Split: LogSpaced, Hi: 1.6e6},
		{Kind: Priority, Levels: 2, Within: PS, Split: EqualMessages},
		{Kind: Priority, Levels: 2, Within: PS, Split: EqualBytes},
		{Kind: Priority, Levels: 2, Within: PS, Cuts: []float64{5}},
	} {
		if q, ok := seen[p.String()]; ok {
			t.Errorf("%+v and %+v are both named %q", p, q, p.String())
		}
		seen[p.String()] = p
	}
}

func TestQuantileBySizeRank(t *testing.T) {
	r := &Result{Sizes: []float64{5, 1, 3, 2, 4}, Slowdowns: []float64{50, 10, 30, 20, 40}}
	tests := []struct {
		q, lo, hi, want float64
	}{
		{1, 0, 0.4, 20},  // the two smallest (1 and 2)
		{0.5, 0, 1, 30},  // nearest-rank median of all five
		{1, 0.8, 1, 50},  // the largest fifth
		{0.01, 0, 1, 10}, // the smallest value
	}
	for _, tt := range tests {
		got, err := r.Quantile(tt.q, tt.lo, tt.hi)
		if err != nil || got != tt.want {
			t.Errorf("Quantile(%g, %g, %g) = %g, %v; want %g", tt.q, tt.lo, tt.hi, got, err, tt.want)
		}
	}
	if _, err := r.Quantile(0.99, 0.5, 0.5); err == nil {
		t.Error("an empty size range gave no error")
	}
}

func TestByteShare(t *testing.T) {
	d, err := workloads.ParseSizeSpec("uniform:1:4")
	if err != nil {
		t.Fatal(err)
	}
	// Half the messages (1 and 2) carry 3 of the 10 bytes.
	m, b := ByteShare(d, 2)
	if math.Abs(m-0.5) > 1e-12 || math.Abs(b-0.3) > 1e-12 {
		t.Errorf("ByteShare(uniform:1:4, 2) = %g, %g; want 0.5, 0.3", m, b)
	}
}

func TestConfigErrors(t *testing.T) {
	d, _ := workloads.ParseSizeSpec("fixed:100")
	for _, c := range []Config{
		{Sizes: d, Load: 1, Messages: 10},
		{Sizes: d, Load: 0.5, Messages: 1},
		{Sizes: d, Load: 0.5, Messages: 10, Policy: Policy{Kind: Priority, Levels: 0, Within: PS}},
		{Sizes: d, Load: 0.5, Messages: 10, Policy: Policy{Kind: Priority, Levels: 2, Within: SRPT}},
		{Sizes: d, Load: 0.5, Messages: 10, Policy: Policy{Kind: Priority, Levels: 2, Within: PS, Split: Split(9)}},
		{Sizes: d, Load: 0.5, Messages: 10, Policy: Policy{Kind: Priority, Levels: 2, Within: PS, Split: LogSpaced, Lo: 1000, Hi: 100}},
		{Sizes: d, Load: 0.5, Messages: 10, Policy: Policy{Kind: Priority, Levels: 2, Within: PS, Split: LogSpaced, Lo: -1}},
		{Sizes: d, Load: 0.5, Messages: 10, Policy: Policy{Kind: Priority, Levels: 3, Within: PS, Cuts: []float64{5}}},
	} {
		if _, err := Run(c); err == nil {
			t.Errorf("Run(%+v) gave no error", c)
		}
	}
}

// TestPSMeanIsOneOverOneMinusRho is A1 in small: under processor sharing
// every size's mean slowdown is 1/(1-rho). W1's short messages converge
// fast; 200,000 of them at 50% load land within 2%.
func TestPSMeanIsOneOverOneMinusRho(t *testing.T) {
	d, err := workloads.ParseSizeSpec("w1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(Config{Sizes: d, Load: 0.5, Messages: 200_000, Discard: 0.1, Seed: 1, Policy: Policy{Kind: PS}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.MeanSlowdown(); math.Abs(got-2)/2 > 0.02 {
		t.Errorf("PS mean slowdown at 50%% load %.4f, want 2 within 2%%", got)
	}
}

// TestReducedA7 is the article's priority-levels figure on a fifth of its
// messages, with two log-spaced splits (processor sharing within each
// level). One level is PS: the shortest half's P99 slowdown is about 21.
// The split matters for 2 levels: W4 has 8% of its messages (6% of its
// bytes) between 40 and 52 KB, and a cut above them (log-spaced from 1 KB
// to 1.6 MB: at 40 KB) leaves the top level enough load that over 1% of
// the short messages share it with one other (slowdown 2, the article's
// 2.0), where a cut below them (log-spaced from the smallest message, 53 B,
// to the largest: at 7.3 KB) leaves it almost empty (about 1.1).
func TestReducedA7(t *testing.T) {
	d, err := workloads.ParseSizeSpec("w4")
	if err != nil {
		t.Fatal(err)
	}
	half := func(p Policy) float64 {
		r, err := Run(Config{Sizes: d, Load: 0.8, Messages: 80_000, Discard: 0.1, Seed: 1, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		v, err := r.Quantile(0.99, 0, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	own := Policy{Kind: Priority, Within: PS, Split: LogSpaced}
	fitted := Policy{Kind: Priority, Within: PS, Split: LogSpaced, Lo: 1000, Hi: 1.6e6}
	lv := func(p Policy, k int) Policy { p.Levels = k; return p }
	if one := half(lv(fitted, 1)); one < 15 || one > 30 {
		t.Errorf("1 level: shortest half P99 %.2f, want 15-30 (the article: 21.4)", one)
	}
	if two := half(lv(fitted, 2)); two < 1.8 || two > 2.2 {
		t.Errorf("2 levels cut at 40 KB: shortest half P99 %.2f, want 1.8-2.2 (the article: 2.0)", two)
	}
	if two := half(lv(own, 2)); two > 1.5 {
		t.Errorf("2 levels cut at 7.3 KB: shortest half P99 %.2f, want below 1.5", two)
	}
	if four := half(lv(fitted, 4)); four > 1.2 {
		t.Errorf("4 levels: shortest half P99 %.2f, want <= 1.2 (the article: 1.05)", four)
	}
}
