package homa

import (
	"net/netip"
	"slices"
	"time"

	"github.com/homatb/homatb/wire"
)

// The uet variant (homaconf.VariantUET): the Ultra Ethernet Transport's
// Packet Delivery Sublayer in reliable unordered delivery (RUD) mode as a
// protocol of the engine (protocol.go), with the Semantic Sublayer
// reduced to sending messages (our requests and responses). A host opens
// a packet delivery context (PDC) to a peer with its first message, SYN
// set on its requests until the peer's first ACK names the peer's end of
// it; packets carry 32-bit PSNs and are accepted in any order; the
// receiver acknowledges with ACK_CC headers that carry a cumulative PSN
// and a 64-PSN SACK bitmap; the sender resends a packet when packets sent
// uet_reorder_pkts after it were acknowledged and it was not, when the
// receiver NACKs it (trimmed), or after uet_rto_us. NSCC (uetcc.go) sets
// each PDC's window. Every packet carries an entropy value, which over
// UDP is its source port: the switches' multipath hash reads it, so the
// host sprays a PDC's packets over the fabric's paths.
// docs/transports.md ("Ultra Ethernet Transport") describes it and its
// departures from the specification.

// uetWindow is the PSN range a PDC keeps in flight and a receiver tracks
// beyond its cumulative PSN (the specification's maximum PSN range).
const uetWindow = 1024

// uetEntropyBase is the first entropy value: UDP source ports from the
// dynamic range, so a capture reads them as ephemeral ports.
const uetEntropyBase = 0xc000

// uetREPSDepth bounds a PDC's recycled entropies.
const uetREPSDepth = 64

// uetProtocol is the uet variant's protocol: the PDCs this host opened
// (initiators, one per peer) and those peers opened to it (targets).
type uetProtocol struct {
	e     *Endpoint
	pl    uint32
	ini   map[uint16]*uetPDC // by local PDC id
	byDst map[uint32]*uetPDC // by peer (v4)
	list  []*uetPDC          // creation order: the pacer's round robin
	tgt   map[uint64]*uetTarget
	rr    int
	tlist []*uetTarget // targets in creation order: RCCC's round robin
	rc    rcccReceiver
	ids   uint16 // the last local PDC id handed out
	heard map[uint32]uint64
	clist []*rpc
}

// uetMsg is a message on a PDC's send queue.
type uetMsg struct {
	r     *rpc
	next  uint32 // next byte to send for the first time
	acked uint32 // bytes acknowledged
	seq   uint16
	all   bool // every byte went out once (an empty message: its packet)
}

// uetSent is a packet sent and not yet acknowledged, at slot psn %
// uetWindow.
type uetSent struct {
	m      *uetMsg
	off, n uint32
	at     time.Duration
	full   bool   // a full-size packet: its round trip is a delay sample
	ev     uint16 // its entropy
	acked  bool
	lost   bool // declared lost, waiting in rtx
	resent bool
}

// uetPDC is the initiator's end of a packet delivery context to a peer.
type uetPDC struct {
	addr           netip.Addr
	peer           *peer
	spdcid, dpdcid uint16
	established    bool
	// start is the PDC's first PSN; next the next new PSN; una the
	// oldest not acknowledged; scan where loss detection resumes. PSNs
	// are 64-bit counts here; the wire carries their low 32 bits.
	start, next, una, scan uint64
	sent                   [uetWindow]uetSent
	rtx                    []uint64
	msgs                   []*uetMsg
	msgSeq                 uint16
	inflight               uint32
	ev                     uint32 // packets sent: the next entropy's index
	// reps holds entropies whose packets were acknowledged without an ECN
	// mark, oldest first, for uet_reps; at most uetREPSDepth.
	reps []uint16
	// skip is each entropy's penalty for uet_bitmap (nil without): the
	// rotation passes over an entropy while it has one.
	skip []uint8
	cc   nscc
	rs   rcccSender
}

