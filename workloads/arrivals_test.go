package workloads

import (
	"math"
	"math/rand/v2"
	"slices"
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
	w4 := mustParse(t, "w4")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"negative rate", errOf(NewPoisson(-5)), "expected a positive finite rate"},
		{"zero rate", errOf(NewPoisson(0)), "expected a positive finite rate"},
		{"NaN rate", errOf(NewPoisson(math.NaN())), "expected a positive finite rate"},
		{"load above 1", errOf(RateForLoad(1.2, 1e9, w4, TCPOverhead())), "load 1.2"},
		{"negative load", errOf(RateForLoad(-0.1, 1e9, w4, TCPOverhead())), "in (0, 1]"},
		{"zero link", errOf(RateForLoad(0.5, 0, w4, TCPOverhead())), "link rate"},
		{"zero outstanding", errOf(NewClosedLoop(0)), "at least 1"},
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

func TestRateForLoadOffersTheLoad(t *testing.T) {
	// Short ranges only, so the exact packet count can be summed by brute force.
	for _, spec := range []string{"fixed:100", "fixed:1448", "fixed:1449", "w4,max=100000", "uniform:1:100000"} {
		d := mustParse(t, spec)
		for _, o := range []Overhead{TCPOverhead(), HomaOverhead()} {
			rate, err := RateForLoad(0.8, 1e9, d, o)
			if err != nil {
				t.Fatal(err)
			}
			// Offered wire bits per second, from the exact packet count.
			var pkts float64
			for x := d.Min(); x <= d.Max(); x++ {
				pr := d.CDF(x) - d.CDF(x-1)
				pkts += pr * math.Ceil(float64(x)/float64(o.Payload))
			}
			bits := rate * 8 * (d.Mean() + pkts*float64(o.PerPacket))
			if math.Abs(bits-0.8e9) > 1e-6*0.8e9 {
				t.Errorf("%s: rate %.1f offers %.0f bit/s, want 0.8e9", spec, rate, bits)
			}
		}
	}
}

func TestPatterns(t *testing.T) {
	hosts := []string{"h1", "h2", "h3", "h4", "h5"}
	t.Run("all-to-all", func(t *testing.T) {
		plan, err := PatternSpec{Pattern: AllToAll}.Plan(hosts)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hosts {
			if len(plan[h]) != len(hosts)-1 || slices.Contains(plan[h], h) {
				t.Errorf("%s sends to %v", h, plan[h])
			}
		}
	})
	t.Run("incast", func(t *testing.T) {
		plan, err := PatternSpec{Pattern: Incast, Receiver: "h1"}.Plan(hosts)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := plan["h1"]; ok || len(plan) != 4 {
			t.Errorf("plan %v: want 4 senders to h1", plan)
		}
	})
	t.Run("permutation", func(t *testing.T) {
		for seed := range uint64(50) {
			plan, err := PatternSpec{Pattern: Permutation, Seed: seed}.Plan(hosts)
			if err != nil {
				t.Fatal(err)
			}
			recv := map[string]int{}
			for h, dst := range plan {
				if len(dst) != 1 || dst[0] == h {
					t.Fatalf("seed %d: %s sends to %v", seed, h, dst)
				}
				recv[dst[0]]++
			}
			if len(recv) != len(hosts) {
				t.Fatalf("seed %d: receivers %v, want each host once", seed, recv)
			}
		}
	})
	for _, bad := range []PatternSpec{
		{Pattern: "ring"},
		{Pattern: Incast, Receiver: "h9"},
		{Pattern: ManyToOne, Receiver: "h1", Senders: []string{"h1"}},
	} {
		if _, err := bad.Plan(hosts); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
	if _, err := (PatternSpec{Pattern: AllToAll}).Plan([]string{"h1", "h1"}); err == nil {
		t.Error("duplicate hosts accepted")
	}
}

func TestProbeValidate(t *testing.T) {
	if err := (Probe{Bytes: 100, RateRPS: 100}).Validate(1e9, 0.01); err != nil {
		t.Errorf("small probe rejected: %v", err)
	}
	if err := (Probe{Bytes: 100_000, RateRPS: 10_000}).Validate(1e9, 0.01); err == nil {
		t.Error("probe offering most of the link accepted")
	}
}
