package homa

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatb/homatb/wire"
)

// A Call fails with ErrPeerUnknown after maxRefusals restarts on an
// RPC_UNKNOWN that answered its DATA (nobody serves the port: end
// quickly), or after maxRestarts in all. An RPC_UNKNOWN that answers a
// RESEND means the request was lost before the server saw it, which at
// 10% loss happens three times in a row to one RPC in a thousand, so
// those restarts only count towards the larger bound.
const (
	maxRefusals = 3
	maxRestarts = 16
)

// handlePacket hands one packet to the Endpoint's protocol.
func (e *Endpoint) handlePacket(now time.Duration, p *Packet) { e.proto.receive(now, p) }

// receiveHoma decodes one packet of the Homa family and dispatches it by
// type. Malformed packets, and packets about an RPC from anyone but its
// peer, are dropped and counted by reason (defend.go).
func (e *Endpoint) receiveHoma(now time.Duration, p *Packet) {
	b := p.Buf
	c, err := wire.ParseCommon(b)
	if err != nil {
		e.dropErr(err)
		return
	}
	if !e.state.pol.accepts(c.Type) {
		e.drop(DropWrongVariant)
		return
	}
	e.c.rxPkts[c.Type.Index()][Priority(p.TOS)].Add(1)
	e.c.rxBytes.Add(uint64(len(b)))
	r := e.lookup(p.Addr, &c)
	if r != nil && !e.cfg.DisableDefences && !fromPeer(p.Addr, &c, r) {
		e.drop(DropWrongPeer)
		return
	}
	if r != nil {
		// GRANT and BUSY show the peer is working on the RPC (DATA too,
		// in onData); a RESEND or other control packet shows only that it
		// is alive, and must not hold off our own RESENDs (Linux resets
		// silent_ticks on the same three types).
		if c.Type == wire.TypeGrant || c.Type == wire.TypeBusy {
			r.progress(now)
		}
		if c.Type == wire.TypeBusy {
			r.suspect = 0 // the peer was only slow
		}
	}
	switch c.Type {
	case wire.TypeData:
		if c.Trimmed() {
			e.onTrimmed(now, p.Addr, b, r)
			return
		}
		e.onData(now, p.Addr, b, Priority(p.TOS), r)
	case wire.TypeGrant:
		e.onGrant(now, b, r)
	case wire.TypeResend:
		e.onResend(now, p.Addr, b, &c, r)
	case wire.TypeRPCUnknown:
		e.onUnknown(now, r)
	case wire.TypeBusy:
		// silent already reset: BUSY only says "alive".
	case wire.TypeCutoffs:
		e.onCutoffs(p.Addr, b)
	case wire.TypeNeedAck:
		if r == nil || r.dead { // we are the client and have finished it
			a := wire.Ack{Common: wire.Common{SPort: c.DPort, DPort: c.SPort, SenderID: c.LocalID()}}
			e.txCommit(now, wire.AppendAck(e.txBuf(), &a), p.Addr, wire.TypeAck, e.state.ctrlPrio)
		}
	case wire.TypeAck:
		e.onAck(p.Addr, b)
	case wire.TypeStartMsg:
		e.onStartMsg(now, p.Addr, b, Priority(p.TOS), r)
	case wire.TypePull, wire.TypeNack:
		e.state.pol.control(now, b, c.Type, r)
	}
}

// onTrimmed handles a DATA packet whose payload a switch trimmed, as the
// policy does.
func (e *Endpoint) onTrimmed(now time.Duration, addr netip.Addr, b []byte, r *rpc) {
	d, err := wire.ParseTrimmed(b)
	if err != nil {
		e.dropErr(err)
		return
	}
	e.state.pol.trimmed(now, addr, d, r)
}