// uetTarget is the target's end of a PDC a peer opened: cack is the next
// PSN expected (all before it arrived), bits the PSNs after it that did.
type uetTarget struct {
	addr      netip.Addr
	peer      *peer
	local     uint16
	remote    uint16
	cack      uint32
	bits      [uetWindow / 64]uint64
	rcvdBytes uint32
	ooo       uint16
	rt        rcccTarget
}

func uetKey(addr netip.Addr, id uint16) uint64 { return uint64(v4(addr))<<16 | uint64(id) }

// newUET builds e's uet protocol.
func newUET(e *Endpoint) *uetProtocol {
	return &uetProtocol{e: e, pl: e.cfg.UETPayload(), ini: map[uint16]*uetPDC{}, byDst: map[uint32]*uetPDC{},
		tgt: map[uint64]*uetTarget{}, heard: map[uint32]uint64{}}
}

func (u *uetProtocol) receive(now time.Duration, p *Packet) { u.onUET(now, p) }

func (u *uetProtocol) send() { u.pump(u.e.now()) }

func (u *uetProtocol) tick(now time.Duration) int {
	u.uetTick(now)
	return u.e.serverCount()
}

// encapBytes: UET rides in UDP.
func (u *uetProtocol) encapBytes() int { return wire.UDPHeaderLen }

func (u *uetProtocol) start(Conn) {}

// callDone: a failed Call's request may still be resent from its PDC, and
// its caller owns the bytes again.
func (u *uetProtocol) callDone(r *rpc, err error) {
	if err != nil {
		r.out.data = slices.Clone(r.out.data)
	}
}

// pdc returns the initiator PDC to addr, opening it on first use.
func (u *uetProtocol) pdc(addr netip.Addr) *uetPDC {
	e := u.e
	k := v4(addr)
	q := u.byDst[k]
	if q != nil {
		return q
	}
	for {
		u.ids++
		if u.ids != 0 && u.ini[u.ids] == nil {
			break
		}
	}
	// A start PSN that differs between PDCs (the specification has it
	// chosen at random; a hash keeps simulations repeatable).
	start := uint64(uint32(k*0x9e3779b9 ^ uint32(u.ids)*0x85ebca6b))
	q = &uetPDC{addr: addr, peer: e.peer(addr), spdcid: u.ids, start: start, next: start, una: start, scan: start,
		ev: uint32(k) * 7919}
	if e.cfg.UETBitmap {
		q.skip = make([]uint8, e.cfg.UETEntropies)
	}
	q.cc.init(&e.cfg)
	q.rs.init(&q.cc)
	u.ini[q.spdcid] = q
	u.byDst[k] = q
	u.list = append(u.list, q)
	return q
}

// startOut queues data as r's message on the PDC to its peer.
func (u *uetProtocol) startOut(now time.Duration, r *rpc, b body, _ uint32, _ uint8) {
	r.out = msgOut{data: b.data, length: b.length, birth: now}
	q := u.pdc(r.peer.addr)
	q.msgSeq++
	q.msgs = append(q.msgs, &uetMsg{r: r, seq: q.msgSeq})
}

// backlog is the new bytes q still has to send.
func (q *uetPDC) backlog() uint64 {
	var n uint64
	for _, m := range q.msgs {
		n += uint64(m.r.out.length - m.next)
	}
	return n
}

// newData returns the message whose bytes go next for the first time
// (the oldest with bytes left), or nil.
func (q *uetPDC) newData() *uetMsg {
	for _, m := range q.msgs {
		if !m.all {
			return m
		}
	}
	return nil
}

// ready reports whether q has a packet its window lets go now.
func (q *uetPDC) ready(mtu uint32, rccc bool) bool {
	if rccc && q.una == q.next {
		q.rs.idle() // nothing in flight: a new speculative window
	}
	if len(q.rtx) == 0 && (q.next-q.una >= uetWindow || q.newData() == nil || (rccc && !q.rs.mayStart())) {
		return false
	}
	return q.inflight == 0 || q.inflight+mtu <= q.cc.window()
}

