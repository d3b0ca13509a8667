package stats

import (
	"math"
)

// Rank returns the 1-based nearest-rank index of the q-quantile among n
// sorted samples: ceil(q*n), clamped to [1, n]. It returns 0 when n is 0.
func Rank(n int, q float64) int {
	if n <= 0 {
		return 0
	}
	r := int(math.Ceil(q*float64(n) - 1e-9))
	return min(max(r, 1), n)
}

// ConfidenceRanks returns 1-based ranks j < k such that the interval between
// the j-th and k-th order statistics of n independent samples covers the true
// q-quantile with probability at least conf, whatever the (continuous)
// distribution. The number B of samples below the quantile is Binomial(n, q)
// and the interval covers it exactly when j <= B < k, so j is the largest rank
// with P(B < j) <= (1-conf)/2 and k the smallest with P(B >= k) <= (1-conf)/2.
// A bound that no rank satisfies (too few samples) is returned as 0 (lower)
// or n+1 (upper): the interval is open on that side.
func ConfidenceRanks(n int, q, conf float64) (j, k int) {
	if n <= 0 {
		return 0, 1
	}
	tail := (1 - conf) / 2
	// P(B <= m) is non-decreasing in m, so both bounds are binary searches.
	// Lower: largest j in [1, n] with cdf(j-1) <= tail.
	lo, hi := 0, n // invariant: answer in [lo, hi], 0 meaning none
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if BinomialCDF(mid-1, n, q) <= tail {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	j = lo
	// Upper: smallest k in [1, n] with 1-cdf(k-1) <= tail, n+1 meaning none.
	lo, hi = 1, n+1
	for lo < hi {
		mid := (lo + hi) / 2
		if 1-BinomialCDF(mid-1, n, q) <= tail {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	k = lo
	return j, k
}

// BinomialCDF returns P(B <= m) for B ~ Binomial(n, p), through the
// regularized incomplete beta function: P(B <= m) = I_{1-p}(n-m, m+1).
func BinomialCDF(m, n int, p float64) float64 {
	switch {
	case m < 0:
		return 0
	case m >= n:
		return 1
	case p <= 0:
		return 1
	case p >= 1:
		return 0
	}
	return regIncBeta(float64(n-m), float64(m+1), 1-p)
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), evaluated
// with the continued fraction of the incomplete beta integral (modified Lentz
// method), using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) so the fraction is
// always evaluated where it converges quickly.
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

// betaCF evaluates the continued fraction for the incomplete beta function.
// It needs O(sqrt(max(a, b))) terms, so the iteration cap is generous.
func betaCF(a, b, x float64) float64 {
	const (
		eps     = 1e-15
		maxIter = 1 << 20
	)
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, nonZero(1-qab*x/qap)
	d = 1 / d
	h := d
	// lentz applies one term aa of the fraction to the running state.
	lentz := func(aa float64) float64 {
		d = 1 / nonZero(1+aa*d)
		c = nonZero(1 + aa/c)
		return d * c
	}
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		h *= lentz(fm * (b - fm) * x / ((qam + m2) * (a + m2)))
		del := lentz(-(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2)))
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}

// nonZero keeps Lentz's method away from division by zero.
func nonZero(v float64) float64 {
	const tiny = 1e-300
	if math.Abs(v) < tiny {
		return tiny
	}
	return v
}

// Estimate is a percentile with its confidence interval. Lo or Hi is nil when
// there are too few samples to bound the percentile on that side.
type Estimate struct {
	Value float64  `json:"value"`
	Lo    *float64 `json:"lo"`
	Hi    *float64 `json:"hi"`
}

// estimate computes the q-quantile of sorted samples with its conf interval,
// scaling each value by scale (e.g. ns to µs).
func estimate[T int64 | float64](sorted []T, q, conf, scale float64) Estimate {
	n := len(sorted)
	if n == 0 {
		return Estimate{Value: math.NaN()}
	}
	at := func(r int) float64 { return float64(sorted[r-1]) * scale }
	e := Estimate{Value: at(Rank(n, q))}
	j, k := ConfidenceRanks(n, q, conf)
	if j >= 1 {
		v := at(j)
		e.Lo = &v
	}
	if k <= n {
		v := at(k)
		e.Hi = &v
	}
	return e
}
