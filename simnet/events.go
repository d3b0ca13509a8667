// Package simnet is a discrete-event network in virtual time: hosts whose
// Homa endpoints are the engine's own (homa.Driven: the same handlers,
// scheduler, pacer and policies an emulated host runs), links with a rate
// and a propagation delay, and switches that are tor.p4's pipeline
// (p4/pipeline, programmed with the controller's table entries) in front
// of the switch's own traffic manager and shaper (p4/dataplane.PortModel).
// Frames carry real headers in homatb's wire format and have their real
// length; with Config.HeadBytes the payload past a message's first bytes
// is neither written nor read. Nothing in it reads the wall clock or
// starts a goroutine, so a run repeats exactly.
package simnet

import (
	"math/bits"
	"sync/atomic"
)

// event is what happens at a scheduled time: fn, or frameFn with frame,
// or timeFn with the event's time. The three forms let the hot paths
// schedule with functions made once, not a closure per event.
type event struct {
	fn      func()
	frameFn func([]byte)
	frame   []byte
	timeFn  func(int64)
}

// entry is a scheduled event in the queue: its time, and key, which holds
// the order it was scheduled in (its sequence number, in the bits above
// slotBits) and the slot of Clock.slots holding its event (the low
// slotBits). Events of the same time run in the order they were
// scheduled, so a run repeats exactly. The queue moves these 16 bytes, not
// the 48 of the event.
type entry struct {
	at  int64
	key uint64
}

// slotBits is the width of an entry's slot: up to 16 million events may
// be pending, and a clock may schedule 2^40 (a million million) events.
const slotBits = 24

// Clock is a simulation's event queue and virtual time, in nanoseconds
// from the simulation's start. The queue is a 4-ary heap of entries by
// value, and the events sit in slots reused as they run, so scheduling
// allocates nothing once both have grown.
type Clock struct {
	now int64
	seq uint64
	q   []entry
	// slots hold the pending events; free are the slots not holding one,
	// the last freed last (the likeliest in the cache).
	slots  []event
	free   []uint32
	events uint64
	// stop is set by Stop, from any goroutine.
	stop atomic.Bool
	// seenNow and seenEvents are now and events as of Run's last look at
	// stop, for Progress from other goroutines.
	seenNow    atomic.Int64
	seenEvents atomic.Uint64
}

// stopCheck is how many events Run runs between looks at stop: an atomic
// load a thousand events costs nothing, and a run of a fat tree of k=32
// runs a thousand events in about a millisecond.
const stopCheck = 1024

// Stop makes Run stop running events within stopCheck of them, and every
// later Run let time pass to its end with none run: what a run asked to
// end (its context done) does with the events it will not wait for. Safe
// from any goroutine.
func (c *Clock) Stop() { c.stop.Store(true) }

// Now is the current virtual time.
func (c *Clock) Now() int64 { return c.now }

// At schedules fn at time at (now, if at is in the past).
func (c *Clock) At(at int64, fn func()) { c.push(at, event{fn: fn}) }

// AtFrame schedules fn(frame) at time at.
func (c *Clock) AtFrame(at int64, fn func([]byte), frame []byte) {
	c.push(at, event{frameFn: fn, frame: frame})
}

// AtTime schedules fn(at) at time at: a timer that knows which arm it is.
func (c *Clock) AtTime(at int64, fn func(int64)) { c.push(at, event{timeFn: fn}) }

func (c *Clock) push(at int64, ev event) {
	var slot uint32
	if n := len(c.free); n > 0 {
		slot = c.free[n-1]
		c.free = c.free[:n-1]
		c.slots[slot] = ev
	} else {
		if len(c.slots) == 1<<slotBits {
			panic("simnet: more than 2^24 events pending")
		}
		slot = uint32(len(c.slots))
		c.slots = append(c.slots, ev)
	}
	c.seq++
	if c.seq == 1<<(64-slotBits) {
		panic("simnet: 2^40 events scheduled on one clock")
	}
	e := entry{at: max(at, c.now), key: c.seq<<slotBits | uint64(slot)}
	c.q = append(c.q, e)
	c.up(len(c.q)-1, e)
}