// pump sends what the PDCs' windows and the link allow, round robin over
// the PDCs.
func (u *uetProtocol) pump(now time.Duration) {
	e := u.e
	if e.cfg.UETRCCC {
		u.credits(now)
	}
	mtu := uint32(e.cfg.MTU)
	for range 1 << 16 { // bounded: each pass sends a packet or returns
		var pick *uetPDC
		for i := range u.list {
			q := u.list[(u.rr+i)%len(u.list)]
			if q.ready(mtu, e.cfg.UETRCCC) {
				pick, u.rr = q, (u.rr+i+1)%len(u.list)
				break
			}
		}
		if pick == nil {
			e.state.paced = false
			return
		}
		if e.pacerHolds(now) {
			// The pacer's timer may be armed already for RCCC's next
			// credit, later than the link lets data go again: without
			// this the credits' own packets kept the data waiting until
			// a tick.
			e.armPacer(now, e.state.linkIdle-e.cfg.MaxNICBacklog/2)
			return
		}
		u.sendOne(now, pick)
	}
}

// sendOne sends q's next packet: a lost one again, else new bytes.
func (u *uetProtocol) sendOne(now time.Duration, q *uetPDC) {
	e := u.e
	var psn uint64
	var s *uetSent
	if n := len(q.rtx); n > 0 {
		psn = q.rtx[0]
		q.rtx = q.rtx[1:]
		if len(q.rtx) == 0 {
			q.rtx = q.rtx[:0:0] // let the drained queue's array go
		}
		s = &q.sent[psn%uetWindow]
		if s.acked || !s.lost {
			return // acknowledged since it was declared lost
		}
		s.lost, s.resent = false, true
		// A finished RPC's request can still be resent (its response came
		// before the request's ACK); its caller owns the record by then.
		if !s.m.r.dead {
			s.m.r.info.retransmits++
		}
		e.c.retransmits.Add(1)
	} else {
		m := q.newData()
		psn = q.next
		q.next++
		s = &q.sent[psn%uetWindow]
		*s = uetSent{m: m, off: m.next, n: min(u.pl, m.r.out.length-m.next)}
		s.full = s.n == u.pl
		m.next += s.n
		q.rs.sent1(s.n)
		if m.next == m.r.out.length {
			m.all = true
			e.lastByteSent(now, m.r)
		}
	}
	s.at = now
	q.inflight += s.n + wire.UETDataOverhead
	m := s.m
	r := m.r
	last := s.off+s.n == r.out.length
	h := wire.UETPDS{Type: wire.UETRUDReq, Next: wire.UETNextRequestStd, Retrans: s.resent,
		AckReq: s.resent || last || (psn-q.start)%uint64(e.cfg.UETAckEvery) == 0,
		Syn:    !q.established, SynPSNOffset: uint16(psn - q.start), ClearPSNOffset: uint16(min(psn-q.una, 0xffff)),
		PSN: uint32(psn), SPDCID: q.spdcid, DPDCID: q.dpdcid}
	if e.cfg.UETRCCC {
		h.Type, h.CreditTarget = wire.UETRUDCCReq, uint32(min(q.backlog(), 1<<24-1))
	}
	buf := wire.AppendUETRequest(e.txBuf(), &h)
	var flags uint8
	if s.off == 0 {
		flags |= wire.SESFlagSOM
	}
	if last {
		flags |= wire.SESFlagEOM
	}
	ses := wire.SESRequest{Opcode: wire.SESOpSend, Flags: flags, MsgID: m.seq, BufferOffset: uint64(s.off),
		MatchBits: r.senderID(), HeaderData: uint64(r.lport)<<16 | uint64(r.rport), RequestLength: r.out.length}
	buf = wire.AppendSESRequest(buf, &ses)
	buf = e.appendBody(buf, &r.out, s.off, s.n)
	prio := uint8(e.cfg.UETPriority)
	e.txCommitTOS(now, buf, q.addr, wire.TypeData, prio, TOS(prio)|ecnECT0)
	s.ev = q.entropy(e.cfg.UETEntropies)
	e.setEntropy(s.ev)
}

