package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// binomPMF is the brute-force binomial probability, by log-gamma.
func binomPMF(m, n int, p float64) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(m + 1))
	c, _ := math.Lgamma(float64(n - m + 1))
	return math.Exp(a - b - c + float64(m)*math.Log(p) + float64(n-m)*math.Log1p(-p))
}

func bruteCDF(m, n int, p float64) float64 {
	s := 0.0
	for i := 0; i <= m && i <= n; i++ {
		s += binomPMF(i, n, p)
	}
	return s
}

func TestBinomialCDFAgainstSummation(t *testing.T) {
	tests := []struct {
		n int
		p float64
	}{
		{1, 0.5}, {7, 0.3}, {20, 0.5}, {100, 0.99}, {1000, 0.999}, {1000, 0.5}, {5000, 0.99},
	}
	for _, tc := range tests {
		for m := -1; m <= tc.n; m += max(1, tc.n/200) {
			got, want := BinomialCDF(m, tc.n, tc.p), bruteCDF(m, tc.n, tc.p)
			if math.Abs(got-want) > 1e-9 {
				t.Errorf("BinomialCDF(%d, %d, %g) = %.12g, brute force %.12g", m, tc.n, tc.p, got, want)
			}
		}
	}
}

// bruteRanks finds the interval ranks by scanning every rank over a
// running sum of the probability mass.
func bruteRanks(n int, q, conf float64) (int, int) {
	tail := (1 - conf) / 2
	cdf := make([]float64, n+1) // cdf[m] = P(B <= m)
	s := 0.0
	for m := 0; m <= n; m++ {
		s += binomPMF(m, n, q)
		cdf[m] = s
	}
	j, k := 0, n+1
	for r := 1; r <= n; r++ {
		if cdf[r-1] <= tail {
			j = r
		}
	}
	for r := n; r >= 1; r-- {
		if 1-cdf[r-1] <= tail {
			k = r
		}
	}
	return j, k
}

func TestConfidenceRanksAgainstBruteForce(t *testing.T) {
	for _, n := range []int{1, 2, 10, 59, 100, 300, 1000, 3000} {
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
			j, k := ConfidenceRanks(n, q, 0.95)
			bj, bk := bruteRanks(n, q, 0.95)
			if j != bj || k != bk {
				t.Errorf("n=%d q=%g: ranks (%d, %d), brute force (%d, %d)", n, q, j, k, bj, bk)
			}
			// The exact coverage P(j <= B < k) must reach the confidence.
			lo := 0.0
			if j >= 1 {
				lo = bruteCDF(j-1, n, q)
			}
			hi := 1.0
			if k <= n {
				hi = bruteCDF(k-1, n, q)
			}
			if cov := hi - lo; cov < 0.95-1e-9 {
				t.Errorf("n=%d q=%g: exact coverage %.4f < 0.95", n, q, cov)
			}
		}
	}
}

// TestIntervalCoverageMonteCarlo draws samples of a known distribution and
// counts how often the interval covers the true quantile.
func TestIntervalCoverageMonteCarlo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const trials = 1000
	for _, tc := range []struct {
		n int
		q float64
	}{{200, 0.5}, {1000, 0.99}, {5000, 0.999}} {
		covered := 0
		for range trials {
			x := make([]float64, tc.n)
			for i := range x {
				x[i] = r.Float64() // uniform: the true q-quantile is q
			}
			slices.Sort(x)
			e := estimate(x, tc.q, 0.95, 1)
			if (e.Lo == nil || *e.Lo <= tc.q) && (e.Hi == nil || tc.q <= *e.Hi) {
				covered++
			}
		}
		frac := float64(covered) / trials
		// Three standard errors below 95%.
		if floor := 0.95 - 3*math.Sqrt(0.95*0.05/trials); frac < floor {
			t.Errorf("n=%d q=%g: coverage %.3f below %.3f", tc.n, tc.q, frac, floor)
		}
		t.Logf("n=%d q=%g: coverage %.3f over %d trials", tc.n, tc.q, frac, trials)
	}
}

func TestRank(t *testing.T) {
	tests := []struct {
		n    int
		q    float64
		want int
	}{
		{0, 0.5, 0}, {1, 0.5, 1}, {10, 0.5, 5}, {11, 0.5, 6}, {100, 0.99, 99}, {1000, 0.999, 999},
		{10, 0.999, 10}, {10, 0, 1}, {10000, 0.5, 5000},
	}
	for _, tc := range tests {
		if got := Rank(tc.n, tc.q); got != tc.want {
			t.Errorf("Rank(%d, %g) = %d, want %d", tc.n, tc.q, got, tc.want)
		}
	}
	// The definition against HdrHistogram's on 1..10000 (as in its docs).
	x := make([]int64, 10000)
	for i := range x {
		x[i] = int64(i + 1)
	}
	for _, q := range []float64{0.5, 0.99, 0.999} {
		if got, want := estimate(x, q, 0.95, 1).Value, math.Ceil(q*10000); got != want {
			t.Errorf("P%g of 1..10000 = %g, want %g", 100*q, got, want)
		}
	}
}
