package tcpmodel

import "time"

// recState is where the sender is in loss recovery (the states of Linux's
// ca_state the model has).
type recState uint8

const (
	// open: no loss being repaired.
	open recState = iota
	// recovery: SACK-based recovery (RFC 6675) after RACK marked a loss.
	recovery
	// lossState: after a retransmission timeout, until what was sent
	// before it is acknowledged.
	lossState
)

// txSeg is a data segment sent and not yet cumulatively acknowledged: an
// entry of the sender's scoreboard, with when it last left (RACK's clock)
// and that transmission's place among the connection's (RACK orders
// segments sent at the same instant by it, where RFC 8985 takes the
// sequence number: in virtual time a retransmission often leaves at the
// same instant as new data sent just before it). A segment keeps its
// bounds when it is sent again.
type txSeg struct {
	start, end uint64
	sent       int64
	order      uint64
	flags      uint8
}

// txSeg flags.
const (
	segSacked      = 1 << iota // a SACK block covered it
	segLost                    // marked lost, by RACK or the timeout
	segRetrans                 // lost and sent again, the copy in flight
	segEverRetrans             // sent more than once
)

// tlpSlack is what a tail loss probe waits beyond two smoothed RTTs while
// more than one segment is out: 2 ms, Linux's floor for the probe timer
// (TCP_TIMEOUT_MIN_US in recent kernels; two jiffies in older ones). With
// one segment out it waits MinRTO instead (a delayed ACK's worst case).
const tlpSlack = int64(2 * time.Millisecond)

// txCompactAt is how many acknowledged segments the scoreboard holds
// before it moves the rest down (when they are at least half of it): a
// bulk sender's queue never empties, and moving half a queue after as many
// pops costs one copy per segment, where letting it grow to compactAt
// would keep allocating as it grows.
const txCompactAt = 64

// dupThresh is RFC 6675's DupThresh: with this many segments SACKed and no
// reordering seen, RACK waits no reordering window.
const dupThresh = 3

// tally adds s's bytes to the scoreboard's totals by its flags; untally
// takes them away.
func (c *conn) tally(s *txSeg) {
	n := s.end - s.start
	if s.flags&segSacked != 0 {
		c.sackedB += n
		c.sackedN++
	}
	if s.flags&segLost != 0 {
		c.lostB += n
	}
	if s.flags&segRetrans != 0 {
		c.retransB += n
	}
}

func (c *conn) untally(s *txSeg) {
	n := s.end - s.start
	if s.flags&segSacked != 0 {
		c.sackedB -= n
		c.sackedN--
	}
	if s.flags&segLost != 0 {
		c.lostB -= n
	}
	if s.flags&segRetrans != 0 {
		c.retransB -= n
	}
}

// setFlags gives s the flags f, keeping the totals.
func (c *conn) setFlags(s *txSeg, f uint8) {
	c.untally(s)
	s.flags = f
	c.tally(s)
}

// pipe is RFC 6675's estimate of the bytes in the network: those sent and
// not acknowledged, less those SACKed and those lost, plus the
// retransmissions of lost ones in flight (Linux's packets_in_flight, in
// bytes).
func (c *conn) pipe() uint64 {
	return c.sndMax - c.sndUna - c.sackedB - c.lostB + c.retransB
}

// nextLost is the scoreboard index of the first segment marked lost and
// not yet sent again, or -1.
func (c *conn) nextLost() int {
	if c.lostB == c.retransB {
		return -1
	}
	for i := max(c.lostHint, c.txh); i < len(c.txq); i++ {
		if c.txq[i].flags&(segLost|segRetrans|segSacked) == segLost {
			c.lostHint = i
			return i
		}
	}
	c.lostHint = len(c.txq)
	return -1
}

