package homa

import (
	"net/netip"
	"slices"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/linkpause"
	"github.com/homatb/homatb/wire"
)

// The roce variant (homaconf.VariantRoCE): RoCEv2 reliable connections
// as a protocol of the engine (protocol.go). The engine keeps what it
// does for every transport — the RPC API and records, the peers, the Conn
// and its transmit batch, the pacer's model of the link, the ticks — and
// this file replaces Homa's per-message packets with a queue pair's: each
// message is a SEND of MTU packets numbered by the queue pair's PSNs,
// the responder accepts packets in sequence only and acknowledges them,
// a NAK or a timeout sends the requester back to the first
// unacknowledged packet (go-back-N), and DCQCN sets each queue pair's
// rate from the CNPs its responder sends for ECN-marked packets.
// docs/transports.md ("RoCE") describes it and its departures from a NIC.

// roceQPBase is the first queue pair number; queue pair i to a peer is
// roceQPBase+i on both hosts (the numbers a connection manager would
// exchange are fixed by the index here).
const roceQPBase = 0x100

// roceMaxRetries is RoCE's largest retry count: after this many timeouts
// in a row without progress a queue pair stops counting them as fresh
// losses (it keeps retrying; the Calls time out on their own).
const roceMaxRetries = 7

// ECN codepoints in the TOS byte's low bits.
const (
	ecnECT0 = 0x02
	ecnCE   = 0x03
)

// roceProtocol is the roce variant's protocol: its queue pairs and DCQCN
// settings.
type roceProtocol struct {
	e     *Endpoint
	qps   map[uint64]*roceQP // by qpKey
	list  []*roceQP          // in creation order: ticks and the pacer scan it
	rr    int                // where the pacer's round robin starts
	pl    uint32             // payload of a full packet
	clist []*rpc             // scratch: clients in id order for a tick
	dc    dcqcnParams
	// pausedUntil is when the switch's last PFC PAUSE for the data's
	// priority ends (a resume sets it to its arrival); pausedSince when
	// the current or last pause began.
	pausedUntil, pausedSince time.Duration
}

// roceOut is a message on a queue pair's send queue: PSNs first to
// first+n-1 (as a 64-bit count that never wraps; the wire carries 24 bits).
type roceOut struct {
	r     *rpc
	first uint64
	n     uint64
}

// roceQP is one reliable connection to a peer: the requester's send queue
// and the responder's receive state, as a NIC keeps them per queue pair.
type roceQP struct {
	addr netip.Addr
	peer *peer
	qpn  uint32

	// Requester. out holds the messages not yet fully acknowledged, in
	// PSN order; next is the PSN after the last queued packet, sndNxt
	// the next to send, sndUna the oldest unacknowledged, maxSent one
	// past the highest ever sent.
	out                           []roceOut
	next, sndNxt, sndUna, maxSent uint64
	ackTick                       uint64 // tick of the last acknowledged progress
	retries                       int    // timeouts in a row
	nextAt                        time.Duration
	cc                            dcqcn

	// Responder. ePSN is the next PSN expected (24 bits); cur the RPC
	// whose message is being assembled (nil: none, or one with no taker
	// when discard is set); curFirst the PSN of its first packet.
	ePSN, curFirst uint32
	msn            uint32
	nakSent        bool
	cur            *rpc
	discard        bool
	cnpAt          time.Duration
	cnpSent        bool
	heardTick      uint64
}

func qpKey(addr netip.Addr, qpn uint32) uint64 { return uint64(v4(addr))<<32 | uint64(qpn) }

// newRoCE builds e's roce protocol.
func newRoCE(e *Endpoint) *roceProtocol {
	return &roceProtocol{e: e, qps: map[uint64]*roceQP{}, pl: e.cfg.RoCEPayload(), dc: newDCQCNParams(e.cfg)}
}

func (rp *roceProtocol) receive(now time.Duration, p *Packet) { rp.onRoCE(now, p) }