// entropy returns the next packet's entropy: a recycled one (uet_reps)
// if any, else the next in turn, passing over those with a penalty
// (uet_bitmap) as htsim's UecMpBitmap does: the first one passed loses a
// point of it, and after n tries the rotation takes what it reached.
func (q *uetPDC) entropy(n int) uint16 {
	if len(q.reps) > 0 {
		ev := q.reps[0]
		q.reps = append(q.reps[:0], q.reps[1:]...)
		return ev
	}
	i := q.ev % uint32(n)
	if q.skip != nil && q.skip[i] > 0 {
		q.skip[i]--
		for range n {
			q.ev++
			if i = q.ev % uint32(n); q.skip[i] == 0 {
				break
			}
		}
	}
	q.ev++
	return uetEntropyBase + uint16(i)
}

// Penalties of uet_bitmap (htsim UecMpBitmap): an ECN-marked ACK costs its
// entropy one, a trimmed packet's NACK four, up to fifteen.
const (
	uetSkipECN  = 1
	uetSkipTrim = 4
	uetSkipMax  = 15
)

// penalize adds pen to entropy ev's penalty under uet_bitmap.
func (q *uetPDC) penalize(ev uint16, pen uint8) {
	if i := int(ev - uetEntropyBase); q.skip != nil && i < len(q.skip) {
		q.skip[i] = min(q.skip[i]+pen, uetSkipMax)
	}
}

// onUET handles one UET packet (the UDP payload p.Buf).
func (u *uetProtocol) onUET(now time.Duration, p *Packet) {
	e := u.e
	var h wire.UETPDS
	rest, err := wire.ParseUETPDS(p.Buf, &h)
	if err != nil {
		e.c.malformed.Add(1)
		return
	}
	e.c.rxBytes.Add(uint64(len(p.Buf)))
	u.heard[v4(p.Addr)] = e.state.tick
	prio := Priority(p.TOS)
	switch h.Type {
	case wire.UETRUDReq, wire.UETRUDCCReq:
		e.c.rxPkts[wire.TypeData.Index()][prio].Add(1)
		u.onRequest(now, p, &h, rest)
	case wire.UETControl:
		if q := u.ini[h.DPDCID]; q != nil && q.addr == p.Addr && h.Next == wire.UETCtlCredit {
			e.c.rxPkts[wire.TypeGrant.Index()][prio].Add(1)
			q.rs.credited(h.Payload)
		} else {
			e.c.malformed.Add(1)
		}
	case wire.UETAckCC, wire.UETAck:
		e.c.rxPkts[wire.TypeAck.Index()][prio].Add(1)
		if q := u.ini[h.DPDCID]; q != nil && q.addr == p.Addr {
			u.onAck(now, q, &h)
		}
	case wire.UETNack:
		e.c.rxPkts[wire.TypeNack.Index()][prio].Add(1)
		e.c.naksRecv.Add(1)
		if q := u.ini[h.DPDCID]; q != nil && q.addr == p.Addr {
			u.onNack(now, q, &h)
		}
	default:
		e.c.malformed.Add(1)
	}
}

