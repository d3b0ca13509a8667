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
// messages: with log-spaced levels (processor sharing within each), the
// shortest half's P99 slowdown falls from about 20 with one level to
// near 1 with four, and all messages' stays far above SRPT's.
func TestReducedA7(t *testing.T) {
	d, err := workloads.ParseSizeSpec("w4")
	if err != nil {
		t.Fatal(err)
	}
	run := func(p Policy) *Result {
		r, err := Run(Config{Sizes: d, Load: 0.8, Messages: 80_000, Discard: 0.1, Seed: 1, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	half := func(r *Result) float64 { v, _ := r.Quantile(0.99, 0, 0.5); return v }
	one := half(run(Policy{Kind: Priority, Levels: 1, Within: PS, Split: LogSpaced}))
	four := half(run(Policy{Kind: Priority, Levels: 4, Within: PS, Split: LogSpaced}))
	if one < 15 || one > 30 {
		t.Errorf("1 level: shortest half P99 %.2f, want 15-30 (the article: 21.4)", one)
	}
	if four > 1.2 {
		t.Errorf("4 levels: shortest half P99 %.2f, want <= 1.2 (the article: 1.05)", four)
	}
}