// startOut queues data as r's message: RoCE has no blind bytes (its queue
// pair's DCQCN rate is the only limit) and no DATA flags.
func (rp *roceProtocol) startOut(now time.Duration, r *rpc, b body, _ uint32, _ uint8) {
	rp.roceStartOut(now, r, b)
}

func (rp *roceProtocol) send() { rp.pumpRoCE(rp.e.now()) }

func (rp *roceProtocol) tick(now time.Duration) int {
	rp.roceTick(now)
	return rp.e.serverCount()
}

func (rp *roceProtocol) callDone(r *rpc, err error) { rp.roceDone(r, err) }

// encapBytes: RoCEv2 rides in UDP.
func (rp *roceProtocol) encapBytes() int { return wire.UDPHeaderLen }

// start has the Endpoint obey the PFC PAUSE frames its Conn receives,
// when it receives them.
func (rp *roceProtocol) start(conn Conn) {
	e := rp.e
	pr, ok := conn.(PauseReader)
	if u, has := conn.(interface{ PauseUnavailable() error }); ok && has {
		if err := u.PauseUnavailable(); err != nil {
			e.log.Warn("homa: roce does not obey PFC PAUSE frames", "err", err)
			return
		}
	}
	if !ok {
		return
	}
	e.wg.Add(1)
	go rp.pauses(pr)
}

func (rp *roceProtocol) pausePriority() uint { return uint(rp.e.cfg.RoCEPriority) }

// qp returns queue pair qpn to addr, creating it on first use.
func (rp *roceProtocol) qp(addr netip.Addr, qpn uint32) *roceQP {
	e := rp.e
	k := qpKey(addr, qpn)
	q := rp.qps[k]
	if q == nil {
		q = &roceQP{addr: addr, peer: e.peer(addr), qpn: qpn, cc: newDCQCN(&rp.dc)}
		rp.qps[k] = q
		rp.list = append(rp.list, q)
	}
	return q
}

// qpOf is the queue pair RPC r's messages use: both sides derive it from
// the client's id.
func (rp *roceProtocol) qpOf(r *rpc) *roceQP {
	e := rp.e
	return rp.qp(r.peer.addr, roceQPBase+uint32((r.id>>1)%uint64(e.cfg.RoCEQPsPerPeer)))
}

// roceStartOut queues data as r's outbound message on its queue pair.
func (rp *roceProtocol) roceStartOut(now time.Duration, r *rpc, b body) {
	e := rp.e
	r.out = msgOut{data: b.data, length: b.length, birth: now}
	q := rp.qpOf(r)
	pl := uint64(rp.pl)
	n := (wire.RoCEMsgHeaderLen + uint64(b.length) + pl - 1) / pl
	if q.sndUna == q.maxSent && q.sndNxt == q.next {
		q.ackTick = e.state.tick // nothing was outstanding: the timeout starts now
	}
	q.out = append(q.out, roceOut{r: r, first: q.next, n: n})
	q.next += n
}

// roceDone is told that Call r ended: a response proves that the server
// had the whole request and every earlier message of the queue pair
// (delivery is in order), which acknowledges them; a failed Call's
// request is copied if it may still go out, since its caller owns the
// bytes again.
func (rp *roceProtocol) roceDone(r *rpc, err error) {
	q := rp.qpOf(r)
	for i := range q.out {
		o := &q.out[i]
		if o.r != r {
			continue
		}
		if err == nil {
			rp.roceAcked(q, o.first+o.n)
		} else {
			r.out.data = slices.Clone(r.out.data)
		}
		return
	}
}

