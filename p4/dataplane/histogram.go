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
// allocated by the first value, so the queues a run never uses (most of a
// fat tree's 49,152 ports x 8 queues at k=32) hold none.
type histogram struct {
	counts *[histBuckets]uint64
	total  uint64
	max    uint32
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
	if h.counts == nil {
		h.counts = new([histBuckets]uint64)
	}
	h.counts[bucketOf(v)]++
	h.total++
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
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketLow(i), h.max)
		}
	}
	return h.max
}
