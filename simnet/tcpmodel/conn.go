package tcpmodel

import (
	"cmp"
	"math"
	"net/netip"
	"slices"
	"time"
)

// conn is one end of a connection: its sending half (the window, the
// scoreboard and loss recovery, the timers, DCTCP's alpha, PIAS's count)
// and its receiving half (what has arrived in order, and the spans beyond
// it, which its ACKs report as SACK blocks).
type conn struct {
	h      *Host
	remote netip.AddrPort
	local  uint16
	peer   *conn // the other end: whose messages this end receives
	client bool

	// Sending half, in stream offsets from 0 (the first data byte).
	sndUna, sndMax uint64 // sndMax: the next new byte; all below it have left once
	sndEnd         uint64 // what the application has written
	cwnd, cwndCnt  int    // segments; growth carried in congestion avoidance
	ssthresh       int
	state          recState
	recover        uint64 // sndMax when recovery or the last timeout began
	lastSend       int64  // when data last left (restart after idle)
	retrans        uint64
	cwrFlag        bool // the next data segment carries CWR

	// The scoreboard (RFC 6675): the segments from sndUna on, in sequence
	// order from txh, and the bytes among them SACKed, marked lost, and
	// lost with a retransmission in flight; lostHint is no later than the
	// first lost segment not yet sent again.
	txq                      []txSeg
	txh, lostHint            int
	sackedB, lostB, retransB uint64
	sackedN                  int

	// RACK (RFC 8985): the send time and order of the most recently sent
	// segment delivered, its RTT, the minimum RTT, the highest byte
	// delivered, whether the receiver has been seen to reorder; sends
	// counts transmissions (txSeg.order).
	rackXmit, rackRTT, minRTT int64
	rackOrder, fack, sends    uint64
	reordering                bool
	// Tail loss probe: the probe's bounds while one is outstanding (tlpEnd
	// 0: none), whether it was a retransmission, and whether a D-SACK said
	// the receiver had the original too.
	tlpStart, tlpEnd   uint64
	tlpRetrans, tlpDup bool

	// RTT estimation (RFC 6298 with Linux's floor) from one timed segment
	// at a time, never a retransmitted one (Karn).
	srtt, mdev int64 // ns; mdev is the mean deviation
	rto        int64
	backoff    uint
	timing     bool
	timedSeq   uint64
	timedAt    int64
	// Deadlines (0: disarmed): the retransmission timeout, the tail loss
	// probe, RACK's reordering window; timerAt is when the scheduled event
	// runs.
	rtoAt, ptoAt, reoAt int64
	timerAt             int64
	timerFn             func(int64)
	alpha               float64 // DCTCP
	alphaEnd            uint64  // the observation window ends when sndUna passes it
	acked, ackedCE      uint64
	cwrEnd              uint64 // no ECE reduction until sndUna passes it
	bic                 bicState
	nv                  nvState

	// PIAS: payload bytes this direction has sent since its last restart.
	piasCount uint64

	// Receiving half.
	rcvNxt  uint64
	spans   []span // beyond rcvNxt, sorted, disjoint
	dsack   span   // a duplicate received, which the next ACK reports first (RFC 2883)
	dsackOn bool   // dsack is owed
	rxCount uint64 // out-of-order arrivals so far: spans' recency
	ackDue  bool   // an ACK is owed for data received
	ceDue   bool   // the data it acknowledges arrived CE
	ackNow  bool   // the ACK owed may not wait (Config.DelayedAck)
	unacked uint64 // bytes received since the last ACK
	delAck  int64  // when a delayed ACK is due; 0: none
	firstIn bool   // the head message's first byte has been seen

	// msgs are the messages written on this end's stream, from mh on not
	// yet received whole by the peer.
	msgs []msg
	mh   int
	// calls are a client end's outstanding calls, in order, from ch on;
	// sentTo is the first whose request has not left whole.
	calls  []call
	ch     int
	sentTo int
}

// compactAt is how many finished entries a connection's message, call or
// segment queue holds before it moves the rest down (when they are at
// least half of it), so a connection that never empties does not grow
// without bound.
const compactAt = 1024

// span is the stream bytes [start, end); rx orders spans by when data last
// arrived in them (the receiver's rxCount then).
type span struct{ start, end, rx uint64 }

// msg is one message on a stream: its bytes (length prefix included) and,
// for a request, its payload.
type msg struct {
	start, end uint64
	req        []byte
}

// call is a client's outstanding call.
type call struct {
	done              func(Result, error)
	reqStart, reqEnd  uint64
	reqOut, firstResp int64
	retrans0          uint64
}