// pumpRoCE sends the packets the queue pairs' rates and the link allow,
// round robin over the queue pairs, as a NIC's scheduler does.
func (rp *roceProtocol) pumpRoCE(now time.Duration) {
	e := rp.e
	for range 1 << 16 { // bounded: each pass sends a packet or returns
		var pick *roceQP
		wake := time.Duration(-1)
		for i := range rp.list {
			q := rp.list[(rp.rr+i)%len(rp.list)]
			if q.sndNxt >= q.next {
				continue
			}
			if q.nextAt > now {
				if wake < 0 || q.nextAt < wake {
					wake = q.nextAt
				}
				continue
			}
			pick, rp.rr = q, (rp.rr+i+1)%len(rp.list)
			break
		}
		if pick == nil {
			e.state.paced = false
			if wake >= 0 {
				e.armPacer(now, wake)
			}
			return
		}
		if rp.pausedUntil > now { // PFC: the switch paused the data's priority
			e.armPacer(now, rp.pausedUntil)
			return
		}
		if e.pacerHolds(now) {
			return
		}
		rp.roceSend(now, pick)
	}
}

// roceSend sends q's packet sndNxt.
func (rp *roceProtocol) roceSend(now time.Duration, q *roceQP) {
	e := rp.e
	pl := uint64(rp.pl)
	k := 0
	for k < len(q.out)-1 && q.out[k].first+q.out[k].n <= q.sndNxt {
		k++
	}
	o := &q.out[k]
	r, i := o.r, q.sndNxt-o.first
	h := wire.BTH{PKey: wire.DefaultPKey, DestQP: q.qpn, PSN: uint32(q.sndNxt) & wire.PSNMask}
	switch {
	case o.n == 1:
		h.Opcode = wire.OpSendOnly
	case i == 0:
		h.Opcode = wire.OpSendFirst
	case i == o.n-1:
		h.Opcode = wire.OpSendLast
	default:
		h.Opcode = wire.OpSendMiddle
	}
	// Go-back-0 acknowledges whole messages only: its responder may drop
	// a partial message, which must not have been acknowledged in part.
	h.AckReq = i == o.n-1 || (!e.cfg.RoCEGoBack0 && h.PSN%uint32(e.cfg.RoCEAckEvery) == 0)
	buf := wire.AppendBTH(e.txBuf(), &h)
	length := uint64(r.out.length)
	if i == 0 {
		mh := wire.RoCEMsgHeader{ID: r.senderID(), SPort: r.lport, DPort: r.rport, Length: r.out.length}
		n := len(buf)
		buf = append(buf, make([]byte, wire.RoCEMsgHeaderLen)...)
		mh.Put(buf[n:])
		buf = e.appendBody(buf, &r.out, 0, uint32(min(length, pl-wire.RoCEMsgHeaderLen)))
	} else {
		off := i*pl - wire.RoCEMsgHeaderLen
		buf = e.appendBody(buf, &r.out, uint32(off), uint32(min(length, off+pl)-off))
	}
	if e.state.txPad > 0 {
		e.state.txPad += wire.ICRCLen // zero, and read by nobody: it may go uncarried too
	} else {
		buf = wire.AppendICRC(buf)
	}
	prio := uint8(e.cfg.RoCEPriority)
	pktLen := len(buf) + e.state.txPad
	e.txCommitTOS(now, buf, q.addr, wire.TypeData, prio, TOS(prio)|ecnECT0)
	q.sndNxt++
	if q.sndNxt > q.maxSent {
		q.maxSent = q.sndNxt
		if i == o.n-1 {
			e.lastByteSent(now, r)
		}
	} else {
		if !r.dead { // a finished RPC's record is its caller's
			r.info.retransmits++
		}
		e.c.retransmits.Add(1)
	}
	if !e.cfg.RoCENoDCQCN {
		wireLen := pktLen + homaconf.IPHeaderLen + wire.UDPHeaderLen + e.cfg.FrameOverhead
		q.cc.sent(now, &rp.dc, uint32(wireLen))
		q.nextAt = max(q.nextAt, now) + wireTime(wireLen, uint64(q.cc.rc))
	}
}