// onData handles a DATA packet that arrived at priority prio.
func (e *Endpoint) onData(now time.Duration, addr netip.Addr, b []byte, prio uint8, r *rpc) {
	st := &e.state
	d, payload, err := wire.ParseData(b)
	if err != nil {
		e.dropErr(err)
		return
	}
	if d.MessageLength > e.cfg.MaxMessageBytes {
		e.drop(DropTooLarge)
		return
	}
	if d.AckID != 0 && d.FromClient() {
		e.forgetAcked(addr, d.AckID)
	}
	if r = e.inboundRPC(now, addr, &d, r); r == nil || !e.beginIn(now, addr, &d, prio, r) {
		return
	}
	m := &r.in
	if end := d.Offset + uint32(len(payload)); end > m.size && !e.growIn(r, end) {
		e.refuseIn(r)
		return
	}
	fresh := m.got.add(d.Offset, d.Offset+uint32(len(payload)))
	if fresh == 0 {
		e.c.dupData.Add(1)
		return
	}
	keepBody(m.buf, d.Offset, payload)
	m.received += fresh
	if d.Retransmit != 0 {
		r.lost(now)
		// The rest of the gap is lost only if the retransmission answers
		// our RESEND, sent after silent ticks (policy.restLost).
		if st.pol.restLost(r) {
			e.resendRest(now, r, d.Offset+uint32(len(payload)))
		}
	}
	st.schedDue = true
	if m.received < m.length {
		st.pol.arrived(m)
		return
	}
	st.sched.remove(m)
	e.release(r)
	if r.client {
		e.finishCall(now, r, m.buf, nil)
		return
	}
	e.deliver(r)
}

// inboundRPC returns the RPC a packet that carries (or announces) a
// message's bytes belongs to, creating a server RPC for a new request;
// nil, counted, when there is none to give the bytes to.
func (e *Endpoint) inboundRPC(now time.Duration, addr netip.Addr, d *wire.Data, r *rpc) *rpc {
	if d.FromClient() && r == nil {
		if r = e.newServerRPC(now, addr, d); r == nil {
			return nil
		}
	}
	switch {
	case r == nil:
		e.c.unknownRPC.Add(1)
		return nil
	case !r.client && r.state != srvReceiving:
		e.c.dupData.Add(1) // late copy of a request already complete
		return nil
	}
	r.progress(now)
	return r
}

// beginIn starts r's inbound message on its first DATA (or START_MSG)
// packet d, which arrived at priority prio, checks later ones against it,
// and answers a stale cutoff version; false for a packet to drop.
func (e *Endpoint) beginIn(now time.Duration, addr netip.Addr, d *wire.Data, prio uint8, r *rpc) bool {
	st := &e.state
	m := &r.in
	if !m.started {
		if !e.charge(r, rpcCharge) {
			e.refuseIn(r)
			return false
		}
		m.started, m.length, m.birth, m.peer, m.rpc = true, d.MessageLength, now, addr, r
		m.prio = prio          // the unscheduled level, until a grant sets another
		m.buf, m.size = nil, 0 // grown as bytes arrive: the length is only a claim
		// What the sender may send unasked comes from the first packet
		// only, as homa_message_in_init: every later rise is this
		// receiver's own grant or RESEND. A late packet of a message the
		// receiver timed out and its sender restarted carries the old
		// incarnation's grants, which the new one knows nothing of: taken
		// up, they filled the receiver's window with bytes nobody would
		// send, and the message crawled a packet a RESEND round.
		m.received, m.granted = 0, min(d.Incoming, d.MessageLength)
		m.unschedOnly = d.Incoming >= d.MessageLength
		e.observeLength(d.MessageLength)
		if r.client {
			r.info.firstResponse = now
		}
	} else if d.MessageLength != m.length {
		e.drop(DropLengthMismatch)
		return false
	}
	if d.CutoffVersion != st.cut.version && st.prios > 1 {
		st.pol.staleCutoffs(now, r.peer, d.Common)
	}
	return true
}

// refuseIn drops a packet of r's inbound message that the memory bound
// refuses. A server RPC that has received nothing yet is forgotten, so a
// refused flood leaves nothing behind; its client, if honest, restarts it
// on the RPC_UNKNOWN its RESEND draws.
func (e *Endpoint) refuseIn(r *rpc) {
	e.drop(DropInMemory)
	if !r.client && r.in.received == 0 {
		e.forgetServer(r, false)
	}
}

// onStartMsg handles a START_MSG: the sender of a message that needs
// grants sends no unscheduled bytes and announces it instead, so the
// scheduler grants it from byte 0.
func (e *Endpoint) onStartMsg(now time.Duration, addr netip.Addr, b []byte, prio uint8, r *rpc) {
	s, err := wire.ParseStartMsg(b)
	if err != nil {
		e.dropErr(err)
		return
	}
	if s.MessageLength > e.cfg.MaxMessageBytes {
		e.drop(DropTooLarge)
		return
	}
	d := wire.Data{Common: s.Common, MessageLength: s.MessageLength, CutoffVersion: s.CutoffVersion, Flags: s.Flags}
	if r = e.inboundRPC(now, addr, &d, r); r == nil || !e.beginIn(now, addr, &d, prio, r) {
		return
	}
	if m := &r.in; m.received < m.length {
		e.state.pol.track(m)
		e.state.schedDue = true
	}
}

