// Package workloads describes what an experiment offers the network:
// message-size distributions (built-in W1–W5, CDF files, parametric shapes,
// mixtures, truncation), arrival processes (open-loop Poisson, closed loop,
// synchronised bursts) and traffic patterns (incast, many-to-one, all-to-all,
// permutation, probes).
//
// Every size distribution knows its exact mean, because the offered load of
// an open-loop client is computed from it.
package workloads

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// SizeDist is a distribution of message lengths in bytes.
type SizeDist interface {
	// Sample draws one length (at least 1 byte).
	Sample(r *rand.Rand) int
	// Mean is the exact expected value of Sample.
	Mean() float64
	// Min and Max bound every sample.
	Min() int
	Max() int
	// CDF is P(length <= x).
	CDF(x int) float64
	// String is the spec the distribution was parsed from.
	String() string
}

// segKind is the shape of one piece of a piecewise distribution.
type segKind uint8

const (
	// segPoint puts all of the piece's mass on hi.
	segPoint segKind = iota
	// segUniform is uniform over the integers lo..hi.
	segUniform
	// segLogFloor is floor(X) for X log-uniform on [lo, hi): values lo..hi-1.
	segLogFloor
)

// segment is one piece of a piecewise distribution with probability p.
type segment struct {
	kind   segKind
	lo, hi int
	p      float64
}

func (s segment) min() int {
	if s.kind == segPoint {
		return s.hi
	}
	return s.lo
}

func (s segment) max() int {
	if s.kind == segLogFloor {
		return s.hi - 1
	}
	return s.hi
}

// mean is the exact expected value of the segment's samples. For the
// log-uniform shapes, E[floor X] = lo + sum_{k=lo+1}^{hi-1} P(X >= k), and the
// sum of logarithms is a difference of log-gamma values, so no loop over the
// integers is needed.
func (s segment) mean() float64 {
	switch s.kind {
	case segPoint:
		return float64(s.hi)
	case segUniform:
		return (float64(s.lo) + float64(s.hi)) / 2
	}
	a, b := float64(s.lo), float64(s.hi)
	if s.hi-s.lo <= 1 {
		return a
	}
	lgB, _ := math.Lgamma(b)
	lgA1, _ := math.Lgamma(a + 1)
	return a + ((b-a-1)*math.Log(b)-(lgB-lgA1))/math.Log(b/a)
}

// cdf is P(sample <= x) within the segment.
func (s segment) cdf(x int) float64 {
	if x < s.min() {
		return 0
	}
	if x >= s.max() {
		return 1
	}
	switch s.kind {
	case segUniform:
		return float64(x-s.lo+1) / float64(s.hi-s.lo+1)
	case segLogFloor:
		return math.Log(float64(x+1)/float64(s.lo)) / math.Log(float64(s.hi)/float64(s.lo))
	}
	return 1
}

// sample draws from the segment given u uniform in [0, 1).
func (s segment) sample(u float64, r *rand.Rand) int {
	switch s.kind {
	case segPoint:
		return s.hi
	case segUniform:
		return s.lo + r.IntN(s.hi-s.lo+1)
	}
	a, b := float64(s.lo), float64(s.hi)
	x := a * math.Exp(u*math.Log(b/a))
	return min(max(int(math.Floor(x)), s.lo), s.hi-1)
}

// truncate caps the segment at m: mass above m moves to a point at m.
func (s segment) truncate(m int) []segment {
	if s.max() <= m {
		return []segment{s}
	}
	if s.min() >= m {
		return []segment{{kind: segPoint, hi: m, p: s.p}}
	}
	keep := s.cdf(m)
	if s.kind == segLogFloor {
		// Values below m come from X in [lo, m); m itself and above become m.
		keep = s.cdf(m - 1)
	}
	low := s
	low.p = s.p * keep
	switch s.kind {
	case segUniform:
		low.hi = m - 1
	case segLogFloor:
		low.hi = m
	}
	return []segment{low, {kind: segPoint, hi: m, p: s.p * (1 - keep)}}
}

// piecewise is the one implementation of SizeDist: a mixture of segments.
type piecewise struct {
	spec string
	segs []segment
	cum  []float64 // cumulative probability after each segment
	mean float64
}

var _ SizeDist = (*piecewise)(nil)

// newPiecewise normalises the segments' probabilities to sum to one and
// drops empty ones.
func newPiecewise(spec string, segs []segment) (*piecewise, error) {
	var total float64
	kept := segs[:0:0]
	for _, s := range segs {
		if s.p > 0 {
			kept = append(kept, s)
			total += s.p
		}
	}
	if len(kept) == 0 || total <= 0 {
		return nil, fmt.Errorf("size spec %q: distribution has no mass", spec)
	}
	d := &piecewise{spec: spec, segs: kept, cum: make([]float64, len(kept))}
	var c float64
	for i := range d.segs {
		d.segs[i].p /= total
		c += d.segs[i].p
		d.cum[i] = c
		d.mean += d.segs[i].p * d.segs[i].mean()
	}
	d.cum[len(d.cum)-1] = 1
	return d, nil
}

// Sample draws u uniform in [0, 1) and takes the first segment whose
// cumulative probability is at least u: for a table of points, the first
// length whose CDF >= u, the rule of the Homa tools (cp_node's
// dist_point_gen).
func (d *piecewise) Sample(r *rand.Rand) int {
	u := r.Float64()
	i := min(sort.SearchFloat64s(d.cum, u), len(d.segs)-1)
	lo := 0.0
	if i > 0 {
		lo = d.cum[i-1]
	}
	// Reuse u inside the segment so one draw picks both the piece and the value.
	within := (u - lo) / d.segs[i].p
	return d.segs[i].sample(min(max(within, 0), math.Nextafter(1, 0)), r)
}

func (d *piecewise) Mean() float64  { return d.mean }
func (d *piecewise) String() string { return d.spec }

func (d *piecewise) Min() int {
	m := math.MaxInt
	for _, s := range d.segs {
		m = min(m, s.min())
	}
	return m
}

func (d *piecewise) Max() int {
	m := 0
	for _, s := range d.segs {
		m = max(m, s.max())
	}
	return m
}

func (d *piecewise) CDF(x int) float64 {
	var c float64
	for _, s := range d.segs {
		c += s.p * s.cdf(x)
	}
	return min(c, 1)
}

// truncated returns the distribution capped at m bytes.
func (d *piecewise) truncated(spec string, m int) (*piecewise, error) {
	var segs []segment
	for _, s := range d.segs {
		segs = append(segs, s.truncate(m)...)
	}
	return newPiecewise(spec, segs)
}

// MeanPackets is the mean number of packets of payload bytes each that a
// message drawn from d takes (an empty message would take one):
// E[ceil(X/payload)], the sum over k of P(X > k*payload).
func MeanPackets(d SizeDist, payload int) float64 {
	if payload <= 0 {
		return 0
	}
	n := 1.0 // every message is at least one packet
	for k := payload; k < d.Max(); k += payload {
		n += 1 - d.CDF(k)
	}
	return n
}