func newConn(h *Host, remote netip.AddrPort, local uint16) *conn {
	c := &conn{h: h, remote: remote, local: local, cwnd: h.cfg.InitCwnd, ssthresh: 1 << 30,
		rto: h.cfg.InitRTO.Nanoseconds(), alpha: 1}
	c.timerFn = c.onTimer
	return c
}

// write puts a message of n payload bytes (and its length prefix) on the
// stream and sends what the window allows.
func (c *conn) write(now int64, n int, req []byte) {
	start := c.sndEnd
	c.sndEnd += uint64(n + framing)
	c.msgs = append(c.msgs, msg{start: start, end: c.sndEnd, req: req})
	c.push(now)
	c.settleAck(now)
}

// push sends while the window has room over what is in the network (the
// scoreboard's pipe): first the segments marked lost, lowest first, then
// new data (TCP_NODELAY: a short segment leaves at once). Having sent, it
// arms the tail loss probe.
func (c *conn) push(now int64) {
	mss := uint64(c.h.cfg.MSS)
	if c.sndUna == c.sndMax && c.sndMax < c.sndEnd && c.lastSend != 0 && now-c.lastSend > c.rto {
		// Linux's slow start after idle: the window restarts from the
		// initial one after an idle RTO.
		c.cwnd = min(c.cwnd, c.h.cfg.InitCwnd)
	}
	sent := false
	for {
		i, n := c.nextSend(mss)
		if n == 0 {
			break
		}
		if p := c.pipe(); p > 0 && p+n > uint64(c.cwnd)*mss {
			break
		}
		if i >= 0 {
			c.resend(now, i)
		} else {
			c.sendNew(now, n)
		}
		sent = true
	}
	if sent {
		c.armPTO(now)
	}
}

// nextSend is what push would send next and its length: the first lost
// segment not yet sent again (its index), else new data (index -1); n is 0
// when there is neither.
func (c *conn) nextSend(mss uint64) (i int, n uint64) {
	if i = c.nextLost(); i >= 0 {
		return i, c.txq[i].end - c.txq[i].start
	}
	if c.sndMax < c.sndEnd {
		return -1, min(mss-c.sackRoom(), c.sndEnd-c.sndMax)
	}
	return -1, 0
}

// sendNew sends the next n new bytes of the stream.
func (c *conn) sendNew(now int64, n uint64) {
	seq := c.sndMax
	c.sndMax += n
	c.sends++
	c.txq = append(c.txq, txSeg{start: seq, end: seq + n, sent: now, order: c.sends})
	if !c.timing {
		c.timing, c.timedSeq, c.timedAt = true, seq+n, now
	}
	c.noteSent(now)
	c.transmit(now, seq, n)
}

// resend sends the scoreboard's segment i again: a lost one, or the last
// one as a tail loss probe.
func (c *conn) resend(now int64, i int) {
	s := &c.txq[i]
	f := s.flags | segEverRetrans
	if f&segLost != 0 {
		f |= segRetrans
	}
	c.setFlags(s, f)
	c.sends++
	s.sent, s.order = now, c.sends
	c.retrans++
	c.h.stats.Retransmits++
	if c.timing && c.timedSeq > s.start {
		c.timing = false // Karn: no sample across a retransmitted segment
	}
	c.transmit(now, s.start, s.end-s.start)
}

// transmit sends the stream's bytes [seq, seq+n).
func (c *conn) transmit(now int64, seq, n uint64) {
	h := c.h
	s := &h.seg
	c.header(s)
	s.Seq, s.Len = uint32(seq+1), int(n)
	if c.cwrFlag {
		s.Flags |= FlagCWR
		c.cwrFlag = false
	}
	dscp := h.cfg.DSCP
	if p := h.cfg.PIAS; p != nil {
		if p.IdleReset > 0 && c.lastSend != 0 && now-c.lastSend > p.IdleReset.Nanoseconds() {
			c.piasCount = 0
		}
		sent := c.piasCount
		if p.PerMessage {
			sent = c.msgOffset(seq)
		}
		level := 0
		for level < len(p.Thresholds) && sent >= p.Thresholds[level] {
			level++
		}
		dscp = p.DSCP[level]
		c.piasCount += n
	}
	s.TOS = dscp << 2
	if h.cfg.Law == DCTCP {
		s.TOS |= ect0
	}
	c.lastSend = now
	if c.rtoAt == 0 {
		c.arm(now)
	}
	h.send(c.remote.Addr())
}

