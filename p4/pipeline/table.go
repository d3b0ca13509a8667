package pipeline

import (
	"fmt"
	"math/bits"
	"slices"
)

// MaxKeyFields is the largest number of match fields a table key may have.
const MaxKeyFields = 4

// MaxParams is the largest number of parameters an action may take.
const MaxParams = 4

// Key is the value of every match field of a table key, in P4Info field
// order (field id 1 first). Fields are at most 64 bits wide.
type Key [MaxKeyFields]uint64

// FieldMatch is one field of an entry: the packet matches when
// key & Mask == Value. Exact fields have every bit of the field in Mask, LPM
// fields the prefix, ternary fields any mask; Mask 0 means don't care.
type FieldMatch struct {
	Value, Mask uint64
}

// ActionCall is an action id with its parameters in P4Info order.
type ActionCall struct {
	ID     uint32
	Params [MaxParams]uint64
}

// Entry is one table entry in the pipeline's form. Priority orders
// overlapping entries, higher first; for a table whose only non-exact field
// is LPM the caller sets it to the prefix length, so longest prefix wins.
type Entry struct {
	Match    [MaxKeyFields]FieldMatch
	Priority int32
	Action   ActionCall
}

// slot is the best entry for one masked key within a group.
type slot struct {
	priority int32
	// present says a direct array's slot holds an entry (it takes the
	// padding before action: no byte more).
	present bool
	action  ActionCall
}

// group holds the entries sharing one mask tuple (tuple space search): a
// lookup masks the key once and probes one map per group. Groups that mask
// only the first field (every tor.p4 table) are re-indexed by that field
// alone: a direct array when the values lie close together (DSCP, ports,
// and the addresses of a fabric's hosts and leaves, which are numbered in
// order), else a map with a one-word key, which hashes far faster than the
// full Key.
type group struct {
	// What a lookup of a direct group reads comes first, within one
	// cache line of the group's start: a fabric's thousands of switches
	// keep few of their tables in the cache.

	// direct holds a single group's slots by (value - lo) >> shift, where
	// shift is the mask's trailing zeros (every masked value is a multiple
	// of 1<<shift, so the index is one to one).
	direct      []slot
	lo          uint64
	maxPriority int32
	shift       uint8
	single      bool // only field 0 is masked
	// pair: only fields 0 and 1 are masked, every entry's field 0 is
	// below 1<<pairShift and field 1 below 1<<(64-pairShift): byWord is
	// keyed by both in one word (an ingress port and an address or a
	// queue, as tor.p4's defences key them).
	pair    bool
	mask    Key
	byWord  map[uint64]slot
	entries map[Key]slot
}

// pairShift is how many low bits of a pair group's word field 0 takes.
const pairShift = 16

// pairWord packs fields 0 and 1 of k into one word; ok is false when they
// do not fit.
func pairWord(k *Key) (w uint64, ok bool) {
	if k[0] >= 1<<pairShift || k[1] >= 1<<(64-pairShift) {
		return 0, false
	}
	return k[0] | k[1]<<pairShift, true
}

// A single-field group is indexed directly when its values span at most
// denseDirect slots, or at most maxDirect slots and sparseDirect per
// entry: a /32 route per host of a leaf-spine of 144 hosts spans about
// 2,300 slots, the /24 of every leaf of a k=32 fat tree 512, while a /32
// per host of a fat tree of 1,024 hosts (32,768 slots) keeps its map.
const (
	denseDirect  = 1024
	maxDirect    = 4096
	sparseDirect = 16
)

// Table is an immutable, lookup-ready table: built once per change by the
// control plane and read concurrently by every port without locks.
type Table struct {
	groups []group
	def    ActionCall
}

