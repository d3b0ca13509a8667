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

import "sync/atomic"

// event is something that happens at a time: fn, or frameFn with frame,
// or timeFn with the event's time. seq orders events of the same time by
// when they were scheduled, so a run repeats exactly. The three forms let
// the hot paths schedule with functions made once, not a closure per
// event.
type event struct {
	at      int64
	seq     uint64
	fn      func()
	frameFn func([]byte)
	frame   []byte
	timeFn  func(int64)
}

// Clock is a simulation's event queue and virtual time, in nanoseconds
// from the simulation's start. The queue is a 4-ary heap of events by
// value, so scheduling allocates nothing once it has grown.
type Clock struct {
	now    int64
	seq    uint64
	q      []event
	events uint64
	// stop is set by Stop, from any goroutine.
	stop atomic.Bool
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
func (c *Clock) At(at int64, fn func()) { c.push(event{at: at, fn: fn}) }

// AtFrame schedules fn(frame) at time at.
func (c *Clock) AtFrame(at int64, fn func([]byte), frame []byte) {
	c.push(event{at: at, frameFn: fn, frame: frame})
}

// AtTime schedules fn(at) at time at: a timer that knows which arm it is.
func (c *Clock) AtTime(at int64, fn func(int64)) { c.push(event{at: at, timeFn: fn}) }

func (c *Clock) push(e event) {
	e.at = max(e.at, c.now)
	c.seq++
	e.seq = c.seq
	c.q = append(c.q, e)
	c.up(len(c.q)-1, e)
}

// before reports whether a runs before b.
func before(a, b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// The queue is a 4-ary heap: half the levels of a binary one, and a
// parent's four children share a cache line or two, so a pop, which
// walks every level, moves half as many 64-byte events. up and down move
// the event into a hole rather than swapping at each level.
const arity = 4

// up moves e, which belongs at i, toward the root until its parent runs
// before it.
func (c *Clock) up(i int, e event) {
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
func (c *Clock) down(i int, e event) {
	q := c.q
	n := len(q)
	for {
		first := arity*i + 1
		if first >= n {
			break
		}
		m := first
		for k := first + 1; k < min(first+arity, n); k++ {
			if before(&q[k], &q[m]) {
				m = k
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

// pop removes and returns the earliest event.
func (c *Clock) pop() event {
	e := c.q[0]
	last := len(c.q) - 1
	moved := c.q[last]
	c.q[last] = event{}
	c.q = c.q[:last]
	if last > 0 {
		c.down(0, moved)
	}
	return e
}

// Run runs events in time order until none is left at or before until,
// and leaves the clock at until (or at the last event, if later events
// are not wanted). A stopped clock (Stop) runs no more and leaves the
// clock at until.
func (c *Clock) Run(until int64) {
	for len(c.q) > 0 && c.q[0].at <= until {
		if c.events%stopCheck == 0 && c.stop.Load() {
			break
		}
		e := c.pop()
		c.now = e.at
		c.events++
		switch {
		case e.fn != nil:
			e.fn()
		case e.frameFn != nil:
			e.frameFn(e.frame)
		default:
			e.timeFn(e.at)
		}
	}
	c.now = max(c.now, until)
}

// Events counts the events run so far.
func (c *Clock) Events() uint64 { return c.events }

// Pending counts the events scheduled and not yet run.
func (c *Clock) Pending() int { return len(c.q) }
