package homa

import (
	"net/netip"
	"time"

	"github.com/homatb/homatb/wire"
)

// pacerFIFOEvery: one pick in this many serves the oldest outbound message
// instead of the shortest (pacer_fifo_fraction 50‰), where the policy
// gives the oldest a share (policy.oldestShare).
const pacerFIFOEvery = 20

// resendGaps bounds the gaps one RESEND round asks for.
const resendGaps = 4

// txBuf returns an empty buffer of the next transmit slot, flushing the
// batch first when it is full.
func (e *Endpoint) txBuf() []byte {
	st := &e.state
	if st.txN == len(st.tx) {
		e.flush()
	}
	slot := &st.tx[st.txN]
	if slot.Buf == nil {
		slot.Buf = make([]byte, 0, e.cfg.MTU)
	}
	return slot.Buf[:0]
}

// txCommit queues the packet built in buf for addr at priority prio.
func (e *Endpoint) txCommit(now time.Duration, buf []byte, addr netip.Addr, t wire.Type, prio uint8) {
	e.txCommitTOS(now, buf, addr, t, prio, TOS(prio))
}

// txCommitTOS is txCommit with the whole TOS byte given (the roce
// variant's ECN bits); a packet whose t is not a Homa type (a RoCE CNP)
// is counted by its sender only.
func (e *Endpoint) txCommitTOS(now time.Duration, buf []byte, addr netip.Addr, t wire.Type, prio, tos uint8) {
	st := &e.state
	st.tx[st.txN] = Packet{Buf: buf, Addr: addr, TOS: tos, Pad: st.txPad}
	st.txN++
	if t.Valid() {
		e.c.txPkts[t.Index()][prio].Add(1)
	}
	e.c.txBytes.Add(uint64(len(buf) + st.txPad))
	if st.paced && t == wire.TypeData {
		// The first DATA after the pacer held some: if its estimate of
		// the link ran dry before now, the wake-up came that much too
		// late and the link idled with packets waiting.
		st.paced = false
		if now > st.linkIdle {
			e.c.pacerLateNs.Add(uint64(now - st.linkIdle))
		}
	}
	// The pacer's estimate of when the link drains, at 99% of its rate.
	st.linkIdle = max(st.linkIdle, now) + wireTime(len(buf)+st.txPad+st.txOver, e.cfg.LinkBps*99/100)
	st.txPad = 0
}

// flush hands the queued packets to the Conn.
func (e *Endpoint) flush() {
	st := &e.state
	if st.txN == 0 {
		return
	}
	if err := e.conn.WriteBatch(st.tx[:st.txN]); err != nil {
		e.c.writeErrors.Add(1)
		e.log.Debug("homa: write failed", "err", err, "packets", st.txN)
	}
	e.c.txBatch.Add(1)
	st.txN = 0
}

// pumpData sends DATA while the pacer allows: SRPT among outbound
// messages, with a FIFO share for the oldest; messages with few bytes left
// bypass the pacer because they cannot build a queue.
func (e *Endpoint) pumpData(now time.Duration) {
	st := &e.state
	for {
		r := e.pickSender()
		if r == nil {
			st.paced = false // an idle link now waits for data, not the pacer
			return
		}
		if r.out.left() > e.cfg.BypassBytes && e.pacerHolds(now) {
			return
		}
		e.sendData(now, r)
		st.sendq.add(r) // its bytes left fell
	}
}