// msgOffset is the offset of stream byte seq in the message that holds
// it; a byte of a message the peer has received whole already (a
// spurious retransmission) is past every PIAS threshold.
func (c *conn) msgOffset(seq uint64) uint64 {
	ms := c.msgs[c.mh:]
	i, _ := slices.BinarySearchFunc(ms, seq, func(m msg, seq uint64) int { return cmp.Compare(m.end, seq+1) })
	if i == len(ms) || ms[i].start > seq {
		return math.MaxUint64
	}
	return seq - ms[i].start
}

// header fills the fields every segment of c carries: ports, the
// acknowledgement with its ECE and SACK blocks, the level-0 DSCP. It
// settles the ACK owed.
func (c *conn) header(s *Segment) {
	*s = Segment{SrcPort: c.local, DstPort: c.remote.Port(), Seq: uint32(c.sndMax + 1), Ack: uint32(c.rcvNxt + 1), Flags: FlagACK}
	if c.ceDue {
		s.Flags |= FlagECE
	}
	c.putSACK(s)
	dscp := c.h.cfg.DSCP
	if p := c.h.cfg.PIAS; p != nil {
		dscp = p.DSCP[0] // pure ACKs go at the highest level
	}
	s.TOS = dscp << 2
	c.ackDue, c.ackNow, c.unacked, c.delAck, c.dsackOn = false, false, 0, 0, false
}

// putSACK puts the spans beyond rcvNxt in s as SACK blocks, the span that
// most recently took data first and then the others by recency (RFC 2018:
// the first block reports the latest segment, the rest repeat the most
// recently reported), after a D-SACK block for a duplicate just received
// (RFC 2883: first, and below the acknowledgement or within the next
// block).
func (c *conn) putSACK(s *Segment) {
	if c.dsackOn {
		s.SACK[0] = SACKBlock{Left: uint32(c.dsack.start + 1), Right: uint32(c.dsack.end + 1)}
		s.NSACK = 1
	}
	d := int(s.NSACK)
	var taken [MaxSACKBlocks]int
	for int(s.NSACK) < min(MaxSACKBlocks, d+len(c.spans)) {
		best := -1
	spans:
		for i := range c.spans {
			for _, t := range taken[:int(s.NSACK)-d] {
				if t == i {
					continue spans
				}
			}
			if best < 0 || c.spans[i].rx > c.spans[best].rx {
				best = i
			}
		}
		sp := c.spans[best]
		taken[int(s.NSACK)-d] = best
		s.SACK[s.NSACK] = SACKBlock{Left: uint32(sp.start + 1), Right: uint32(sp.end + 1)}
		s.NSACK++
	}
}

// sackRoom is the bytes the SACK option takes in c's segments now, which
// Linux takes from a new data segment's payload (tcp_current_mss).
func (c *conn) sackRoom() uint64 {
	n := len(c.spans)
	if c.dsackOn {
		n++
	}
	if n == 0 {
		return 0
	}
	return uint64(4 + 8*min(MaxSACKBlocks, n))
}

// sendSYN sends a SYN (or SYN-ACK): sequence number 0, the stream's
// initial one, so that data byte k of the stream is sequence number k+1 as
// in a real connection and records of the segments (postcards, the latency
// anatomy) place the stream's offsets from it. The model does not wait for
// the handshake: the client's first data leaves right behind its SYN.
func (c *conn) sendSYN(flags uint8) {
	s := &c.h.seg
	*s = Segment{SrcPort: c.local, DstPort: c.remote.Port(), Flags: flags, TOS: c.h.cfg.DSCP << 2}
	if flags&FlagACK != 0 {
		s.Ack = 1
	}
	if p := c.h.cfg.PIAS; p != nil {
		s.TOS = p.DSCP[0] << 2
	}
	c.h.send(c.remote.Addr())
}

// flushAck sends the ACK owed, if no data segment carried it.
func (c *conn) flushAck() {
	if !c.ackDue {
		return
	}
	c.header(&c.h.seg)
	c.h.send(c.remote.Addr())
}

// noteSent books the requests whose last byte has now left.
func (c *conn) noteSent(now int64) {
	for c.sentTo < len(c.calls) {
		k := &c.calls[c.sentTo]
		if c.sndMax < k.reqEnd {
			return
		}
		k.reqOut = now
		c.sentTo++
	}
}

// receive handles a segment from the peer.
func (c *conn) receive(now int64, s *Segment) {
	if s.Flags&FlagSYN != 0 {
		if s.Flags&FlagACK == 0 { // the client's SYN: answer it
			c.sendSYN(FlagSYN | FlagACK)
		}
		return
	}
	ce := s.TOS&ecnMask == ecnCE
	if s.Len > 0 {
		c.onData(now, unwrap(c.rcvNxt, s.Seq-1), uint64(s.Len), ce)
	}
	c.onAck(now, s)
	c.push(now)
	c.settleAck(now)
}

