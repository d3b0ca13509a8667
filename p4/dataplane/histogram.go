package dataplane

import "math/bits"

// Histogram buckets: values below linearLimit each have their own bucket;
// above it every power of two is split into subBuckets buckets, so a
// percentile is off by at most 1/subBuckets of its value (about 3%).
const (
	linearLimit   = 64
	subBucketBits = 5
	subBuckets    = 1 << subBucketBits
	histBuckets   = linearLimit + (32-6)*subBuckets
)

// histogram is a fixed-bucket histogram of uint32 values (µs of queueing
// delay). Recording is a few integer operations; its buckets (7 kB) are
// allocated by the first value above 0, so the queues a run never uses
// (most of a fat tree's 49,152 ports x 8 queues at k=32) hold none.
type histogram struct {
	counts *[histBuckets]uint64
	total  uint64
	// zeros is bucket 0's count (the value 0), kept here rather than in
	// counts: most packets of a fabric that is not congested wait less
	// than a microsecond, and recording theirs then touches no line of the
	// buckets, which a fabric of thousands of ports does not keep in the
	// cache (a miss a packet and hop: 4% of a 1,024-rank ring's run).
	zeros uint64
	max   uint32
}

func bucketOf(v uint32) int {
	if v < linearLimit {
		return int(v)
	}
	e := bits.Len32(v) - 1 // >= 6
	sub := int(v>>(e-subBucketBits)) & (subBuckets - 1)
	return linearLimit + (e-6)*subBuckets + sub
}

// bucketLow is the smallest value that falls in bucket i.
func bucketLow(i int) uint32 {
	if i < linearLimit {
		return uint32(i)
	}
	e := (i-linearLimit)/subBuckets + 6
	sub := (i - linearLimit) % subBuckets
	return uint32(subBuckets+sub) << (e - subBucketBits)
}

func (h *histogram) record(v uint32) {
	h.total++
	if v == 0 {
		h.zeros++
		return
	}
	if h.counts == nil {
		h.counts = new([histBuckets]uint64)
	}
	h.counts[bucketOf(v)]++
	if v > h.max {
		h.max = v
	}
}

// percentile returns the lower bound of the bucket holding the q-quantile
// (0 < q <= 1), capped at the maximum seen; 0 when empty.
func (h *histogram) percentile(q float64) uint32 {
	if h.total == 0 {
		return 0
	}
	rank := uint64(q * float64(h.total))
	if rank < 1 {
		rank = 1
	}
	seen := h.zeros
	if seen >= rank || h.counts == nil {
		return min(bucketLow(0), h.max)
	}
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketLow(i), h.max)
		}
	}
	return h.max
}