// onRoCE handles one RoCEv2 packet (the UDP payload p.Buf).
func (rp *roceProtocol) onRoCE(now time.Duration, p *Packet) {
	e := rp.e
	pk, err := wire.ParseRoCE(p.Buf)
	if err != nil || pk.PKey != wire.DefaultPKey || pk.DestQP < roceQPBase || pk.DestQP >= roceQPBase+uint32(e.cfg.RoCEQPsPerPeer) {
		e.c.malformed.Add(1)
		return
	}
	e.c.rxBytes.Add(uint64(len(p.Buf)))
	q := rp.qp(p.Addr, pk.DestQP)
	q.heardTick = e.state.tick
	prio := Priority(p.TOS)
	switch {
	case pk.Opcode == wire.OpCNP:
		e.c.cnpRecv.Add(1)
		q.cc.cnp(now, &rp.dc)
		e.c.rateCuts.Add(1)
	case pk.Opcode == wire.OpAck && pk.Syndrome&0xe0 == wire.SyndromeNakPSN&0xe0:
		e.c.rxPkts[wire.TypeNack.Index()][prio].Add(1)
		e.c.naksRecv.Add(1)
		rp.roceNak(now, q, pk.PSN)
	case pk.Opcode == wire.OpAck:
		e.c.rxPkts[wire.TypeAck.Index()][prio].Add(1)
		rp.roceAck(q, pk.PSN)
	default:
		e.c.rxPkts[wire.TypeData.Index()][prio].Add(1)
		if p.TOS&ecnCE == ecnCE {
			rp.roceMarked(now, q)
		}
		rp.roceData(now, q, &pk)
	}
}

// unwrap turns a 24-bit PSN from the peer into the requester's count,
// relative to sndUna; false for one before sndUna or past maxSent.
func (q *roceQP) unwrap(psn uint32) (uint64, bool) {
	d := (psn - uint32(q.sndUna)) & wire.PSNMask
	if d >= 1<<23 {
		return 0, false
	}
	v := q.sndUna + uint64(d)
	return v, v <= q.maxSent
}

// roceAck handles an ACK of every PSN up to psn.
func (rp *roceProtocol) roceAck(q *roceQP, psn uint32) {
	if v, ok := q.unwrap(psn); ok && v < q.maxSent {
		rp.roceAcked(q, v+1)
	}
}

// roceNak handles a NAK: the responder expects psn next, so everything
// before it arrived and the requester goes back to it.
func (rp *roceProtocol) roceNak(now time.Duration, q *roceQP, psn uint32) {
	v, ok := q.unwrap(psn)
	if !ok {
		return
	}
	rp.roceAcked(q, v)
	if v < q.maxSent && q.sndNxt > v {
		q.sndNxt = v
		if k := q.find(v); k >= 0 {
			q.out[k].r.lost(now)
		}
	}
}

// find returns the index in q.out of the message holding PSN v, or -1.
func (q *roceQP) find(v uint64) int {
	for k := range q.out {
		if v >= q.out[k].first && v < q.out[k].first+q.out[k].n {
			return k
		}
	}
	return -1
}

// roceAcked moves q's oldest unacknowledged PSN up to una, ending the
// messages it completes: a server's response is done and its RPC
// forgotten.
func (rp *roceProtocol) roceAcked(q *roceQP, una uint64) {
	e := rp.e
	if una <= q.sndUna {
		return
	}
	q.sndUna = una
	q.sndNxt = max(q.sndNxt, una)
	q.ackTick, q.retries = e.state.tick, 0
	k := 0
	for k < len(q.out) && q.out[k].first+q.out[k].n <= una {
		if r := q.out[k].r; !r.client && !r.dead {
			e.c.acked.Add(1)
			e.forgetServer(r, false)
		}
		q.out[k] = roceOut{}
		k++
	}
	if k > 0 {
		q.out = append(q.out[:0], q.out[k:]...)
	}
}

