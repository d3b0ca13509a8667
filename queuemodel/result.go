package queuemodel

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/homatb/homatb/workloads"
)

// Result is the measured messages of one run.
type Result struct {
	Policy Policy
	// Cuts are the size cuts between priority levels (nil for one queue).
	Cuts []float64
	// Sizes and Slowdowns are the measured messages in arrival order.
	Sizes     []float64
	Slowdowns []float64

	bySize []int // indices ordered by size, then arrival; built on demand
}

// MeanSlowdown is the mean slowdown of every measured message.
func (r *Result) MeanSlowdown() float64 {
	s := 0.0
	for _, v := range r.Slowdowns {
		s += v
	}
	return s / float64(len(r.Slowdowns))
}

// Quantile is the q quantile (0 < q <= 1, nearest rank) of the slowdowns
// of the messages whose rank by size, as a fraction of all measured
// messages, is in [lo, hi): Quantile(0.99, 0, 0.5) is the P99 slowdown of
// the shortest half, Quantile(0.99, 0.9, 1) that of the largest decile.
// Messages of equal size are ranked by arrival.
func (r *Result) Quantile(q, lo, hi float64) (float64, error) {
	if !(q > 0 && q <= 1) || !(lo >= 0 && lo < hi && hi <= 1) {
		return 0, fmt.Errorf("quantile %g of sizes [%g, %g): expected 0 < q <= 1 and 0 <= lo < hi <= 1", q, lo, hi)
	}
	if r.bySize == nil {
		r.bySize = make([]int, len(r.Sizes))
		for i := range r.bySize {
			r.bySize[i] = i
		}
		slices.SortStableFunc(r.bySize, func(a, b int) int { return cmp.Compare(r.Sizes[a], r.Sizes[b]) })
	}
	n := len(r.bySize)
	from, to := int(math.Round(lo*float64(n))), int(math.Round(hi*float64(n)))
	if to <= from {
		return 0, fmt.Errorf("quantile of sizes [%g, %g): no messages among %d", lo, hi, n)
	}
	v := make([]float64, 0, to-from)
	for _, i := range r.bySize[from:to] {
		v = append(v, r.Slowdowns[i])
	}
	slices.Sort(v)
	k := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(k, 0)], nil
}

// ByteShare is the fraction of messages at or below x bytes and the
// fraction of the bytes they carry, exactly, from the distribution.
func ByteShare(d workloads.SizeDist, x int) (msgs, bytes float64) {
	partial := 0.0
	prev := d.CDF(d.Min() - 1)
	for y := d.Min(); y <= min(x, d.Max()); y++ {
		c := d.CDF(y)
		partial += float64(y) * (c - prev)
		prev = c
	}
	return d.CDF(x), partial / d.Mean()
}