// settleAck sends the ACK owed when it may not wait, else has the timer
// send it after DelAckTimeout unless data carries it first.
func (c *conn) settleAck(now int64) {
	switch {
	case !c.ackDue:
	case c.ackNow || !c.h.cfg.DelayedAck:
		c.flushAck()
	case c.delAck == 0:
		c.delAck = now + c.h.cfg.DelAckTimeout.Nanoseconds()
		c.schedule(c.delAck)
	}
}

// unwrap is the 64-bit stream offset near base whose low 32 bits are v.
func unwrap(base uint64, v uint32) uint64 {
	return uint64(int64(base) + int64(int32(v-uint32(base))))
}

// onData takes the bytes [seq, seq+n): in order they advance rcvNxt
// (and the spans it reaches), beyond it they wait in spans. Without
// delayed ACKs every data segment is acknowledged, with ECE exactly when
// it arrived CE. With them (Linux's way) an ACK goes at once when more
// than a full segment's bytes have arrived since the last one (Linux's
// __tcp_ack_snd_check: every second full segment, or short ones as soon as
// they add up to more), for data out of order or filling a hole, for a
// duplicate, and when
// the CE state changes, the ACK owed for the earlier data leaves first
// with the old state: DCTCP's receiver state machine (RFC 8257, 3.2).
func (c *conn) onData(now int64, seq, n uint64, ce bool) {
	if ce {
		c.h.stats.CEReceived++
	}
	if c.ackDue && ce != c.ceDue {
		c.flushAck()
	}
	c.ackDue, c.ceDue = true, ce
	end := seq + n
	if c.holds(seq, end) {
		// A duplicate: ACK it again at once, with a D-SACK block.
		c.ackNow, c.dsack, c.dsackOn = true, span{start: seq, end: end}, true
		return
	}
	c.unacked += n
	if seq > c.rcvNxt || len(c.spans) > 0 || c.unacked > uint64(c.h.cfg.MSS) {
		c.ackNow = true
	}
	c.rxCount++
	c.addSpan(max(seq, c.rcvNxt), end, c.rxCount)
	// Spans are merged when they touch, so only the first can reach rcvNxt.
	if c.spans[0].start <= c.rcvNxt {
		c.rcvNxt = c.spans[0].end
		c.spans = c.spans[:copy(c.spans, c.spans[1:])]
		c.deliver(now)
	}
}

// holds reports whether the receiver already has all of [start, end):
// below rcvNxt or within one span.
func (c *conn) holds(start, end uint64) bool {
	if end <= c.rcvNxt {
		return true
	}
	for _, sp := range c.spans {
		if sp.start <= max(start, c.rcvNxt) && end <= sp.end {
			return true
		}
	}
	return false
}

// addSpan merges [start, end), which data arriving as the rx-th out of
// order has just filled, into the spans beyond rcvNxt.
func (c *conn) addSpan(start, end, rx uint64) {
	i := 0
	for i < len(c.spans) && c.spans[i].end < start {
		i++
	}
	j := i
	for j < len(c.spans) && c.spans[j].start <= end {
		start, end = min(start, c.spans[j].start), max(end, c.spans[j].end)
		j++
	}
	switch {
	case j > i: // replaces spans[i:j]
		c.spans[i] = span{start, end, rx}
		c.spans = append(c.spans[:i+1], c.spans[j:]...)
	default:
		c.spans = append(c.spans, span{})
		copy(c.spans[i+1:], c.spans[i:])
		c.spans[i] = span{start, end, rx}
	}
}

// deliver hands the peer's messages that rcvNxt now covers to this end:
// requests to the server's handler, responses to the client's calls.
func (c *conn) deliver(now int64) {
	p := c.peer
	for p.mh < len(p.msgs) {
		m := p.msgs[p.mh]
		if c.client && !c.firstIn && c.rcvNxt > m.start && c.ch < len(c.calls) {
			c.firstIn = true
			c.calls[c.ch].firstResp = now
		}
		if c.rcvNxt < m.end {
			return
		}
		p.msgs[p.mh] = msg{}
		p.mh++
		c.firstIn = false
		if p.mh == len(p.msgs) {
			p.msgs, p.mh = p.msgs[:0], 0
		} else if p.mh >= compactAt && p.mh*2 >= len(p.msgs) {
			p.msgs, p.mh = p.msgs[:copy(p.msgs, p.msgs[p.mh:])], 0
		}
		if c.client {
			c.complete(now, m)
			continue
		}
		if h := c.h.servers[c.local]; h != nil {
			h(&ServerRPC{c: c, Req: m.req, Peer: c.remote, ReqOffset: int64(m.start)})
		}
	}
}