// onRequest handles a RUD data packet: a new PSN is taken and its bytes
// placed, a duplicate is acknowledged again, one beyond the window is
// NACKed.
func (u *uetProtocol) onRequest(now time.Duration, p *Packet, h *wire.UETPDS, rest []byte) {
	e := u.e
	var s wire.SESRequest
	payload, err := wire.ParseSESRequest(rest, &s)
	if err != nil || s.Opcode != wire.SESOpSend {
		e.c.malformed.Add(1)
		return
	}
	k := uetKey(p.Addr, h.SPDCID)
	t := u.tgt[k]
	if t == nil {
		if !h.Syn {
			// A PDC this host does not know (it restarted): the sender
			// times out.
			e.c.unknownRPC.Add(1)
			return
		}
		u.ids++
		t = &uetTarget{addr: p.Addr, peer: e.peer(p.Addr), local: u.ids, remote: h.SPDCID, cack: h.PSN - uint32(h.SynPSNOffset)}
		t.rt.init(&e.cfg)
		u.tgt[k] = t
		u.tlist = append(u.tlist, t)
	}
	if h.Type == wire.UETRUDCCReq {
		t.rt.backlog, t.rt.heard = h.CreditTarget, e.state.tick
	}
	ce := p.TOS&ecnCE == ecnCE
	d := h.PSN - t.cack
	switch {
	case d >= 1<<31 || (d < uetWindow && t.bits[(h.PSN%uetWindow)/64]&(1<<(h.PSN%64)) != 0):
		e.c.dupData.Add(1)
		u.sendAck(now, t, h.PSN, ce)
		return
	case d >= uetWindow:
		u.sendNack(now, t, h.PSN, wire.UETNackPSNOutRange)
		return
	}
	want := min(uint64(u.pl), uint64(s.RequestLength)-min(s.BufferOffset, uint64(s.RequestLength)))
	if uint64(len(payload)) < want {
		// Trimmed by a switch (or cut short): the header says which
		// packet; the sender resends it at once.
		e.c.trimmed.Add(1)
		e.c.naksSent.Add(1)
		u.sendNack(now, t, h.PSN, wire.UETNackTrimmed)
		return
	}
	t.bits[(h.PSN%uetWindow)/64] |= 1 << (h.PSN % 64)
	if d == 0 {
		for t.bits[(t.cack%uetWindow)/64]&(1<<(t.cack%64)) != 0 {
			t.bits[(t.cack%uetWindow)/64] &^= 1 << (t.cack % 64)
			t.cack++
		}
	} else {
		t.ooo++
		e.c.outOfSequence.Add(1)
	}
	t.rcvdBytes += uint32(len(payload))
	t.rt.rcvd += uint64(len(payload))
	done := u.place(now, t, &s, payload)
	if h.AckReq || d != 0 || done {
		u.sendAck(now, t, h.PSN, ce)
	}
}

// place puts a packet's payload into its message, starting the message
// at its first packet to arrive (any: delivery is unordered); true when
// the message is then complete.
func (u *uetProtocol) place(now time.Duration, t *uetTarget, s *wire.SESRequest, payload []byte) bool {
	e := u.e
	st := &e.state
	id := s.MatchBits
	var r *rpc
	if id&1 == 0 {
		r = t.peer.servers[id]
		if r == nil {
			dport := uint16(s.HeaderData)
			if st.ports[dport] == nil {
				e.c.unknownRPC.Add(1)
				return false
			}
			r = &rpc{id: id, peer: t.peer, lport: dport, rport: uint16(s.HeaderData >> 16), state: srvReceiving, heard: now}
			t.peer.servers[id] = r
		} else if r.state != srvReceiving {
			e.c.unknownRPC.Add(1)
			return false
		}
	} else {
		r = st.clients[id&^1]
		if r == nil || r.dead {
			e.c.unknownRPC.Add(1)
			return false
		}
		if !r.in.started {
			r.info.firstResponse = now
		}
	}
	m := &r.in
	if !m.started {
		if s.RequestLength > e.cfg.MaxMessageBytes {
			e.c.malformed.Add(1)
			return false
		}
		m.started, m.length, m.birth, m.peer, m.rpc = true, s.RequestLength, now, t.addr, r
		m.buf = e.bodyBuf(s.RequestLength)
	}
	if s.RequestLength != m.length || s.BufferOffset+uint64(len(payload)) > uint64(m.length) {
		e.c.malformed.Add(1)
		return false
	}
	keepBody(m.buf, uint32(s.BufferOffset), payload)
	m.received += uint32(len(payload))
	r.progress(now)
	if m.received < m.length {
		return false
	}
	if r.client {
		e.finishCall(now, r, m.buf, nil)
	} else {
		e.deliver(r)
	}
	return true
}

