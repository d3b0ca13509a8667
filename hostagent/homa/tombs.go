package homa

import (
	"cmp"
	"slices"
)

// tombstones are one peer's tombstones: the ids of its requests this host
// ran and forgot, each with the tick it expires at, so that a late
// duplicate of an executed request does not run it again (at-most-once).
// They behave as a map from id to expiry tick.
//
// A client's ids grow, so tombstones mostly come in increasing id order:
// those are appended to run, which stays sorted by id, and expire from
// its front, in sequence. A map, which this was, takes a cache miss an
// insertion once it outgrows the cache, as it does when a host serves a
// peer thousands of requests within the tombstones' 2*TimeoutTicks (5-7%
// of a simulated collective's run). The few that come below the run's
// last id (a request whose first packet came late) go to others.
type tombstones struct {
	// run[head:] are the tombstones added in id order, sorted by id; an
	// entry gone is expired (or was, and came back: revived in place).
	run  []tombEntry
	head int
	// max is the largest id ever added (0: none): an id above it has no
	// tombstone, known without a search.
	max uint64
	// others are the tombstones not in run, by id (nil until the first).
	others map[uint64]uint64
}

// tailInsert is how far from the run's end a tombstone below its last id
// is put in the run, in order, rather than in others: a server forgets
// its RPCs as their clients acknowledge them, which is not always in id
// order (a third of a simulated collective's tombstones came a place or
// two late).
const tailInsert = 8

type tombEntry struct {
	id, exp uint64
	gone    bool
}

// find returns the place of id in run[head:], checking the front first
// (where expiry looks); if id is not there, the place it would go.
func (t *tombstones) find(id uint64) (int, bool) {
	if t.head < len(t.run) && t.run[t.head].id == id {
		return t.head, true
	}
	i, ok := slices.BinarySearchFunc(t.run[t.head:], id, func(e tombEntry, id uint64) int { return cmp.Compare(e.id, id) })
	return t.head + i, ok
}

// get returns id's expiry tick, if it has a tombstone.
func (t *tombstones) get(id uint64) (uint64, bool) {
	if id > t.max {
		return 0, false
	}
	if i, ok := t.find(id); ok {
		return t.run[i].exp, !t.run[i].gone
	}
	exp, ok := t.others[id]
	return exp, ok
}

// set gives id a tombstone expiring at exp, replacing any it has.
func (t *tombstones) set(id, exp uint64) {
	if id > t.max {
		t.run = append(t.run, tombEntry{id: id, exp: exp})
		t.max = id
		return
	}
	i, ok := t.find(id)
	if ok {
		t.run[i] = tombEntry{id: id, exp: exp}
		return
	}
	if len(t.run)-i <= tailInsert {
		t.run = slices.Insert(t.run, i, tombEntry{id: id, exp: exp})
		delete(t.others, id) // it may have been set there before (an id is in one place)
		return
	}
	if t.others == nil {
		t.others = map[uint64]uint64{}
	}
	t.others[id] = exp
}

// expire drops id's tombstone if it expires at exp (a later set may have
// replaced it).
func (t *tombstones) expire(id, exp uint64) {
	if i, ok := t.find(id); ok {
		if e := &t.run[i]; !e.gone && e.exp == exp {
			e.gone = true
			t.trim()
		}
		return
	}
	if e, ok := t.others[id]; ok && e == exp {
		delete(t.others, id)
	}
}

// trim moves head past the gone entries at the front, and moves the run
// to the front of its array once half of it is behind head.
func (t *tombstones) trim() {
	for t.head < len(t.run) && t.run[t.head].gone {
		t.head++
	}
	if t.head > 64 && t.head >= len(t.run)/2 {
		n := copy(t.run, t.run[t.head:])
		t.run, t.head = t.run[:n], 0
	}
}