// roceData handles a SEND packet of q's inbound messages: in sequence it
// is taken, early it is dropped and NAKed (once per expected PSN), late
// it is a duplicate.
func (rp *roceProtocol) roceData(now time.Duration, q *roceQP, pk *wire.RoCEPacket) {
	e := rp.e
	d := (pk.PSN - q.ePSN) & wire.PSNMask
	switch {
	case d == 0:
	case d >= 1<<23: // before ePSN: a copy of what was taken
		e.c.dupData.Add(1)
		if pk.AckReq {
			rp.roceSendAck(now, q, (q.ePSN-1)&wire.PSNMask, wire.SyndromeAck)
		}
		return
	default: // a gap: a packet before this one was lost
		e.c.outOfSequence.Add(1)
		if e.cfg.RoCEGoBack0 && (q.cur != nil || q.discard) {
			// Go-back-0: drop the partial message; the sender starts it
			// again from its first packet, which begins it afresh.
			if r := q.cur; r != nil && r.client {
				r.in = msgIn{}
			} else if r != nil {
				delete(q.peer.servers, r.id)
				r.dead = true
			}
			q.cur, q.discard, q.ePSN = nil, false, q.curFirst
		}
		if !q.nakSent {
			q.nakSent = true
			e.c.naksSent.Add(1)
			rp.roceSendAck(now, q, q.ePSN, wire.SyndromeNakPSN)
		}
		return
	}
	op := pk.Opcode
	first := op == wire.OpSendFirst || op == wire.OpSendOnly
	last := op == wire.OpSendLast || op == wire.OpSendOnly
	if first == (q.cur != nil || q.discard) {
		// A FIRST inside a message or a MIDDLE/LAST outside one: the
		// requester broke the sequence. Drop it; a NAK realigns it.
		e.c.malformed.Add(1)
		return
	}
	q.ePSN = (q.ePSN + 1) & wire.PSNMask
	q.nakSent = false
	payload := pk.Payload
	if first {
		q.curFirst = pk.PSN
		h, err := wire.ParseRoCEMsgHeader(payload)
		if err != nil || h.Length == 0 || h.Length > e.cfg.MaxMessageBytes {
			e.c.malformed.Add(1)
			q.discard = !last
		} else {
			q.cur = rp.roceInbound(now, q, &h)
			q.discard = q.cur == nil && !last
		}
		payload = payload[wire.RoCEMsgHeaderLen:]
	}
	if r := q.cur; r != nil {
		m := &r.in
		if uint64(m.received)+uint64(len(payload)) > uint64(m.length) || (last && m.received+uint32(len(payload)) != m.length) {
			e.c.malformed.Add(1)
			q.cur, q.discard = nil, !last
		} else {
			keepBody(m.buf, m.received, payload)
			m.received += uint32(len(payload))
			r.progress(now)
		}
	}
	if last {
		q.msn = (q.msn + 1) & wire.PSNMask
		if r := q.cur; r != nil {
			q.cur = nil
			rp.roceComplete(now, r)
		}
		q.discard = false
	}
	if pk.AckReq {
		rp.roceSendAck(now, q, pk.PSN, wire.SyndromeAck)
	}
}

// roceInbound returns the RPC a message that begins with h belongs to: a
// new server RPC for a request, the waiting Call for a response; nil,
// counted, when nobody takes it.
func (rp *roceProtocol) roceInbound(now time.Duration, q *roceQP, h *wire.RoCEMsgHeader) *rpc {
	e := rp.e
	st := &e.state
	var r *rpc
	if h.ID&1 == 0 {
		if st.ports[h.DPort] == nil || q.peer.servers[h.ID] != nil {
			e.c.unknownRPC.Add(1)
			return nil
		}
		r = &rpc{id: h.ID, peer: q.peer, lport: h.DPort, rport: h.SPort, state: srvReceiving, heard: now}
		q.peer.servers[h.ID] = r
	} else {
		r = st.clients[h.ID&^1]
		if r == nil || r.dead || r.in.started {
			e.c.unknownRPC.Add(1)
			return nil
		}
		r.info.firstResponse = now
	}
	m := &r.in
	m.started, m.length, m.birth, m.peer, m.rpc = true, h.Length, now, q.addr, r
	m.buf = e.bodyBuf(h.Length)
	return r
}

