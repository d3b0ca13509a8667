package driver

import (
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// client runs a ClientSpec: an open loop issues each RPC at its drawn
// time, a closed loop keeps max_outstanding workers each issuing its next
// RPC when its last one ends.
//
// max_outstanding in an open loop bounds the RPCs out at once: an arrival
// that finds the bound reached waits in a FIFO queue for a slot and goes
// as one frees, keeping its arrival as its intended time, so the wait
// counts in its latency and send lag as it would for a user of a real
// system; the schedule meanwhile keeps drawing arrivals on time.
type client struct {
	h      *Host
	spec   *ClientSpec
	issued uint64
	// next is the open loop's next arrival, cancelled by stop.
	next Event
}

func (c *client) start() {
	s, h := c.spec, c.h
	start := s.StartNs
	if start == 0 {
		start = h.sched.Now()
	}
	req := RequestBuffer(s.Sizes.Max(), s.RespBytes)
	if s.Schedule == nil {
		c.closedLoop(start, req)
		return
	}
	draws := workloads.NewOpenLoop(s.Seed, s.Schedule, s.Sizes, len(s.Targets))
	var waiting []func() // RPCs due while max_outstanding were out
	out := 0
	done := func(bool) {
		out--
		if len(waiting) > 0 {
			w := waiting[0]
			waiting = waiting[1:]
			w()
		}
	}
	h.issuing++
	var next func()
	next = func() {
		off, size, ti := draws.Next()
		if (s.Duration > 0 && off >= s.Duration) || (s.MaxRPCs > 0 && c.issued >= s.MaxRPCs) || h.stopped {
			h.issuing--
			return
		}
		c.issued++
		at := start + off.Nanoseconds()
		c.next = h.sched.At(at, func() {
			issue := func() {
				out++
				h.call(&rundir.RPC{Phase: h.phaseAt(off.Nanoseconds()), ReqBytes: int64(size), IntendedNs: at},
					s.Targets[ti], req[:size], done)
			}
			if s.MaxOutstanding > 0 && out >= s.MaxOutstanding {
				h.slotWaits.Add(1)
				waiting = append(waiting, issue)
			} else {
				issue()
			}
			next()
		})
	}
	next()
}

// closedLoop starts max_outstanding workers at start; intended equals the
// send time here: a closed loop has no schedule to fall behind.
func (c *client) closedLoop(start int64, req []byte) {
	s, h := c.spec, c.h
	for w := range s.MaxOutstanding {
		draws := workloads.NewClosedLoop(s.Seed, w, s.Sizes, len(s.Targets))
		h.issuing++
		var next func(bool)
		next = func(bool) {
			now := h.sched.Now()
			off := now - start
			if (s.Duration > 0 && off >= s.Duration.Nanoseconds()) || h.stopped || (s.MaxRPCs > 0 && c.issued >= s.MaxRPCs) {
				h.issuing--
				return
			}
			c.issued++
			size, ti := draws.Next()
			h.call(&rundir.RPC{Phase: h.phaseAt(off), ReqBytes: int64(size), IntendedNs: now}, s.Targets[ti], req[:size], next)
		}
		h.sched.At(start, func() { next(true) })
	}
}

func (c *client) stop() {
	if c.next != nil {
		c.next.Cancel()
	}
}