// before reports whether a runs before b: the earlier, or of the same
// time the one scheduled first (the slot bits below the sequence number
// never decide: sequence numbers differ).
func before(a, b *entry) bool {
	return a.at < b.at || (a.at == b.at && a.key < b.key)
}

// runsFirst is before as 1 or 0, computed without a branch: (at, key)
// compared as one 128-bit number by a subtraction with borrow (times are
// never negative).
func runsFirst(a, b *entry) int {
	_, borrow := bits.Sub64(a.key, b.key, 0)
	_, borrow = bits.Sub64(uint64(a.at), uint64(b.at), borrow)
	return int(borrow)
}

// The queue is a 4-ary heap: half the levels of a binary one, and a
// parent's four children fill 64 bytes, one or two cache lines (four
// with whole events in the heap), which a pop reads at every level. up
// and down move the entry into a hole rather than swapping at each
// level.
const arity = 4

// up moves e, which belongs at i, toward the root until its parent runs
// before it.
func (c *Clock) up(i int, e entry) {
	q := c.q
	for i > 0 {
		p := (i - 1) / arity
		if !before(&e, &q[p]) {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = e
}

// down moves e, which belongs at i, toward the leaves until it runs
// before each of its children.
func (c *Clock) down(i int, e entry) {
	q := c.q
	n := len(q)
	for {
		first := arity*i + 1
		if first >= n {
			break
		}
		var m int
		if first+arity <= n {
			// A full node: two pairs, then their firsts, chosen by
			// arithmetic rather than branches (which child runs first is a
			// coin toss the branch predictor loses half the time), and the
			// pairs compared side by side.
			ch := q[first : first+arity : first+arity]
			a := runsFirst(&ch[1], &ch[0])
			b := 2 + runsFirst(&ch[3], &ch[2])
			m = first + a + (b-a)*runsFirst(&ch[b], &ch[a])
		} else {
			m = first
			for k := first + 1; k < n; k++ {
				if before(&q[k], &q[m]) {
					m = k
				}
			}
		}
		if !before(&q[m], &e) {
			break
		}
		q[i] = q[m]
		i = m
	}
	q[i] = e
}

// pop removes the earliest event and returns its time and the event,
// freeing its slot.
func (c *Clock) pop() (int64, event) {
	e := c.q[0]
	// The event is read before the heap is restored: its slot was written
	// when it was scheduled and is seldom in the cache, and the sift, which
	// does not depend on it, runs while it is fetched.
	slot := uint32(e.key & (1<<slotBits - 1))
	ev := c.slots[slot]
	c.slots[slot] = event{} // the event's functions and frame are no longer held
	c.free = append(c.free, slot)
	last := len(c.q) - 1
	moved := c.q[last]
	c.q = c.q[:last]
	if last > 0 {
		c.down(0, moved)
	}
	return e.at, ev
}

// Run runs events in time order until none is left at or before until,
// and leaves the clock at until (or at the last event, if later events
// are not wanted). A stopped clock (Stop) runs no more and leaves the
// clock at until.
func (c *Clock) Run(until int64) {
	for len(c.q) > 0 && c.q[0].at <= until {
		if c.events%stopCheck == 0 {
			if c.stop.Load() {
				break
			}
			c.seenNow.Store(c.now)
			c.seenEvents.Store(c.events)
		}
		at, e := c.pop()
		c.now = at
		c.events++
		switch {
		case e.fn != nil:
			e.fn()
		case e.frameFn != nil:
			e.frameFn(e.frame)
		default:
			e.timeFn(at)
		}
	}
	c.now = max(c.now, until)
}

// Progress is the virtual time and the events run as of Run's last look
// at Stop (within stopCheck events): safe from any goroutine, for reports
// of a long run's progress.
func (c *Clock) Progress() (now int64, events uint64) {
	return c.seenNow.Load(), c.seenEvents.Load()
}

// Events counts the events run so far.
func (c *Clock) Events() uint64 { return c.events }

// Pending counts the events scheduled and not yet run.
func (c *Clock) Pending() int { return len(c.q) }
