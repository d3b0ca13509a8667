package homa

import (
	"math"
	"slices"

	"github.com/homatb/homatb/wire"
)

// cutoffTable is one version of a receiver's unscheduled cutoffs, in
// Linux's order: cut[i] is the largest message length that may use
// priority i for unscheduled bytes (so entries do not grow with i); the
// level whose entry admits every length is the lowest unscheduled one,
// and the levels below it carry scheduled bytes. cut[0] admits every
// length (anyLength), as homa_prios_changed forces, so a length no other
// entry admits goes at level 0.
type cutoffTable struct {
	cut     [wire.MaxPriorities]uint32
	version uint16
}

// anyLength is Linux's INT_MAX in cut[0]: it admits every length and
// reads the same to a Linux peer, which takes the entry as a signed int.
const anyLength = math.MaxInt32

// linuxCutoffs normalizes c as homa_prios_changed and homa_cutoffs_pkt
// do: entry 0 admits every length, entries at or above prios are unused.
func linuxCutoffs(c *[wire.MaxPriorities]uint32, prios int) {
	c[0] = anyLength
	for i := prios; i < len(c); i++ {
		c[i] = 0
	}
}

// defaultCutoffs puts all unscheduled bytes on the top level and leaves the
// rest for scheduled bytes, until traffic has been observed.
func defaultCutoffs(prios int, maxMsg uint32) [wire.MaxPriorities]uint32 {
	var c [wire.MaxPriorities]uint32
	c[prios-1] = maxMsg
	linuxCutoffs(&c, prios)
	return c
}

// unschedPriority picks the priority of unscheduled bytes of a message of
// length n: the highest level whose cutoff admits it
// (homa_unsched_priority); level 0 when none does.
func unschedPriority(c *[wire.MaxPriorities]uint32, prios int, n uint32) uint8 {
	for i := prios - 1; i > 0; i-- {
		if c[i] >= n {
			return uint8(i)
		}
	}
	return 0
}

// maxSchedPriority returns the highest scheduled level implied by c: one
// below the highest level whose cutoff admits every length (>= maxMsg),
// scanning from the top as homa_prios_changed does. With one priority
// everything shares level 0.
func maxSchedPriority(c *[wire.MaxPriorities]uint32, prios int, maxMsg uint32) int {
	for i := prios - 1; i > 0; i-- {
		if c[i] >= maxMsg {
			return i - 1
		}
	}
	return 0
}

// CutoffsFor is what computeCutoffs makes of sizes (sorted in place), in
// Linux's order as homaconf's UnschedCutoffs takes them: the cutoffs a
// receiver would settle on after receiving messages of those lengths,
// for a run that fixes them before the start instead (the Homa paper's
// simulator computed them from the workload's distribution). levels, when
// above 0, is how many levels carry unscheduled bytes instead of the
// share of them that computeCutoffs derives (the Homa paper's runs set it
// per workload).
func CutoffsFor(sizes []uint32, unsched uint32, prios int, maxMsg uint32, levels int) []uint32 {
	c := computeCutoffs(sizes, unsched, prios, maxMsg, levels)
	// The scheduled levels' entries are 0 here; as a configured table
	// they take the lowest unscheduled level's (Linux's sysctl form,
	// entries that never grow with the level), which picks the same
	// levels (unschedPriority, maxSchedPriority).
	for i := prios - 2; i > 0; i-- {
		c[i] = max(c[i], c[i+1])
	}
	return append([]uint32(nil), c[:prios]...)
}

// computeCutoffs derives cutoffs from observed inbound message lengths the
// way homa_prio does: the unscheduled share of all bytes decides how many
// levels carry unscheduled bytes (at least one, and one level is kept for
// scheduled bytes) unless levels (above 0) says, and the boundaries split
// the unscheduled bytes evenly among those levels, shortest messages on
// the highest level. sizes is sorted in place.
func computeCutoffs(sizes []uint32, unsched uint32, prios int, maxMsg uint32, levels int) [wire.MaxPriorities]uint32 {
	if prios == 1 || len(sizes) == 0 {
		return defaultCutoffs(prios, maxMsg)
	}
	slices.Sort(sizes)
	var total, unschedTotal float64
	for _, s := range sizes {
		total += float64(s)
		unschedTotal += float64(min(s, unsched))
	}
	if levels <= 0 {
		levels = int(math.Round(float64(prios) * unschedTotal / total))
	}
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
	linuxCutoffs(&c, prios)
	return c
}
