package homa

import (
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// creditMode is how a receiver lets senders go beyond their blind bytes.
type creditMode uint8

const (
	creditGrants creditMode = iota // Homa: SRPT GRANTs with overcommitment (grantSched)
	creditNone                     // pFabric: every byte is blind
	creditTokens                   // pHost: one-packet tokens in SRPT order, paced
	creditPulls                    // NDP: one PULL per arrived packet, paced
)

// policy is what distinguishes the transports built on the engine
// (homaconf.Variant); fixed when the Endpoint is built. Homa's is the
// zero value but for its priorities, so its paths test one field.
type policy struct {
	credit creditMode
	// rank: stamp pFabric's rank (bytes left after the packet) in DATA.
	rank bool
	// ndp: accept PULL and NACK, and answer trimmed DATA with a NACK.
	ndp bool
	// blindPrio and creditPrio are the DATA priorities of blind bytes
	// and of bytes sent on a token or PULL (not Homa: its receivers
	// choose them).
	blindPrio, creditPrio uint8
	// creditGap is the receiver's pacing of tokens and PULLs: one
	// full-size packet at its link rate.
	creditGap time.Duration
	// tokenWindow: a pHost receiver gives no token to a message with this
	// many bytes of tokens (or blind bytes) not yet used (CreditWindow).
	tokenWindow uint32
	// unsched is how much of a message goes before any credit:
	// UnschedBytes, but CreditWindow on pHost (its free tokens) and NDP
	// (its initial window, which its PULLs keep in flight).
	unsched uint32
	// blindHigh: only a message's first blindHigh bytes go at blindPrio
	// (pHost: one unloaded BDP, the paper's free tokens); the rest of its
	// blind bytes, the slack for a loaded path, go at the credited
	// bytes' priority, so that short messages, blind whole, do not queue
	// behind them.
	blindHigh uint32
}

// newPolicy derives the policy of cfg (defaults filled in).
func newPolicy(cfg homaconf.Config) policy {
	top := uint8(cfg.Priorities - 1)
	p := policy{creditGap: wireTime(cfg.MTU+cfg.FrameOverhead, cfg.LinkBps), tokenWindow: cfg.CreditWindow,
		unsched: cfg.UnschedBytes, blindHigh: math.MaxUint32}
	switch cfg.Variant {
	case homaconf.VariantPFabric:
		// The switch orders by rank; priorities only keep control packets
		// ahead on ports that are not rank-ordered.
		p.credit, p.rank = creditNone, true
	case homaconf.VariantPHost:
		// Priorities for control packets (top) and free-token packets
		// (next) only, as the paper; scheduled packets at the bottom.
		p.credit, p.blindPrio, p.unsched, p.blindHigh = creditTokens, uint8(max(0, int(top)-1)), cfg.CreditWindow, cfg.UnschedBytes
	case homaconf.VariantNDP:
		// Data at the bottom; the switch forwards trimmed headers at the
		// top, where PULLs and NACKs go too.
		p.credit, p.ndp, p.unsched = creditPulls, true, cfg.CreditWindow
	}
	return p
}

// accepts reports whether packets of type t belong to this policy: only
// NDP endpoints take PULL and NACK; the others refuse them as they refuse
// any unknown type.
func (p *policy) accepts(t wire.Type) bool { return p.ndp || t < wire.TypePull }

// track hands an incomplete inbound message to whatever lets its sender
// go on: the grant scheduler (Homa) or the credit queue (pHost, NDP).
func (e *Endpoint) track(m *msgIn) {
	st := &e.state
	switch st.pol.credit {
	case creditGrants:
		st.sched.add(m)
	case creditNone:
	default:
		// A message sent whole but trimmed still needs PULLs for its
		// NACKed packets.
		if !m.credited && (m.granted < m.length || m.nackOwed > 0) {
			m.credited = true
			st.credq = append(st.credq, m)
		}
	}
}

// untrack takes m out of the credit queue (a restarted message).
func (e *Endpoint) untrack(m *msgIn) {
	st := &e.state
	if i := slices.Index(st.credq, m); i >= 0 {
		st.credq = slices.Delete(st.credq, i, i+1)
	}
	m.credited = false
}

// issueCredits sends the tokens (pHost) or PULLs (NDP) due by now, one
// packet's worth each, to the eligible message with the fewest bytes left,
// at most one per packet time of the link, and arms the pacer's timer for
// the next one.
func (e *Endpoint) issueCredits(now time.Duration) {
	st := &e.state
	gap := st.pol.creditGap
	for range len(st.credq) * 64 { // bounded: each pass sends one credit or ends
		if st.creditAt > now {
			e.armPacer(now, st.creditAt)
			return
		}
		m := e.pickCredit()
		if m == nil {
			return
		}
		r := m.rpc
		if st.pol.credit == creditPulls {
			// The PULL goes to a NACKed packet first, as the sender
			// spends it.
			m.pulls--
			m.pullSeq++
			if m.nackOwed > 0 {
				m.nackOwed--
			} else {
				m.granted = min(m.length, m.granted+st.pkt)
			}
			pl := wire.Pull{Common: r.header(wire.TypePull), Count: m.pullSeq}
			e.txCommit(now, wire.AppendPull(e.txBuf(), &pl), r.peer.addr, wire.TypePull, st.ctrlPrio)
		} else {
			m.granted = min(m.length, m.granted+st.pkt)
			g := wire.Grant{Common: r.header(wire.TypeGrant), Offset: m.granted, Priority: st.pol.creditPrio}
			e.txCommit(now, wire.AppendGrant(e.txBuf(), &g), r.peer.addr, wire.TypeGrant, st.ctrlPrio)
		}
		e.c.grantsBy[st.pol.creditPrio].Add(1)
		r.info.grantsSent++
		r.traceGrant(now, m.granted, st.pol.creditPrio, true)
		// A short idle stretch may be made up (two packets), a long one not:
		// the credits would arrive as a burst the downlink cannot carry.
		st.creditAt = max(st.creditAt, now-2*gap) + gap
	}
}

// pickCredit returns the message to credit next: fewest bytes left (ties:
// the oldest) among those that may have one, dropping finished ones from
// the queue. pHost: not fully granted and less than tokenWindow of its
// credit unused (a sender that does not use its tokens gets no more until
// it does, the paper's token expiry); NDP: a packet arrived (whole or
// trimmed) for which no PULL went out yet.
func (e *Endpoint) pickCredit() *msgIn {
	st := &e.state
	var best *msgIn
	for i := 0; i < len(st.credq); {
		m := st.credq[i]
		if m.rpc.dead || !m.credited || (m.granted >= m.length && m.nackOwed == 0) || m.received >= m.length {
			m.credited = false
			last := len(st.credq) - 1
			st.credq[i], st.credq[last] = st.credq[last], nil
			st.credq = st.credq[:last]
			continue
		}
		i++
		switch st.pol.credit {
		case creditTokens:
			if m.granted-m.received >= st.pol.tokenWindow {
				continue
			}
		case creditPulls:
			if m.pulls == 0 {
				continue
			}
		}
		if best == nil || m.remaining() < best.remaining() || (m.remaining() == best.remaining() && m.birth < best.birth) {
			best = m
		}
	}
	return best
}

// rankOf is pFabric's rank of a DATA packet, taken once the packet is
// accounted for: the message's remaining size, which is what pFabric ranks
// by — its bytes not yet sent plus those still owed for retransmission
// (msgOut.left). Counting only the bytes never sent gave every
// retransmission of a message sent once whole rank 0, which tied it with
// short messages' packets; after heavy loss the rank-ordered queues filled
// with such ties and served them first come first served (compare2018:
// short packets waited behind 22 full-size retransmissions, 52 ms).
func rankOf(o *msgOut) uint32 { return o.left() }

// onTrimmed answers a DATA packet a switch trimmed (NDP): a NACK for its
// bytes at once, and a PULL owed for it as for any arrival, which the
// sender spends on the retransmission.
func (e *Endpoint) onTrimmed(now time.Duration, addr netip.Addr, b []byte, r *rpc) {
	st := &e.state
	d, err := wire.ParseTrimmed(b)
	switch {
	case err != nil:
		e.dropErr(err)
		return
	case !st.pol.ndp:
		e.drop(DropWrongVariant) // only NDP's switch ports trim
		return
	case d.MessageLength > e.cfg.MaxMessageBytes:
		e.drop(DropTooLarge)
		return
	}
	if r = e.inboundRPC(now, addr, &d, r); r == nil || !e.beginIn(now, addr, &d, 0, r) {
		return
	}
	m := &r.in
	m.granted = max(m.granted, min(d.Incoming, m.length))
	e.c.trimmed.Add(1)
	r.lost(now)
	m.nackOwed++
	n := wire.Nack{Common: r.header(wire.TypeNack), Offset: d.Offset, Length: min(st.pkt, m.length-d.Offset)}
	e.txCommit(now, wire.AppendNack(e.txBuf(), &n), r.peer.addr, wire.TypeNack, st.ctrlPrio)
	if m.received < m.length {
		m.pulls++
		e.track(m)
	}
}

// onNDP handles a PULL or NACK (type t) about r's outbound message; either
// shows the receiver is working on it.
func (e *Endpoint) onNDP(now time.Duration, b []byte, t wire.Type, r *rpc) {
	var err error
	if t == wire.TypePull {
		var p wire.Pull
		if p, err = wire.ParsePull(b); err == nil && e.sending(r) {
			r.progress(now)
			e.onPull(now, p.Count, r)
		}
	} else {
		var n wire.Nack
		if n, err = wire.ParseNack(b); err == nil && e.sending(r) {
			r.progress(now)
			e.onNack(&n, r)
		}
	}
	if err != nil {
		e.dropErr(err)
	}
}

// onPull handles an NDP PULL with count pulls: each PULL not seen before
// lets one packet go, a NACKed one first, else the next new one (as a
// GRANT of one more packet). A PULL with neither to send is kept (spare)
// for the next NACK: the receiver sends a trimmed packet's NACK and then
// its PULL, but packets sprayed over the spines can arrive in the other
// order, and a PULL spent on nothing would leave the NACKed packet held
// until the RESEND timeout (milliseconds at the Homa paper's scale).
func (e *Endpoint) onPull(now time.Duration, count uint32, r *rpc) {
	o := &r.out
	if count <= o.pulled {
		return // reordered behind a later PULL
	}
	offset := o.granted
	for n := count - o.pulled; n > 0; n-- {
		switch {
		case e.releaseHeld(r):
		case offset < o.length:
			offset = min(o.length, offset+e.state.pkt)
		default:
			o.spare++
		}
	}
	o.pulled = count
	e.credit(now, r, offset, e.state.pol.creditPrio)
	e.enqueue(r)
}

// heldNack is a NACKed packet of r waiting for a PULL to go again.
type heldNack struct {
	r *rpc
	span
}

// releaseHeld moves r's oldest held NACKed packet to its retransmissions;
// false when it has none. Entries of finished RPCs are dropped on the way.
func (e *Endpoint) releaseHeld(r *rpc) bool {
	st := &e.state
	for i := 0; i < len(st.held); {
		h := st.held[i]
		switch {
		case h.r.dead:
			st.held = slices.Delete(st.held, i, i+1)
		case h.r == r:
			st.held = slices.Delete(st.held, i, i+1)
			r.out.rexmit = append(r.out.rexmit, resendReq{h.span, st.pol.creditPrio})
			return true
		default:
			i++
		}
	}
	return false
}

// onNack handles an NDP NACK: the packet carrying [Offset, Offset+Length)
// lost its payload in a switch; it goes again on the next PULL, ahead of
// new bytes, as NDP's sender does, or at once on a PULL that came before
// the NACK and found nothing to send (onPull).
func (e *Endpoint) onNack(n *wire.Nack, r *rpc) {
	o := &r.out
	end := min(o.next, n.Offset+n.Length)
	if n.Offset >= end {
		return
	}
	e.state.held = append(e.state.held, heldNack{r, span{n.Offset, end}})
	if o.spare > 0 && e.releaseHeld(r) {
		o.spare--
		e.enqueue(r)
	}
}