// complete ends the client's oldest call with response m.
func (c *conn) complete(now int64, m msg) {
	if c.ch >= len(c.calls) {
		return
	}
	k := c.calls[c.ch]
	c.calls[c.ch] = call{}
	c.ch++
	c.sentTo = max(c.sentTo, c.ch)
	if c.ch == len(c.calls) {
		c.calls, c.ch, c.sentTo = c.calls[:0], 0, 0
	} else if c.ch >= compactAt && c.ch*2 >= len(c.calls) {
		c.sentTo -= c.ch
		c.calls, c.ch = c.calls[:copy(c.calls, c.calls[c.ch:])], 0
	}
	k.done(Result{RespBytes: int(m.end - m.start - framing), ReqOut: k.reqOut, FirstResp: k.firstResp, Done: now,
		Retrans: int(c.retrans - k.retrans0), Local: netip.AddrPortFrom(c.h.addr, c.local),
		ReqOffset: int64(k.reqStart), RespOffset: int64(m.start)}, nil)
}

// grow opens the window for segs segments acknowledged, while the window
// was what limited the flight (Linux's tcp_is_cwnd_limited).
func (c *conn) grow(segs int, flight uint64) {
	mss := uint64(c.h.cfg.MSS)
	if c.h.cfg.Law == NV && c.nv.blocked {
		return // NV has found a queue: no growth until it finds none
	}
	if c.cwnd < c.ssthresh {
		if flight*2 < uint64(c.cwnd)*mss {
			return
		}
		add := min(segs, c.ssthresh-c.cwnd)
		c.cwnd += add
		segs -= add
		if segs == 0 {
			return
		}
	}
	if flight+mss < uint64(c.cwnd)*mss {
		return
	}
	c.cwndCnt += segs
	if cnt := c.aiCount(); c.cwndCnt >= cnt {
		c.cwnd, c.cwndCnt = c.cwnd+c.cwndCnt/cnt, c.cwndCnt%cnt
	}
}

// aiCount is how many segments acknowledged grow the window by one in
// congestion avoidance: the window for Reno and DCTCP, the law's own for
// BIC and NV.
func (c *conn) aiCount() int {
	switch c.h.cfg.Law {
	case BIC:
		return bicCount(c.cwnd, c.bic)
	case NV:
		return nvCount(c.cwnd, &c.nv)
	}
	return c.cwnd
}

// lossThresh is the slow-start threshold after a loss with flight
// segments in the network: half the flight for Reno and DCTCP, the law's
// own for BIC and NV (from the window, as Linux's tcp_bic and tcp_nv
// compute it). timeout says the loss is a retransmission timeout.
func (c *conn) lossThresh(flight int, timeout bool) int {
	switch c.h.cfg.Law {
	case BIC:
		t := bicLoss(c.cwnd, &c.bic)
		if timeout {
			c.bic = bicState{} // Linux resets BIC on a timeout
		}
		return t
	case NV:
		return nvLoss(c.cwnd, &c.nv, timeout)
	}
	return max(flight/2, 2)
}

// sample updates the RTT estimate and the timeout as Linux does: RTO =
// srtt + max(4 mdev, MinRTO).
func (c *conn) sample(rtt int64) {
	rtt = max(rtt, 1)
	if c.srtt == 0 {
		c.srtt, c.mdev = rtt, rtt/2
	} else {
		d := rtt - c.srtt
		c.srtt += d / 8
		c.mdev += (abs(d) - c.mdev) / 4
	}
	c.rto = c.srtt + max(4*c.mdev, c.h.cfg.MinRTO.Nanoseconds())
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// maxRTO bounds the backed-off timeout (Linux's TCP_RTO_MAX).
const maxRTO = int64(120 * time.Second)

// arm (re)starts the retransmission timer from now.
func (c *conn) arm(now int64) {
	c.rtoAt = now + min(c.rto<<c.backoff, maxRTO)
	c.schedule(c.rtoAt)
}

// schedule has the connection's timer event run by at, unless one is
// already scheduled sooner.
func (c *conn) schedule(at int64) {
	if c.timerAt == 0 || c.timerAt > at {
		c.timerAt = at
		c.h.schedule(at, c.timerFn)
	}
}
