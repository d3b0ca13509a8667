// Package simnet is a discrete-event network in virtual time: hosts whose
// Homa endpoints are the engine's own (homa.Driven: the same handlers,
// scheduler, pacer and policies an emulated host runs), links with a rate
// and a propagation delay, and switches that are tor.p4's pipeline
// (p4/pipeline, programmed with the controller's table entries) in front
// of the switch's own traffic manager and shaper (p4/dataplane.PortModel).
// Frames carry real bytes in homatb's wire format. Nothing in it reads the
// wall clock or starts a goroutine, so a run repeats exactly.
package simnet

import "container/heap"

// event is something that happens at a time; seq orders events of the
// same time by when they were scheduled, so a run repeats exactly.
type event struct {
	at  int64
	seq uint64
	fn  func()
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = event{}
	*h = old[:len(old)-1]
	return e
}

// Clock is a simulation's event queue and virtual time, in nanoseconds
// from the simulation's start.
type Clock struct {
	now    int64
	seq    uint64
	q      eventHeap
	events uint64
}

// Now is the current virtual time.
func (c *Clock) Now() int64 { return c.now }

// At schedules fn at time at (now, if at is in the past).
func (c *Clock) At(at int64, fn func()) {
	c.seq++
	heap.Push(&c.q, event{at: max(at, c.now), seq: c.seq, fn: fn})
}

// Run runs events in time order until none is left at or before until,
// and leaves the clock at until (or at the last event, if later events
// are not wanted).
func (c *Clock) Run(until int64) {
	for len(c.q) > 0 && c.q[0].at <= until {
		e := heap.Pop(&c.q).(event)
		c.now = e.at
		c.events++
		e.fn()
	}
	c.now = max(c.now, until)
}

// Events counts the events run so far.
func (c *Clock) Events() uint64 { return c.events }

// Pending counts the events scheduled and not yet run.
func (c *Clock) Pending() int { return len(c.q) }