// newServerRPC creates the server side of an RPC on its first DATA packet,
// or answers RPC_UNKNOWN when no server listens on the port.
func (e *Endpoint) newServerRPC(now time.Duration, addr netip.Addr, d *wire.Data) *rpc {
	st := &e.state
	p := e.peer(addr)
	if _, ok := p.tombs.get(d.SenderID); ok {
		e.c.dupData.Add(1)
		return nil
	}
	if st.ports[d.DPort] == nil {
		e.sendControl(now, addr, wire.Common{SPort: d.DPort, DPort: d.SPort, SenderID: d.LocalID(), Type: wire.TypeRPCUnknown})
		e.c.unknownRPC.Add(1)
		return nil
	}
	r := &rpc{id: d.SenderID, peer: p, lport: d.DPort, rport: d.SPort, state: srvReceiving,
		incast: d.Flags&wire.FlagIncast != 0, heard: now}
	p.servers[d.SenderID] = r
	return r
}

// deliver hands a complete request to its server, or drops the RPC when
// the server's backlog is full (the client will recover by restarting).
func (e *Endpoint) deliver(r *rpc) {
	srv := e.state.ports[r.lport]
	if srv != nil {
		r.state = srvServing
		sr := &r.handle // part of r: one allocation less per request
		sr.e, sr.r, sr.req, sr.length, sr.from = e, r, r.in.buf, r.in.length, netip.AddrPortFrom(r.peer.addr, r.rport)
		if srv.offer(sr) {
			r.in.buf = nil
			e.state.handoffs++
			return
		}
	}
	e.c.backlogDrops.Add(1)
	e.forgetServer(r, false)
}

func (e *Endpoint) onGrant(now time.Duration, b []byte, r *rpc) {
	g, err := wire.ParseGrant(b)
	if err != nil {
		e.dropErr(err)
		return
	}
	if !e.sending(r) {
		return
	}
	if g.Offset > r.out.length && !e.cfg.DisableDefences { // no receiver grants past the end
		e.drop(DropBadRange)
		return
	}
	e.credit(now, r, g.Offset, g.Priority)
}

// sending reports whether r has an outbound message for a GRANT, PULL or
// NACK to be about; the packet is counted as unknown otherwise.
func (e *Endpoint) sending(r *rpc) bool {
	if r == nil || r.out.data == nil {
		e.c.unknownRPC.Add(1)
		return false
	}
	return true
}

// credit lets r's outbound message go up to offset, at priority prio: a
// GRANT (Homa, pHost's tokens) or a PULL (NDP).
func (e *Endpoint) credit(now time.Duration, r *rpc, offset uint32, prio uint8) {
	o := &r.out
	o.schedPrio = prio
	if off := min(offset, o.length); off > o.granted {
		o.granted = off
		e.enqueue(r)
	}
	r.info.grantsReceived++
	r.traceGrant(now, offset, prio, false)
	if r.info.firstGrant == 0 {
		r.info.firstGrant = now
	}
	r.info.lastGrant = now
}