// onAck handles the acknowledgement and SACK blocks segment s carries.
func (c *conn) onAck(now int64, s *Segment) {
	ece := s.Flags&FlagECE != 0
	if ece {
		c.h.stats.ECEAcked++
	}
	ack := unwrap(c.sndUna, s.Ack-1)
	if ack > c.sndMax {
		return // acknowledges what was never sent
	}
	prevUna, flight := c.sndUna, c.sndMax-c.sndUna
	if ack > c.sndUna {
		c.cumAck(now, ack, ece)
	}
	news := ack > prevUna || s.Len > 0
	if s.NSACK > 0 && c.takeSACK(now, s) {
		news = true
	}
	if c.tlpEnd != 0 {
		c.tlpAck(ack, news)
	}
	if ack > prevUna {
		c.backoff = 0
		mss := uint64(c.h.cfg.MSS)
		switch segs := int((ack - prevUna + mss - 1) / mss); {
		case c.state != open && ack >= c.recover:
			if c.state == recovery {
				c.cwnd, c.cwndCnt = c.ssthresh, 0
			}
			c.state = open
			c.nv.restart(c.sndUna)
		case c.state == recovery:
			// RFC 6675: the window holds at ssthresh; pipe paces sending.
		default:
			if c.h.cfg.Law == NV {
				c.cwnd, c.ssthresh = nvSample(&c.nv, c.rackRTT, flight, c.sndUna, c.sndMax, c.h.cfg.MSS, c.cwnd, c.ssthresh)
			}
			c.grow(segs, flight)
		}
	}
	if c.sackedB > 0 || c.retransB > 0 {
		c.detectLoss(now)
	}
	if ece && c.h.cfg.Law == DCTCP && c.sndUna >= c.cwrEnd && c.state == open {
		// Once per window of data: cwnd <- cwnd (1 - alpha/2).
		c.ssthresh = max(int(float64(c.cwnd)*(1-c.alpha/2)), 2)
		c.cwnd, c.cwndCnt = c.ssthresh, 0
		c.cwrEnd, c.cwrFlag = c.sndMax, true
		c.h.stats.CWRReduces++
	}
	switch {
	case c.sndUna == c.sndMax:
		c.rtoAt, c.ptoAt, c.reoAt = 0, 0, 0
	case ack > prevUna:
		c.arm(now)
		c.armPTO(now)
	}
}

// cumAck advances sndUna to ack: the segments below it leave the
// scoreboard, those not SACKed before delivered now.
func (c *conn) cumAck(now int64, ack uint64, ece bool) {
	n := ack - c.sndUna
	if c.timing && ack >= c.timedSeq {
		c.timing = false
		c.sample(now - c.timedAt)
	}
	if c.h.cfg.Law == DCTCP {
		c.acked += n
		if ece {
			c.ackedCE += n
		}
		if ack >= c.alphaEnd {
			const g = 1.0 / 16
			c.alpha = (1-g)*c.alpha + g*float64(c.ackedCE)/float64(max(c.acked, 1))
			c.acked, c.ackedCE, c.alphaEnd = 0, 0, c.sndMax
		}
	}
	// Reordering shows only when nothing acknowledged now was sent twice
	// (Linux's rule: else the hole's repair explains the order).
	reord := true
	for i := c.txh; i < len(c.txq) && c.txq[i].start < ack; i++ {
		if c.txq[i].flags&segEverRetrans != 0 {
			reord = false
			break
		}
	}
	for c.txh < len(c.txq) && c.txq[c.txh].end <= ack {
		s := &c.txq[c.txh]
		if s.flags&segSacked == 0 {
			c.delivered(now, s, reord)
		}
		c.untally(s)
		c.txh++
	}
	if c.txh < len(c.txq) && c.txq[c.txh].start < ack {
		// Acknowledged in part (the model's receivers acknowledge whole
		// segments, so only a peer that does not could cause it).
		s := &c.txq[c.txh]
		c.untally(s)
		s.start = ack
		c.tally(s)
	}
	c.sndUna = ack
	switch {
	case c.txh == len(c.txq):
		c.txq, c.txh, c.lostHint = c.txq[:0], 0, 0
	case c.txh >= txCompactAt && c.txh*2 >= len(c.txq):
		c.txq = c.txq[:copy(c.txq, c.txq[c.txh:])]
		c.lostHint = max(c.lostHint-c.txh, 0)
		c.txh = 0
	}
}