// sendAck acknowledges psn on t: its cumulative PSN, the SACK bitmap of
// the 64 PSNs after it, whether psn came CE-marked, and the receiver's
// counts NSCC reads.
func (u *uetProtocol) sendAck(now time.Duration, t *uetTarget, psn uint32, ce bool) {
	e := u.e
	cack := t.cack - 1
	var sack uint64
	for i := range uint32(64) {
		p := t.cack + i
		if t.bits[(p%uetWindow)/64]&(1<<(p%64)) != 0 {
			sack |= 1 << i
		}
	}
	h := wire.UETPDS{Type: wire.UETAckCC, ECN: ce, AckPSNOffset: uint16(psn - cack), PSN: cack,
		SPDCID: t.local, DPDCID: t.remote, CCType: wire.UETCCNSCC, MPR: uetWindow / 64,
		SACKPSNOffset: 1, SACKBitmap: sack, RcvdBytes: t.rcvdBytes & 0xffffff, OOOCount: t.ooo}
	prio := uint8(e.cfg.UETCtrlPriority)
	e.txCommitTOS(now, wire.AppendUETAck(e.txBuf(), &h), t.addr, wire.TypeAck, prio, TOS(prio))
}

// sendNack NACKs psn on t with code.
func (u *uetProtocol) sendNack(now time.Duration, t *uetTarget, psn uint32, code uint8) {
	e := u.e
	h := wire.UETPDS{NackCode: code, PSN: psn, SPDCID: t.local, DPDCID: t.remote}
	prio := uint8(e.cfg.UETCtrlPriority)
	e.txCommitTOS(now, wire.AppendUETNack(e.txBuf(), &h), t.addr, wire.TypeNack, prio, TOS(prio))
}

// unwrap turns a 32-bit PSN from the peer into q's count; false outside
// [una, next).
func (q *uetPDC) unwrap(psn uint32) (uint64, bool) {
	d := uint64(psn - uint32(q.una))
	v := q.una + d
	return v, d < uetWindow && v < q.next
}

// ackOne marks psn acknowledged; it returns the bytes it newly
// acknowledges.
func (u *uetProtocol) ackOne(q *uetPDC, psn uint64) uint32 {
	s := &q.sent[psn%uetWindow]
	if s.acked || s.m == nil {
		return 0
	}
	s.acked = true
	if !s.lost {
		q.inflight -= s.n + wire.UETDataOverhead
	}
	s.lost = false
	m := s.m
	m.acked += s.n
	if m.acked == m.r.out.length {
		u.msgAcked(q, m)
	}
	return s.n
}

// msgAcked ends a message every byte of which the peer acknowledged: a
// server's response is done and its RPC forgotten.
func (u *uetProtocol) msgAcked(q *uetPDC, m *uetMsg) {
	e := u.e
	if r := m.r; !r.client && !r.dead {
		e.c.acked.Add(1)
		e.forgetServer(r, false)
	}
	if i := slices.Index(q.msgs, m); i >= 0 {
		q.msgs = slices.Delete(q.msgs, i, i+1)
	}
}

