package homa

import (
	"slices"
	"time"
)

// creditQueue is a pHost or NDP receiver's incomplete inbound messages
// waiting for credit, one packet's worth at a time (a token or a PULL),
// and when the next credit may go.
type creditQueue struct {
	q  []*msgIn
	at time.Duration // when the next credit may go
	// gap is the receiver's pacing of credits: one full-size packet at
	// its link rate.
	gap time.Duration
	// prio is the DATA priority of bytes sent on a credit (the bottom
	// level).
	prio uint8
}

// creditor is what the two credit policies do differently with a queue:
// which messages may have a credit, and what a credit is.
type creditor interface {
	// eligible reports whether m, incomplete and not fully credited, may
	// have a credit now.
	eligible(m *msgIn) bool
	// give sends m's credit and counts it in m.
	give(now time.Duration, m *msgIn)
}

// add queues the incomplete message m unless it is queued or needs no
// credit. A message sent whole but trimmed still needs PULLs for its
// NACKed packets.
func (c *creditQueue) add(m *msgIn) {
	if !m.credited && (m.granted < m.length || m.nackOwed > 0) {
		m.credited = true
		c.q = append(c.q, m)
	}
}

// remove takes m out of the queue (a restarted message).
func (c *creditQueue) remove(m *msgIn) {
	if i := slices.Index(c.q, m); i >= 0 {
		c.q = slices.Delete(c.q, i, i+1)
	}
	m.credited = false
}

// issueDue sends the credits due at the end of an event, when any message
// waits for one.
func (c *creditQueue) issueDue(e *Endpoint, k creditor) {
	if len(c.q) > 0 {
		c.issue(e, e.now(), k)
	}
}

// issue sends the credits due by now, one packet's worth each, to the
// eligible message with the fewest bytes left, at most one per packet time
// of the link, and arms the pacer's timer for the next one.
func (c *creditQueue) issue(e *Endpoint, now time.Duration, k creditor) {
	for range len(c.q) * 64 { // bounded: each pass sends one credit or ends
		if c.at > now {
			e.armPacer(now, c.at)
			return
		}
		m := c.pick(k)
		if m == nil {
			return
		}
		r := m.rpc
		k.give(now, m)
		e.c.grantsBy[c.prio].Add(1)
		r.info.grantsSent++
		r.traceGrant(now, m.granted, c.prio, true)
		// A short idle stretch may be made up (two packets), a long one not:
		// the credits would arrive as a burst the downlink cannot carry.
		c.at = max(c.at, now-2*c.gap) + c.gap
	}
}

// pick returns the message to credit next: fewest bytes left (ties: the
// oldest) among those k finds eligible, dropping finished ones from the
// queue.
func (c *creditQueue) pick(k creditor) *msgIn {
	var best *msgIn
	for i := 0; i < len(c.q); {
		m := c.q[i]
		if m.rpc.dead || !m.credited || (m.granted >= m.length && m.nackOwed == 0) || m.received >= m.length {
			m.credited = false
			last := len(c.q) - 1
			c.q[i], c.q[last] = c.q[last], nil
			c.q = c.q[:last]
			continue
		}
		i++
		if !k.eligible(m) {
			continue
		}
		if best == nil || m.remaining() < best.remaining() || (m.remaining() == best.remaining() && m.birth < best.birth) {
			best = m
		}
	}
	return best
}