// takeSACK marks the segments s's SACK blocks cover, in sequence order so
// that a block reported late is not taken for reordering. A first block
// below the acknowledgement or within the second is a D-SACK (RFC 2883):
// the receiver got those bytes twice, which tells a tail loss probe's
// sender that the original arrived. It reports whether a segment was newly
// SACKed.
func (c *conn) takeSACK(now int64, s *Segment) bool {
	if s.NSACK > 0 {
		k := s.SACK[0]
		l, r := unwrap(c.sndUna, k.Left-1), unwrap(c.sndUna, k.Right-1)
		if r <= c.sndUna || (s.NSACK > 1 && l >= unwrap(c.sndUna, s.SACK[1].Left-1) && r <= unwrap(c.sndUna, s.SACK[1].Right-1)) {
			c.h.stats.DSACKs++
			if c.tlpEnd != 0 && c.tlpRetrans && l >= c.tlpStart && r <= c.tlpEnd {
				c.tlpDup = true
			}
		}
	}
	var b [MaxSACKBlocks][2]uint64
	n, news := 0, false
	for _, k := range s.SACK[:s.NSACK] {
		l, r := max(unwrap(c.sndUna, k.Left-1), c.sndUna), min(unwrap(c.sndUna, k.Right-1), c.sndMax)
		if l >= r {
			continue // below sndUna (or a D-SACK, which the model does not read) or never sent
		}
		i := n
		for ; i > 0 && b[i-1][0] > l; i-- {
			b[i] = b[i-1]
		}
		b[i] = [2]uint64{l, r}
		n++
	}
	for _, k := range b[:n] {
		lo, hi := c.txh, len(c.txq)
		for lo < hi { // the first segment ending past the block's start
			m := int(uint(lo+hi) >> 1)
			if c.txq[m].end <= k[0] {
				lo = m + 1
			} else {
				hi = m
			}
		}
		for i := lo; i < len(c.txq) && c.txq[i].end <= k[1]; i++ {
			t := &c.txq[i]
			if t.start < k[0] || t.flags&segSacked != 0 {
				continue // in part only, or SACKed before
			}
			c.delivered(now, t, true)
			c.setFlags(t, segSacked|t.flags&segEverRetrans)
			news = true
		}
	}
	return news
}

// delivered is RACK's step on a segment newly acknowledged or SACKed
// (RFC 8985, 6.2 steps 1-3): the most recently sent segment delivered,
// its RTT, the minimum RTT, and reordering when reord allows.
func (c *conn) delivered(now int64, s *txSeg, reord bool) {
	rtt := now - s.sent
	if s.flags&segEverRetrans != 0 {
		if rtt < c.minRTT {
			// Sooner than any round trip: the original's ACK, not the
			// retransmission's (the model has no timestamps to tell).
			return
		}
	} else {
		if c.minRTT == 0 || rtt < c.minRTT {
			c.minRTT = rtt
		}
		if reord && s.end < c.fack {
			c.reordering = true
		}
	}
	c.fack = max(c.fack, s.end)
	if s.order > c.rackOrder {
		c.rackXmit, c.rackOrder, c.rackRTT = s.sent, s.order, rtt
	}
}

// reoWnd is RACK's reordering window: none while no reordering has been
// seen and the sender is recovering or DupThresh segments are SACKed, else
// a quarter of the minimum RTT, at most srtt.
func (c *conn) reoWnd() int64 {
	if !c.reordering && (c.state != open || c.sackedN >= dupThresh) {
		return 0
	}
	return min(c.minRTT/4, c.srtt)
}

// detectLoss marks lost each segment sent before the most recently sent
// delivered one, once a round trip and the reordering window have passed
// since it left (RFC 8985, 6.2 step 5), a retransmission as well as an
// original; it sets the reordering timer for the first one still to
// come and starts recovery when a loss is found outside it.
func (c *conn) detectLoss(now int64) {
	c.reoAt = 0
	reo := c.reoWnd()
	var wait int64
	lost := false
	for i := c.txh; i < len(c.txq); i++ {
		s := &c.txq[i]
		if s.flags&segSacked != 0 || s.flags&(segLost|segRetrans) == segLost {
			continue
		}
		if s.order >= c.rackOrder {
			continue // not sent before what was delivered
		}
		if left := s.sent + c.rackRTT + reo - now; left > 0 {
			if wait == 0 || left < wait {
				wait = left
			}
			continue
		}
		c.setFlags(s, s.flags&^segRetrans|segLost)
		c.lostHint = min(c.lostHint, i)
		c.h.stats.MarkedLost++
		lost = true
	}
	if wait > 0 {
		c.reoAt = now + wait
		c.schedule(c.reoAt)
	}
	if lost && c.state == open {
		c.enterRecovery()
	}
}

// enterRecovery starts SACK recovery: ssthresh half the flight (the Reno
// law's), the window at it (RFC 6675; Linux's proportional rate reduction
// is not modelled).
func (c *conn) enterRecovery() {
	mss := uint64(c.h.cfg.MSS)
	flight := int((c.sndMax - c.sndUna + mss - 1) / mss)
	c.ssthresh = c.lossThresh(flight, false)
	c.cwnd, c.cwndCnt = c.ssthresh, 0
	c.state, c.recover = recovery, c.sndMax
	c.tlpEnd, c.ptoAt = 0, 0
	c.h.stats.FastRecovery++
}