// NewTable builds a table from its entries and default action. Entries with
// the same match and a lower priority are shadowed and never hit.
func NewTable(entries []Entry, def ActionCall) *Table {
	t := &Table{def: def}
	byMask := map[Key]int{}
	for _, e := range entries {
		var mask, value Key
		for i, f := range e.Match {
			mask[i] = f.Mask
			value[i] = f.Value & f.Mask
		}
		gi, ok := byMask[mask]
		if !ok {
			gi = len(t.groups)
			byMask[mask] = gi
			t.groups = append(t.groups, group{mask: mask, maxPriority: e.Priority, entries: map[Key]slot{}})
		}
		g := &t.groups[gi]
		if old, dup := g.entries[value]; dup && old.priority >= e.Priority {
			continue
		}
		g.entries[value] = slot{priority: e.Priority, action: e.Action}
		g.maxPriority = max(g.maxPriority, e.Priority)
	}
	for i := range t.groups {
		t.groups[i].index()
	}
	// Highest-priority groups first, so a lookup can stop at the first group
	// that cannot beat the best hit so far.
	slices.SortStableFunc(t.groups, func(a, b group) int {
		switch {
		case a.maxPriority > b.maxPriority:
			return -1
		case a.maxPriority < b.maxPriority:
			return 1
		}
		return 0
	})
	return t
}

// index builds the single-field or pair forms of g.
func (g *group) index() {
	if g.mask[2] == 0 && g.mask[3] == 0 && g.mask[1] != 0 {
		byWord := make(map[uint64]slot, len(g.entries))
		for k, s := range g.entries {
			w, ok := pairWord(&k)
			if !ok {
				return // keep the generic probe
			}
			byWord[w] = s
		}
		g.pair, g.byWord = true, byWord
		return
	}
	for _, m := range g.mask[1:] {
		if m != 0 {
			return
		}
	}
	g.single = true
	lo, hi := ^uint64(0), uint64(0)
	for k := range g.entries {
		lo, hi = min(lo, k[0]), max(hi, k[0])
	}
	shift := uint8(bits.TrailingZeros64(g.mask[0]))
	if span := (hi-lo)>>shift + 1; len(g.entries) > 0 && (span <= denseDirect ||
		span <= maxDirect && span <= sparseDirect*uint64(len(g.entries))) {
		g.lo, g.shift = lo, shift
		g.direct = make([]slot, span)
		for k, s := range g.entries {
			s.present = true
			g.direct[(k[0]-lo)>>shift] = s
		}
		return
	}
	g.byWord = make(map[uint64]slot, len(g.entries))
	for k, s := range g.entries {
		g.byWord[k[0]] = s
	}
}

// Lookup returns the action of the highest-priority entry matching key, or
// the default action with hit false.
func (t *Table) Lookup(key *Key) (ActionCall, bool) {
	var (
		best     slot
		found    bool
		probeKey Key
	)
	for i := range t.groups {
		g := &t.groups[i]
		if found && g.maxPriority <= best.priority {
			break
		}
		var (
			s  slot
			ok bool
		)
		switch {
		case g.direct != nil:
			if v := key[0] & g.mask[0]; v >= g.lo {
				if i := (v - g.lo) >> g.shift; i < uint64(len(g.direct)) && g.direct[i].present {
					s, ok = g.direct[i], true
				}
			}
		case g.single:
			s, ok = g.byWord[key[0]&g.mask[0]]
		case g.pair:
			probeKey[0], probeKey[1] = key[0]&g.mask[0], key[1]&g.mask[1]
			if w, fits := pairWord(&probeKey); fits {
				s, ok = g.byWord[w]
			}
		default:
			for f := range probeKey {
				probeKey[f] = key[f] & g.mask[f]
			}
			s, ok = g.entries[probeKey]
		}
		if ok && (!found || s.priority > best.priority) {
			best, found = s, true
		}
	}
	if !found {
		return t.def, false
	}
	return best.action, true
}

// PrefixMask is the mask of an LPM prefix of length prefixLen on a field of
// width bits.
func PrefixMask(width, prefixLen int) (uint64, error) {
	if width < 1 || width > 64 || prefixLen < 0 || prefixLen > width {
		return 0, fmt.Errorf("prefix length %d on a %d-bit field", prefixLen, width)
	}
	if prefixLen == 0 {
		return 0, nil
	}
	return FieldMask(width) &^ (FieldMask(width - prefixLen)), nil
}

// FieldMask is the all-ones mask of a field of width bits (1..64).
func FieldMask(width int) uint64 {
	if width >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(width) - 1
}
