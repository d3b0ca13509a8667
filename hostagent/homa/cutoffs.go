package homa

import (
	"math"
	"slices"

	"github.com/homatb/homatb/hostagent/homa/homaconf"

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

// cutoffRule is how a receiver turns message lengths into cutoffs.
type cutoffRule struct {
	unsched, maxMsg uint32
	prios           int
	// levels, when above 0, is how many levels carry unscheduled bytes
	// instead of the share of them Linux's rule derives (the Homa paper's
	// runs set it per workload).
	levels int
	// graduated weighs each packet of a message's first unsched bytes,
	// and of its last boost bytes, at the bytes the message has left
	// before it (STATIC_CBF_GRADUATED's remaining-size distribution);
	// otherwise a message's unscheduled bytes weigh at its length, as
	// homa_prio does. pkt is the DATA payload of a packet.
	graduated  bool
	pkt, boost uint32
}

// ruleOf is the rule of full (a configuration with its defaults), over
// levels unscheduled levels when above 0.
func ruleOf(full homaconf.Config, levels int) cutoffRule {
	r := cutoffRule{unsched: full.UnschedBytes, maxMsg: full.MaxMessageBytes, prios: full.Priorities, levels: levels,
		graduated: full.Graduated, pkt: full.PayloadPerPacket()}
	if full.Graduated {
		r.boost = boostTail(full)
	}
	return r
}

// CutoffsFor is what a receiver's rule (cutoffRule.compute) makes of sizes (sorted in place)
// under configuration full (its defaults applied), in Linux's order as
// homaconf's UnschedCutoffs takes them: the cutoffs a receiver would
// settle on after receiving messages of those lengths, for a run that
// fixes them before the start instead (the Homa paper's simulator
// computed them from the workload's distribution), over levels
// unscheduled levels when above 0.
func CutoffsFor(sizes []uint32, full homaconf.Config, levels int) []uint32 {
	r := ruleOf(full, levels)
	c := r.compute(sizes, nil)
	// The scheduled levels' entries are 0 here; as a configured table
	// they take the lowest unscheduled level's (Linux's sysctl form,
	// entries that never grow with the level), which picks the same
	// levels (unschedPriority, maxSchedPriority).
	for i := r.prios - 2; i > 0; i-- {
		c[i] = max(c[i], c[i+1])
	}
	return append([]uint32(nil), c[:r.prios]...)
}

// weighed is a length (a message's, or a graduated packet's bytes left)
// in its high half and the unscheduled bytes that travel at its level in
// its low half: sorting the words sorts by length, several times faster
// than sorting pairs with a comparison function (a graduated rule weighs
// each packet: tens of millions for a workload's 200,000 lengths).
type weighed uint64

func weigh(key, bytes uint32) weighed { return weighed(uint64(key)<<32 | uint64(bytes)) }

func (w weighed) key() uint32 { return uint32(w >> 32) }

func (w weighed) bytes() float64 { return float64(uint32(w)) }

// weights appends to out what each of sizes puts on the unscheduled
// levels under r.
func (r cutoffRule) weights(sizes []uint32, out []weighed) []weighed {
	for _, s := range sizes {
		if !r.graduated {
			out = append(out, weigh(s, min(s, r.unsched)))
			continue
		}
		for off := uint32(0); off < s; {
			left := s - off
			if off >= r.unsched && left >= r.boost {
				// A scheduled packet: skip to the boosted tail.
				off += ((left-r.boost)/r.pkt + 1) * r.pkt
				continue
			}
			out = append(out, weigh(left, min(r.pkt, left)))
			off += r.pkt
		}
	}
	return out
}

// compute derives cutoffs from observed inbound message lengths the way
// homa_prio does: the unscheduled share of all bytes decides how many
// levels carry unscheduled bytes (at least one, and one level is kept for
// scheduled bytes) unless r.levels says, and the boundaries split the
// bytes those levels carry evenly among them, shortest messages (or
// fewest bytes left, r.graduated) on the highest level. sizes is sorted
// in place; *scratch (if scratch is not nil) is reused for the weights.
func (r cutoffRule) compute(sizes []uint32, scratch *[]weighed) [wire.MaxPriorities]uint32 {
	prios := r.prios
	if prios == 1 || len(sizes) == 0 {
		return defaultCutoffs(prios, r.maxMsg)
	}
	slices.Sort(sizes)
	var total, unschedTotal float64
	for _, s := range sizes {
		total += float64(s)
		unschedTotal += float64(min(s, r.unsched))
	}
	levels := r.levels
	if levels <= 0 {
		levels = int(math.Round(float64(prios) * unschedTotal / total))
	}
	levels = max(1, min(levels, prios-1))
	var ws []weighed
	if scratch != nil {
		ws = r.weights(sizes, (*scratch)[:0])
		*scratch = ws
	} else {
		ws = r.weights(sizes, nil)
	}
	if r.graduated {
		// Equal lengths may come in any order: the sums are of whole
		// bytes (exact in a float64), and a level closes at a length.
		slices.Sort(ws)
	}
	var sum float64
	for _, w := range ws {
		sum += w.bytes()
	}
	var c [wire.MaxPriorities]uint32
	lowest := prios - levels
	c[lowest] = r.maxMsg
	// Walk the weights in order of length; each time the running bytes
	// pass the next k/levels share, the current length closes level
	// prios-k.
	level := prios - 1
	var run float64
	for _, w := range ws {
		if level <= lowest {
			break
		}
		run += w.bytes()
		if run >= sum*float64(prios-level)/float64(levels) {
			c[level] = w.key()
			level--
		}
	}
	for ; level > lowest; level-- { // too few distinct lengths: reuse the largest
		if level == prios-1 {
			c[level] = ws[len(ws)-1].key()
		} else {
			c[level] = c[level+1]
		}
	}
	linuxCutoffs(&c, prios)
	return c
}