// armPTO sets the tail loss probe's deadline (RFC 8985, 7.2) while the
// sender is open, no probe is outstanding, there is an RTT sample, and it
// comes before the timeout.
func (c *conn) armPTO(now int64) {
	c.ptoAt = 0
	if c.state != open || c.tlpEnd != 0 || c.srtt == 0 || c.sndUna == c.sndMax {
		return
	}
	pto := 2*c.srtt + tlpSlack
	if len(c.txq)-c.txh == 1 {
		pto = 2*c.srtt + c.h.cfg.MinRTO.Nanoseconds()
	}
	if at := now + pto; c.rtoAt == 0 || at < c.rtoAt {
		c.ptoAt = at
		c.schedule(at)
	}
}

// probe sends the tail loss probe (RFC 8985, 7.3): a new segment if the
// application has written one, else the last segment again; its ACK, with
// SACK, lets RACK find the tail's losses without waiting for the timeout.
func (c *conn) probe(now int64) {
	c.ptoAt = 0
	if c.sndUna == c.sndMax || c.state != open {
		return
	}
	if c.sndMax < c.sndEnd {
		c.sendNew(now, min(uint64(c.h.cfg.MSS)-c.sackRoom(), c.sndEnd-c.sndMax))
		c.tlpRetrans = false
	} else {
		c.resend(now, len(c.txq)-1)
		c.tlpRetrans = true
	}
	c.tlpStart, c.tlpEnd, c.tlpDup = c.txq[len(c.txq)-1].start, c.sndMax, false
	c.h.stats.Probes++
	c.arm(now)
}

// tlpAck settles the outstanding probe on an ACK of everything below ack
// that brought news (sndUna advanced, data, or segments newly SACKed) or
// none (RFC 8985, 7.4, as Linux's tcp_process_tlp_ack does it). A probe of
// new data, or a resent one the receiver reported twice by a D-SACK, found
// no loss; so did a resent one answered by a pure duplicate ACK (the
// original and the probe both arrived). A resent probe that an ACK beyond
// it passes without either repaired a tail loss: the window comes down
// once. Until one of these, the probe stays outstanding and no other is
// sent.
func (c *conn) tlpAck(ack uint64, news bool) {
	switch {
	case ack < c.tlpEnd:
		return
	case !c.tlpRetrans, c.tlpDup:
	case ack > c.tlpEnd:
		if c.state == open {
			c.ssthresh = c.lossThresh(c.cwnd, false)
			c.cwnd, c.cwndCnt = c.ssthresh, 0
		}
	case !news:
	default:
		return
	}
	c.tlpEnd, c.tlpDup = 0, false
}

// timeout is the retransmission timeout: every segment not SACKed is
// marked lost, the window goes back to one segment and half the flight
// becomes the threshold, the timer backs off; push then resends the lost
// segments in order as the window opens (RFC 6675, section 5.1; Linux's
// tcp_enter_loss keeps the SACKed ones).
func (c *conn) timeout(now int64) {
	c.rtoAt = 0
	if c.sndUna == c.sndMax {
		return
	}
	mss := uint64(c.h.cfg.MSS)
	flight := int((c.sndMax - c.sndUna + mss - 1) / mss)
	c.ssthresh = c.lossThresh(flight, true)
	c.cwnd, c.cwndCnt = 1, 0
	for i := c.txh; i < len(c.txq); i++ {
		if s := &c.txq[i]; s.flags&segSacked == 0 {
			c.setFlags(s, s.flags&segEverRetrans|segLost)
		}
	}
	c.lostHint = c.txh
	c.state, c.recover = lossState, c.sndMax
	c.tlpEnd, c.ptoAt, c.reoAt = 0, 0, 0
	c.timing = false
	c.backoff = min(c.backoff+1, 16)
	c.h.stats.Timeouts++
	c.push(now)
	c.arm(now)
}

// onTimer runs at a scheduled time t: whichever of the delayed ACK, the
// timeout, the tail loss probe and the reordering window are due, then
// the timer is scheduled again for the next deadline (deadlines move later
// on every ACK, so one event per period is scheduled, not one per ACK).
func (c *conn) onTimer(t int64) {
	if t != c.timerAt || c.h.closed {
		return // replaced by an earlier one
	}
	c.timerAt = 0
	if c.delAck != 0 && c.delAck <= t {
		c.flushAck()
	}
	switch {
	case c.rtoAt != 0 && c.rtoAt <= t:
		c.timeout(t)
	case c.ptoAt != 0 && c.ptoAt <= t:
		c.probe(t)
	case c.reoAt != 0 && c.reoAt <= t:
		c.detectLoss(t)
		c.push(t)
	}
	c.settleAck(t)
	for _, at := range [...]int64{c.rtoAt, c.ptoAt, c.reoAt, c.delAck} {
		if at != 0 {
			c.schedule(at)
		}
	}
}