// roceComplete hands a whole message to its taker.
func (rp *roceProtocol) roceComplete(now time.Duration, r *rpc) {
	e := rp.e
	if r.client {
		e.finishCall(now, r, r.in.buf, nil)
		return
	}
	e.deliver(r)
}

// roceMarked notes a CE-marked packet on q: a CNP goes to the requester,
// at most one per CNP interval for the queue pair.
func (rp *roceProtocol) roceMarked(now time.Duration, q *roceQP) {
	e := rp.e
	if e.cfg.RoCENoDCQCN || (q.cnpSent && now-q.cnpAt < e.cfg.DCQCNCNPInterval) {
		return
	}
	q.cnpSent, q.cnpAt = true, now
	e.c.cnpSent.Add(1)
	prio := uint8(e.cfg.RoCECtrlPriority)
	e.txCommitTOS(now, wire.AppendCNP(e.txBuf(), q.qpn), q.addr, 0, prio, TOS(prio))
}

// roceSendAck sends an ACK of psn, or a NAK asking from psn on.
func (rp *roceProtocol) roceSendAck(now time.Duration, q *roceQP, psn uint32, syndrome uint8) {
	e := rp.e
	t := wire.TypeAck
	if syndrome != wire.SyndromeAck {
		t = wire.TypeNack
	}
	prio := uint8(e.cfg.RoCECtrlPriority)
	e.txCommitTOS(now, wire.AppendRoCEAck(e.txBuf(), q.qpn, psn, syndrome, q.msn), q.addr, t, prio, TOS(prio))
}

// roceTick runs the variant's timers: a queue pair with packets
// outstanding and no acknowledged progress for RoCETimeoutTicks goes back
// to its oldest unacknowledged packet; a Call whose queue pair heard
// nothing from the peer for TimeoutTicks fails.
func (rp *roceProtocol) roceTick(now time.Duration) {
	e := rp.e
	st := &e.state
	for _, q := range rp.list {
		if q.sndUna < q.maxSent && st.tick-q.ackTick >= uint64(e.cfg.RoCETimeoutTicks) {
			q.ackTick = st.tick
			if q.retries < roceMaxRetries {
				q.retries++
				if k := q.find(q.sndUna); k >= 0 {
					q.out[k].r.lost(now)
				}
			}
			e.c.roceTimeouts.Add(1)
			q.sndNxt = q.sndUna
		}
	}
	rp.clist = e.failSilentCalls(now, rp.clist, func(r *rpc) uint64 { return rp.qpOf(r).heardTick })
}

// pause obeys a PFC PAUSE frame for the data's priority that arrived
// at now: the queue pairs send no data for quanta of 512 bit times at the
// link rate, or again at once for quanta 0 (a resume). ACKs, NAKs and
// CNPs go at their own priority and are not held, as a NIC does.
func (rp *roceProtocol) pause(now time.Duration, quanta uint16) {
	e := rp.e
	// The pause before this frame ran until now or until it ran out.
	e.c.pausedNs.Add(uint64(min(now, rp.pausedUntil) - rp.pausedSince))
	rp.pausedSince = now
	rp.pausedUntil = now + time.Duration(wire.PFCPause(quanta, e.cfg.LinkBps))
	if quanta == 0 {
		e.c.resumesRecv.Add(1)
	} else {
		e.c.pausesRecv.Add(1)
	}
}

// pauses reads the PAUSE frames pr receives and obeys those for the
// data's priority, until the Conn is closed.
func (rp *roceProtocol) pauses(pr PauseReader) {
	e := rp.e
	defer e.wg.Done()
	linkpause.Obey(pr.ReadPause, 1<<e.cfg.RoCEPriority, e.log, func(q uint16) bool {
		if !e.lock() {
			return false
		}
		rp.pause(e.now(), q)
		e.unlock() // a resume lets the queue pairs send again
		return true
	})
}