// pacerHolds reports whether the NIC's queue is too far ahead of the link
// for another packet now; if so it sets up the wake-up: a sleep until
// half the backlog has drained, so each wake-up sends several packets
// rather than one, or a poll for short waits. (Waking as soon as a packet
// fits, with the whole backlog queued, would leave more room for a late
// wake-up when the backlog is under two packets, but the queue it keeps
// is deeper, and grants, pulls and answers wait behind it: in the twin,
// scenarios/ai-cluster-idle.yaml's pHost and NDP went from 1.11 to 1.15 of
// their ideal CCT.)
func (e *Endpoint) pacerHolds(now time.Duration) bool {
	st := &e.state
	if st.linkIdle <= now+e.cfg.MaxNICBacklog {
		return false
	}
	st.paced = true
	wait := st.linkIdle - e.cfg.MaxNICBacklog/2 - now
	// A clock that did not move since the last poll is a fake one
	// (testing/synctest): polling would never let it advance.
	if wait < e.cfg.PacerSpin && now != st.spunAt {
		st.spinning, st.spunAt = true, now
	} else {
		// Sooner than an arming for later (a PFC pause since resumed, a
		// queue pair's rate): the link drains now, whatever else waits.
		e.armPacer(now, now+wait)
	}
	e.c.pacerWaits.Add(1)
	return true
}

// armPacer makes the pacer's timer fire by at (a credit or a queue pair's
// rate due then).
func (e *Endpoint) armPacer(now, at time.Duration) {
	st := &e.state
	if !st.armed || at < st.armedAt {
		st.armed, st.armedAt = true, at
		st.pacer.Reset(at - now)
	}
}

// pickSender returns the outbound message to serve next. Ties of bytes
// left go to the older message, as on the receivers (grants, credits) and
// in Linux Homa's throttled list, then to the one queued first: a
// collective's equal step messages would otherwise go newest first, its
// later steps ahead of the one the next host waits for.
func (e *Endpoint) pickSender() *rpc {
	st := &e.state
	best := st.sendq.head()
	if best == nil {
		return nil
	}
	st.picks++
	if st.picks%pacerFIFOEvery == 0 && st.pol.oldestShare() {
		return st.sendq.oldest()
	}
	return best
}

// sendData sends r's next packet: a requested retransmission first, else
// the next new bytes below the grant.
func (e *Endpoint) sendData(now time.Duration, r *rpc) {
	st := &e.state
	o := &r.out
	d := wire.Data{Common: wire.Common{SPort: r.lport, DPort: r.rport, SenderID: r.senderID()},
		MessageLength: o.length, Incoming: o.granted, CutoffVersion: r.peer.cutoffs.version, Flags: o.flags}
	var n uint32
	var prio uint8
	d.Rank = st.pol.rank(o) // before the packet is accounted for: its bytes count
	if len(o.rexmit) > 0 {
		q := &o.rexmit[0]
		d.Offset, n, prio, d.Retransmit = q.start, min(st.pkt, q.end-q.start), q.prio, 1
		q.start += n
		o.owed -= n
		if q.start >= q.end {
			o.rexmit = append(o.rexmit[:0], o.rexmit[1:]...)
		}
		r.info.retransmits++
		e.c.retransmits.Add(1)
	} else {
		d.Offset, n = o.next, min(st.pkt, o.granted-o.next)
		o.next += n
		prio = o.schedPrio
		if d.Offset < o.unsched {
			left := o.length
			if st.rule.graduated { // homaconf.Config.Graduated
				left -= d.Offset
			}
			prio = st.pol.blindLevel(r.peer, left)
		}
	}
	if r.client && len(r.peer.acks) > 0 {
		a := r.peer.acks[len(r.peer.acks)-1]
		r.peer.acks = r.peer.acks[:len(r.peer.acks)-1]
		d.AckID, d.AckPort = a.id, a.port
	}
	buf := wire.AppendData(e.txBuf(), &d)
	buf = e.appendBody(buf, o, d.Offset, n)
	e.txCommit(now, buf, r.peer.addr, wire.TypeData, prio)
	if d.Retransmit == 0 && o.next == o.length {
		e.lastByteSent(now, r)
	}
}

// lastByteSent notes that r's outbound message has been sent once.
func (e *Endpoint) lastByteSent(now time.Duration, r *rpc) {
	if r.client {
		r.info.requestSent = now
		// The response cannot begin before the request is out: silence
		// counts from here.
		r.heard = max(r.heard, now)
		return
	}
	if r.state == srvResponding {
		r.state = srvAwaitAck
		r.silent = 0
		e.c.served.Add(1)
	}
}

