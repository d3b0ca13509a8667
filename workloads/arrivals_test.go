package workloads

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestPoissonInterArrivalsAreExponential applies the one-sample
// Kolmogorov–Smirnov test to the schedule's inter-arrival gaps (after the
// rounding to nanoseconds that the agent sees) against Exp(rate). The 1%
// critical value of sqrt(n)·D is 1.628 for a fully specified distribution.
func TestPoissonInterArrivalsAreExponential(t *testing.T) {
	const n = 200_000
	for _, rate := range []float64{50, 20_000, 1e6} {
		p, err := NewPoisson(rate)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(rate), 7))
		gaps := make([]float64, n)
		var prev time.Duration
		for i := range gaps {
			at := p.Next(r)
			gaps[i] = (at - prev).Seconds()
			prev = at
		}
		sort.Float64s(gaps)
		var d float64
		for i, g := range gaps {
			f := 1 - math.Exp(-rate*g)
			d = max(d, math.Abs(f-float64(i)/n), math.Abs(f-float64(i+1)/n))
		}
		if stat := math.Sqrt(n) * d; stat > 1.628 {
			t.Errorf("rate %v: KS statistic sqrt(n)·D = %.3f above the 1%% critical value 1.628", rate, stat)
		}
		if got := float64(n) / prev.Seconds(); math.Abs(got-rate)/rate > 0.01 {
			t.Errorf("rate %v: achieved %.1f arrivals/s", rate, got)
		}
	}
}

// TestPoissonCountsPerWindow checks what the gap test cannot: that gaps
// are independent, so the number of arrivals in a fixed window is
// Poisson(rate·window). Pearson's chi-square over the counts 0..12 and 13+
// (13 degrees of freedom; 1% critical value 27.69) for windows holding 5
// arrivals on average.
func TestPoissonCountsPerWindow(t *testing.T) {
	const (
		rate    = 10_000.0
		windows = 20_000
		lambda  = 5.0
		bins    = 14
	)
	window := time.Duration(lambda / rate * float64(time.Second))
	p, err := NewPoisson(rate)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 9))
	var observed [bins]float64
	at := p.Next(r)
	for w := range windows {
		end := time.Duration(w+1) * window
		k := 0
		for ; at < end; at = p.Next(r) {
			k++
		}
		observed[min(k, bins-1)]++
	}
	var chi2, cum float64
	pk := math.Exp(-lambda)
	for k := range bins {
		prob := pk
		if k == bins-1 {
			prob = 1 - cum
		}
		cum += pk
		pk *= lambda / float64(k+1)
		want := windows * prob
		chi2 += (observed[k] - want) * (observed[k] - want) / want
	}
	t.Logf("chi-square %.1f (13 degrees of freedom)", chi2)
	if chi2 > 27.69 {
		t.Errorf("chi-square %.1f of counts per window against Poisson(%.0f) above the 1%% critical value 27.69; counts %v", chi2, lambda, observed)
	}
}

func TestBurstsShareInstants(t *testing.T) {
	b1, err := NewBursts(100*time.Microsecond, 10*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for k := range 1000 {
		at := b1.Next(r)
		base := time.Duration(k) * 100 * time.Microsecond
		if at < base || at >= base+10*time.Microsecond {
			t.Fatalf("burst %d at %v, want in [%v, %v)", k, at, base, base+10*time.Microsecond)
		}
	}
}

func TestBadArrivalSettings(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"negative rate", errOf(NewPoisson(-5)), "expected a positive finite rate"},
		{"zero rate", errOf(NewPoisson(0)), "expected a positive finite rate"},
		{"NaN rate", errOf(NewPoisson(math.NaN())), "expected a positive finite rate"},
		{"jitter above interval", errOf(NewBursts(time.Millisecond, 2*time.Millisecond)), "jitter"},
		{"zero interval", errOf(NewBursts(0, 0)), "positive interval"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", tc.err, tc.want)
			}
		})
	}
}

func errOf[T any](_ T, err error) error { return err }