// onAck handles an ACK: the cumulative PSN and the SACK bitmap
// acknowledge packets, the acknowledged packet's round trip is NSCC's
// delay sample, and packets the ACKs passed by uet_reorder_pkts (or
// SLEEK's threshold, uet_sleek) are declared lost.
func (u *uetProtocol) onAck(now time.Duration, q *uetPDC, h *wire.UETPDS) {
	e := u.e
	if !q.established {
		q.established, q.dpdcid = true, h.SPDCID
	}
	var acked uint32
	if v, ok := q.unwrap(h.PSN + 1); ok || v == q.next {
		for p := q.una; p < v; p++ {
			acked += u.ackOne(q, p)
		}
	}
	high := q.una
	if h.Type == wire.UETAckCC {
		base := h.SACKBase()
		for i := range uint32(64) {
			if h.SACKBitmap&(1<<i) == 0 {
				continue
			}
			if v, ok := q.unwrap(base + i); ok {
				acked += u.ackOne(q, v)
				high = max(high, v+1)
			}
		}
	}
	var delay time.Duration
	sample := false
	if v, ok := q.unwrap(h.PSN + uint32(h.AckPSNOffset)); ok {
		// The packet that asked for this ACK arrived, though the SACK
		// bitmap (64 PSNs past the cumulative one) may not reach it: with
		// a hole more than 64 PSNs back, its retransmissions were never
		// acknowledged, each filled the window until its timeout, and a
		// PDC sent a packet per RTO.
		acked += u.ackOne(q, v)
		high = max(high, v+1)
		s := &q.sent[v%uetWindow]
		if s.full && !s.resent && s.acked {
			delay, sample = q.cc.sample(now-s.at), true
		}
		if e.cfg.UETREPS && !h.ECN && s.m != nil && len(q.reps) < uetREPSDepth {
			q.reps = append(q.reps, s.ev)
		}
		if h.ECN && s.m != nil {
			q.penalize(s.ev, uetSkipECN)
		}
	}
	for q.una < q.next && q.sent[q.una%uetWindow].acked {
		q.sent[q.una%uetWindow] = uetSent{}
		q.una++
	}
	q.scan = max(q.scan, q.una)
	reorder := uint64(e.cfg.UETReorderPkts)
	if e.cfg.UETSleek {
		reorder = q.cc.sleekPkts(e.cfg.UETPayload() + wire.UETDataOverhead)
	}
	for ; q.scan+reorder < high; q.scan++ {
		u.declareLost(now, q, q.scan, false)
	}
	if !e.cfg.UETNoNSCC && acked > 0 {
		if q.cc.onAck(now, h.ECN, delay, sample, acked, &e.cfg) {
			e.c.rateCuts.Add(1)
		}
		if e.cfg.UETNackQA && q.cc.ackQA(now, acked, q.inflight) {
			e.c.rateCuts.Add(1)
		}
	}
}

// declareLost queues psn to be sent again unless it was acknowledged;
// trimmed says a NACK reported it trimmed at now.
func (u *uetProtocol) declareLost(now time.Duration, q *uetPDC, psn uint64, trimmed bool) {
	s := &q.sent[psn%uetWindow]
	if s.acked || s.lost || s.m == nil {
		return
	}
	s.lost = true
	q.inflight -= s.n + wire.UETDataOverhead
	q.rtx = append(q.rtx, psn)
	s.m.r.lost(max(s.at, 1))
	switch {
	case u.e.cfg.UETNoNSCC:
	case trimmed && u.e.cfg.UETNackQA:
		if q.cc.onTrim(now, s.n+wire.UETDataOverhead, q.inflight) {
			u.e.c.rateCuts.Add(1)
		}
	default:
		q.cc.loss(s.n, &u.e.cfg)
	}
}

// onNack handles a NACK: a trimmed packet is sent again at once.
func (u *uetProtocol) onNack(now time.Duration, q *uetPDC, h *wire.UETPDS) {
	if h.NackCode != wire.UETNackTrimmed {
		return // out of the receiver's window: the RTO resends it
	}
	if v, ok := q.unwrap(h.PSN); ok {
		if s := &q.sent[v%uetWindow]; s.m != nil {
			q.penalize(s.ev, uetSkipTrim)
		}
		u.declareLost(now, q, v, true)
	}
}

// uetTick runs the variant's timers: a packet unacknowledged for
// uet_rto_us is sent again; a Call that heard nothing from its peer for
// TimeoutTicks fails.
func (u *uetProtocol) uetTick(now time.Duration) {
	e := u.e
	if e.cfg.UETRCCC {
		u.creditTick(now)
	}
	for _, q := range u.list {
		fired := false
		for p := q.una; p < q.next; p++ {
			if s := &q.sent[p%uetWindow]; !s.acked && !s.lost && s.m != nil && now-s.at >= e.cfg.UETRTO {
				u.declareLost(now, q, p, false)
				fired = true
			}
		}
		if fired {
			e.c.roceTimeouts.Add(1)
		}
	}
	u.clist = e.failSilentCalls(now, u.clist, func(r *rpc) uint64 { return u.heard[v4(r.peer.addr)] })
}

// setEntropy gives the packet just committed its entropy value (over
// UDP, its source port).
func (e *Endpoint) setEntropy(ev uint16) {
	st := &e.state
	st.tx[st.txN-1].Entropy = ev
}
