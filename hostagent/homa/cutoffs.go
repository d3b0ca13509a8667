package homa

import (
	"math"
	"slices"

	"github.com/homatb/homatb/hostagent/homa/wire"
)

// cutoffTable is one version of a receiver's unscheduled cutoffs.
// cut[i] is the largest message length that may use priority i for
// unscheduled bytes; levels below the lowest unscheduled one are scheduled.
type cutoffTable struct {
	cut     [wire.MaxPriorities]uint32
	version uint16
}

// defaultCutoffs puts all unscheduled bytes on the top level and leaves the
// rest for scheduled bytes, until traffic has been observed.
func defaultCutoffs(prios int, maxMsg uint32) [wire.MaxPriorities]uint32 {
	var c [wire.MaxPriorities]uint32
	c[prios-1] = maxMsg
	return c
}

// unschedPriority picks the priority of unscheduled bytes of a message of
// length n: the highest level whose cutoff admits it (homa_unsched_priority).
// With no cutoff admitting n it uses the top level.
func unschedPriority(c *[wire.MaxPriorities]uint32, prios int, n uint32) uint8 {
	for i := prios - 1; i >= 0; i-- {
		if c[i] >= n {
			return uint8(i)
		}
	}
	return uint8(prios - 1)
}

// maxSchedPriority returns the highest scheduled level implied by c: one
// below the lowest level whose cutoff marks "every length" (>= maxMsg).
// With one priority everything shares level 0.
func maxSchedPriority(c *[wire.MaxPriorities]uint32, prios int, maxMsg uint32) int {
	for i := 0; i < prios; i++ {
		if c[i] >= maxMsg {
			return max(0, i-1)
		}
	}
	return max(0, prios-2)
}

// computeCutoffs derives cutoffs from observed inbound message lengths the
// way homa_prio does: the unscheduled share of all bytes decides how many
// levels carry unscheduled bytes (at least one, and one level is kept for
// scheduled bytes), and the boundaries split the unscheduled bytes evenly
// among those levels, shortest messages on the highest level. sizes is
// sorted in place.
func computeCutoffs(sizes []uint32, unsched uint32, prios int, maxMsg uint32) [wire.MaxPriorities]uint32 {
	if prios == 1 || len(sizes) == 0 {
		return defaultCutoffs(prios, maxMsg)
	}
	slices.Sort(sizes)
	var total, unschedTotal float64
	for _, s := range sizes {
		total += float64(s)
		unschedTotal += float64(min(s, unsched))
	}
	levels := int(math.Round(float64(prios) * unschedTotal / total))
	levels = max(1, min(levels, prios-1))
	var c [wire.MaxPriorities]uint32
	lowest := prios - levels
	c[lowest] = maxMsg
	// Walk sizes in order; each time the running unscheduled bytes pass the
	// next k/levels share, the current length closes level prios-k.
	level := prios - 1
	var run float64
	for _, s := range sizes {
		if level <= lowest {
			break
		}
		run += float64(min(s, unsched))
		share := unschedTotal * float64(prios-level) / float64(levels)
		if run >= share {
			c[level] = s
			level--
		}
	}
	for ; level > lowest; level-- { // too few distinct sizes: reuse the largest
		if level == prios-1 {
			c[level] = sizes[len(sizes)-1]
		} else {
			c[level] = c[level+1]
		}
	}
	return c
}