// sendControl sends a header-only packet (BUSY, RPC_UNKNOWN, NEED_ACK).
func (e *Endpoint) sendControl(now time.Duration, addr netip.Addr, c wire.Common) {
	e.txCommit(now, wire.AppendHeaderOnly(e.txBuf(), &c), addr, c.Type, e.state.ctrlPrio)
}

// sendStartMsg announces r's outbound message (homaconf.Config.StartMsg,
// pHost's RTS) at level prio.
func (e *Endpoint) sendStartMsg(now time.Duration, r *rpc, prio uint8) {
	o := &r.out
	s := wire.StartMsg{Common: r.header(wire.TypeStartMsg), MessageLength: o.length, CutoffVersion: r.peer.cutoffs.version, Flags: o.flags}
	e.txCommit(now, wire.AppendStartMsg(e.txBuf(), &s), r.peer.addr, wire.TypeStartMsg, prio)
}

// header returns the common header of a control packet about r.
func (r *rpc) header(t wire.Type) wire.Common {
	return wire.Common{SPort: r.lport, DPort: r.rport, SenderID: r.senderID(), Type: t}
}

// grantNow runs the grant scheduler and sends its GRANTs.
func (e *Endpoint) grantNow() {
	st := &e.state
	st.schedDue = false
	now := e.now()
	for _, g := range st.sched.schedule() {
		r := g.m.rpc
		e.sendGrant(now, r, g.offset, g.prio)
		e.c.grantsBy[g.prio].Add(1)
		if g.fifo {
			e.c.fifo.Add(1)
		}
		r.info.grantsSent++
		r.traceGrant(now, g.offset, g.prio, true)
	}
	e.c.setActive(st.sched.numActive())
	e.c.incomingBytes.Store(uint64(st.sched.incoming()))
}

// sendGrant lets r's sender send up to offset, at level prio: a GRANT, or
// a pHost token.
func (e *Endpoint) sendGrant(now time.Duration, r *rpc, offset uint32, prio uint8) {
	g := wire.Grant{Common: r.header(wire.TypeGrant), Offset: offset, Priority: prio}
	e.txCommit(now, wire.AppendGrant(e.txBuf(), &g), r.peer.addr, wire.TypeGrant, e.state.ctrlPrio)
}

// requestResend asks r's peer for the missing bytes of r's inbound
// message.
func (e *Endpoint) requestResend(now time.Duration, r *rpc) {
	st := &e.state
	m := &r.in
	if !m.started {
		// Ask for the first packet only, at the top level: ResendAll
		// would also grant the sender its whole message.
		rs := wire.Resend{Common: r.header(wire.TypeResend), Priority: st.ctrlPrio, Length: st.pkt}
		e.sendResend(now, r, &rs)
		return
	}
	// Retransmissions go at the level of the message's last grant, or of
	// its unscheduled packets if it had none, not Linux's highest: after a
	// false alarm (bytes delayed behind higher priorities, not lost)
	// copies at the top level would jump ahead of the very queue that
	// delays them and double it. For the same reason a round asks for one
	// packet of each gap; when that packet comes back and the rest of its
	// gap is still missing, the gap was lost, not queued, and onData asks
	// for the rest of it whole (resendRest), so a burst of losses is
	// repaired in one round and a round trip. Lost GRANTs are covered
	// too: the probe implies a grant, and its arrival makes the scheduler
	// grant again.
	rs := wire.Resend{Common: r.header(wire.TypeResend), Priority: m.prio}
	m.wholeAsked = 0
	st.gaps = m.got.gaps(st.gaps[:0], m.granted, resendGaps)
	for _, g := range st.gaps {
		rs.Offset, rs.Length = g.start, min(g.end-g.start, st.pkt)
		e.sendResend(now, r, &rs)
	}
	// Nothing came past some of the granted bytes: the GRANT that let
	// them go may be what was lost. Asking for one packet of them would
	// grant only that packet, a packet a resend interval.
	if len(st.gaps) > 0 && m.got.end() < m.granted {
		st.pol.regrant(now, m)
	}
}

