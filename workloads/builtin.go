package workloads

import "fmt"

// HomaMaxMessage is the longest message the Homa implementations carry;
// the built-in workloads are truncated there, as the published means are.
const HomaMaxMessage = 1_000_000

// numPublished is the number of published CDF points per workload.
const numPublished = 9

// publishedLengths are the lengths at which the W1–W5 CDFs were published.
func publishedLengths() [numPublished]int {
	return [...]int{100, 300, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000}
}

// builtin holds the published points of one workload: P(length <= x) at
// publishedLengths, the minimum length and the published mean truncated at 1 MB.
type builtin struct {
	name          string
	cdf           [numPublished]float64
	minLen        int
	publishedMean float64
}

// builtins returns the published W1–W5 points (Homa SIGCOMM 2018 workloads).
// It is a function, not a package variable, so nothing can mutate it.
func builtins() []builtin {
	return []builtin{
		{"w1", [...]float64{.636, .821, .965, .997, 1, 1, 1, 1, 1}, 8, 189},
		{"w2", [...]float64{.337, .553, .953, .990, .999, .999, 1, 1, 1}, 8, 433},
		{"w3", [...]float64{.286, .576, .858, .925, .971, .990, .996, .999, 1}, 8, 2_423},
		{"w4", [...]float64{.008, .052, .604, .681, .710, .720, .887, .954, .972}, 53, 60_200},
		{"w5", [...]float64{0, 0, 0, .050, .150, .307, .543, .613, .700}, 1_430, 385_000},
	}
}

// PublishedMean returns the published mean (truncated at 1 MB) of a built-in
// workload "w1".."w5", for comparison with the approximation's exact Mean.
func PublishedMean(name string) (float64, bool) {
	for _, b := range builtins() {
		if b.name == name {
			return b.publishedMean, true
		}
	}
	return 0, false
}

// builtinDist approximates a workload from its published points: between
// consecutive points the length has density proportional to x^-alpha (so
// the CDF passes through every published point), starting at the minimum
// length; the mass above 1 MB sits at 1 MB (Homa's truncation). One alpha
// per workload is fitted so the exact mean equals the published mean:
// log-uniform interpolation (alpha = 1) overestimates W1 by 14% and W2 by
// 7%, whose mass sits at the short end of their first interval.
func builtinDist(name string) (*piecewise, error) {
	for _, b := range builtins() {
		if b.name != name {
			continue
		}
		build := func(alpha float64) (*piecewise, error) {
			var segs []segment
			// lo is exclusive in segPowCeil, so start one below the minimum.
			lo, prev := b.minLen-1, 0.0
			for i, x := range publishedLengths() {
				if x <= b.minLen {
					continue
				}
				segs = append(segs, segment{kind: segPowCeil, lo: lo, hi: x, p: b.cdf[i] - prev, alpha: alpha})
				lo, prev = x, b.cdf[i]
			}
			segs = append(segs, segment{kind: segPoint, hi: HomaMaxMessage, p: 1 - prev})
			return newPiecewise(name, segs)
		}
		alpha, err := fitAlpha(b.publishedMean, build)
		if err != nil {
			return nil, fmt.Errorf("built-in workload %s: %w", name, err)
		}
		return build(alpha)
	}
	return nil, fmt.Errorf("unknown built-in workload %q (expected w1..w5)", name)
}

// fitAlpha finds by bisection the density exponent whose distribution has
// the wanted mean. The mean falls as alpha rises (each segment's mass moves
// towards its short end), so the root is unique when it is bracketed.
func fitAlpha(want float64, build func(alpha float64) (*piecewise, error)) (float64, error) {
	lo, hi := -2.0, 4.0
	mean := func(a float64) (float64, error) {
		d, err := build(a)
		if err != nil {
			return 0, err
		}
		return d.Mean(), nil
	}
	mLo, err := mean(lo)
	if err != nil {
		return 0, err
	}
	mHi, err := mean(hi)
	if err != nil {
		return 0, err
	}
	if want > mLo || want < mHi {
		return 0, fmt.Errorf("published mean %.0f outside what interpolation can reach [%.0f, %.0f]", want, mHi, mLo)
	}
	for range 60 {
		mid := (lo + hi) / 2
		m, err := mean(mid)
		if err != nil {
			return 0, err
		}
		if m > want {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, nil
}