func (e *Endpoint) onResend(now time.Duration, addr netip.Addr, b []byte, c *wire.Common, r *rpc) {
	rs, err := wire.ParseResend(b)
	if err != nil {
		e.dropErr(err)
		return
	}
	e.c.resendsRecv.Add(1)
	// Every answer costs a packet or a retransmission: at most
	// ResendLimit per source address and tick.
	if st := &e.state; !e.cfg.DisableDefences && !st.resends.allow(addr, st.tick, e.cfg.ResendLimit) {
		e.drop(DropResendLimited)
		return
	}
	if r == nil {
		e.sendControl(now, addr, wire.Common{SPort: c.DPort, DPort: c.SPort, SenderID: c.LocalID(), Type: wire.TypeRPCUnknown})
		return
	}
	r.info.resends++
	if !r.client && (r.state == srvReceiving || r.state == srvServing) {
		e.sendControl(now, addr, r.header(wire.TypeBusy)) // the response is not ready yet
		e.c.busySent.Add(1)
		return
	}
	// The peer is still receiving our message: not a silence that should
	// end it (a response fully sent waits here for its ACK).
	o := &r.out
	if rs.Offset >= o.length && !e.cfg.DisableDefences {
		e.drop(DropBadRange)
		return
	}
	r.silent = 0
	end := o.length
	if rs.Length != wire.ResendAll {
		end = min(o.length, rs.Offset+rs.Length)
	}
	if rs.Offset >= end {
		return
	}
	// A RESEND also grants: the GRANT that allowed these bytes may be lost.
	o.granted = max(o.granted, end)
	if sent := min(end, o.next); rs.Offset < sent {
		o.resend(resendReq{span{rs.Offset, sent}, rs.Priority})
	} else {
		// Not sent yet (the pacer's SRPT holds it back): say we are alive,
		// or the receiver would time the message out (homa_resend_pkt).
		e.sendControl(now, addr, r.header(wire.TypeBusy))
		e.c.busySent.Add(1)
	}
	e.enqueue(r)
}

// onUnknown handles RPC_UNKNOWN: a client restarts its request from the
// first byte; a server forgets the RPC.
func (e *Endpoint) onUnknown(now time.Duration, r *rpc) {
	st := &e.state
	if r == nil {
		return
	}
	if !r.client {
		e.forgetServer(r, r.state != srvReceiving)
		return
	}
	if r.restart == st.tick+1 { // at most one restart per tick
		return
	}
	r.restart = st.tick + 1
	r.restarts++
	r.lost(now) // the request, or all the server had of it, was lost
	if !r.resent {
		r.refusals++
	}
	r.resent = false
	r.info.restarts++
	e.c.restarts.Add(1)
	if (r.refusals > maxRefusals || r.restarts > maxRestarts) && !r.in.started {
		e.finishCall(now, r, nil, fmt.Errorf("homa: call %d to %v: %w", r.id, r.peer.addr, ErrPeerUnknown))
		return
	}
	if r.in.tracked {
		st.sched.remove(&r.in)
	}
	if r.in.credited {
		st.pol.untrack(&r.in)
	}
	e.release(r)
	r.in.got.reset()
	r.in = msgIn{got: r.in.got}
	r.progress(now) // the RPC starts afresh
	e.startMessage(now, r, body{data: r.out.data, length: r.out.length}, r.out.unsched, r.out.flags)
}

func (e *Endpoint) onCutoffs(addr netip.Addr, b []byte) {
	c, err := wire.ParseCutoffs(b)
	if err != nil {
		e.dropErr(err)
		return
	}
	p := e.peer(addr)
	p.cutoffs = cutoffTable{cut: c.Cutoffs, version: c.Version}
	p.cutoffs.cut[0] = anyLength // as homa_cutoffs_pkt: level 0 takes what no other level admits
}

func (e *Endpoint) onAck(addr netip.Addr, b []byte) {
	a, err := wire.ParseAck(b)
	if err != nil {
		e.dropErr(err)
		return
	}
	if a.SenderID != 0 && a.FromClient() {
		e.forgetAcked(addr, a.SenderID)
	}
	for _, ack := range a.Acks[:a.NumAcks] {
		e.forgetAcked(addr, ack.ClientID)
	}
}

// forgetAcked frees a server RPC its client has acknowledged.
func (e *Endpoint) forgetAcked(addr netip.Addr, id uint64) {
	p := e.state.peers[v4(addr)]
	if p == nil {
		return
	}
	// A response still waiting for grants is acked too when the client
	// gave the RPC up (its answer to our NEED_ACK).
	if r := p.servers[id]; r != nil && (r.state == srvAwaitAck || r.state == srvResponding) {
		e.c.acked.Add(1)
		e.forgetServer(r, true)
	}
}

// observeLength records an inbound message length for dynamic cutoffs.
func (e *Endpoint) observeLength(n uint32) {
	st := &e.state
	if !st.dynamic {
		return
	}
	if len(st.sizes) < st.sizeCap {
		st.sizes = append(st.sizes, n)
	} else {
		st.sizes[st.sizePos] = n
		st.sizePos = (st.sizePos + 1) % len(st.sizes)
	}
	st.sizeNew++
}