// resendRest asks, after a retransmitted packet ending at end arrived,
// for the rest of the gap it began, whole: the probe overtook bytes that
// five silent ticks did not bring, so they are lost. Once per gap and
// round.
func (e *Endpoint) resendRest(now time.Duration, r *rpc, end uint32) {
	m := &r.in
	if end >= m.granted || end < m.wholeAsked {
		return
	}
	st := &e.state
	st.gaps = m.got.gaps(st.gaps[:0], m.granted, resendGaps)
	for _, g := range st.gaps {
		if g.start == end {
			rs := wire.Resend{Common: r.header(wire.TypeResend), Priority: m.prio, Offset: g.start, Length: g.end - g.start}
			m.wholeAsked = g.end
			e.sendResend(now, r, &rs)
			return
		}
	}
}

func (e *Endpoint) sendResend(now time.Duration, r *rpc, rs *wire.Resend) {
	if r.suspect == 0 {
		r.suspect = max(r.heard, 1)
	}
	e.txCommit(now, wire.AppendResend(e.txBuf(), rs), r.peer.addr, wire.TypeResend, e.state.ctrlPrio)
	e.c.resendsSent.Add(1)
	r.info.resends++
	r.resent = true
}

// queueAck records that the server RPC ref at p may be forgotten; acks
// ride on DATA to p or go out in ACK packets at the next tick.
func (e *Endpoint) queueAck(p *peer, ref ackRef) {
	p.acks = append(p.acks, ref)
	if !p.ackQueued {
		p.ackQueued = true
		e.state.ackPeers = append(e.state.ackPeers, p)
	}
}

// flushAcks sends ACK packets for every pending ack.
func (e *Endpoint) flushAcks(now time.Duration) {
	st := &e.state
	for _, p := range st.ackPeers {
		for len(p.acks) > 0 {
			// sender_id names an RPC the packet acks (Linux: the RPC that
			// made it); that RPC is in the list as well.
			ref := p.acks[len(p.acks)-1]
			a := wire.Ack{Common: wire.Common{SPort: e.cfg.ClientPort, DPort: ref.port, SenderID: ref.id}}
			for a.NumAcks < wire.MaxAcks && len(p.acks) > 0 {
				ref := p.acks[len(p.acks)-1]
				p.acks = p.acks[:len(p.acks)-1]
				a.Acks[a.NumAcks] = wire.AckEntry{ClientID: ref.id, ServerPort: ref.port}
				a.NumAcks++
			}
			e.txCommit(now, wire.AppendAck(e.txBuf(), &a), p.addr, wire.TypeAck, st.ctrlPrio)
		}
		p.ackQueued = false
	}
	clear(st.ackPeers)
	st.ackPeers = st.ackPeers[:0]
}

// sendCutoffs gives p our current cutoffs, at most once per tick.
func (e *Endpoint) sendCutoffs(now time.Duration, p *peer, c *wire.Common) {
	st := &e.state
	if p.cutoffTick == st.tick+1 {
		return
	}
	p.cutoffTick = st.tick + 1 // +1 so that the zero value means "never"
	// sender_id names our side of the RPC whose DATA asked, as Linux's.
	cp := wire.Cutoffs{Common: wire.Common{SPort: c.DPort, DPort: c.SPort, SenderID: c.LocalID()}, Cutoffs: st.cut.cut, Version: st.cut.version}
	e.txCommit(now, wire.AppendCutoffs(e.txBuf(), &cp), p.addr, wire.TypeCutoffs, st.ctrlPrio)
}

// wireTime is how long n bytes occupy a link of bps.
func wireTime(n int, bps uint64) time.Duration {
	return time.Duration(uint64(n) * 8 * uint64(time.Second) / bps)
}
