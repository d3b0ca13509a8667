package homa

import (
	"net/netip"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// policy is what tells the transports of Homa's family apart
// (homaconf.Variant): how a receiver lets a sender go beyond the bytes it
// sends blind (Homa's GRANTs, pHost's tokens, NDP's PULLs, nothing for
// pFabric), and the priority and rank its DATA carries. The Endpoint
// builds one with its protocol (newPolicy); the family's receive, send and
// timer paths call it where the designs differ and never ask which it is.
// Homa's is here, the others in pfabric.go, phost.go and ndp.go.
type policy interface {
	// accepts reports whether packets of type t belong to the transport:
	// only NDP's take PULL and NACK; the others refuse them as they
	// refuse any unknown type.
	accepts(t wire.Type) bool
	// blindLevel is the priority of a blind (unscheduled) byte of a
	// message of n bytes to p.
	blindLevel(p *peer, n uint32) uint8
	// announces reports whether a message of n bytes to p that does not
	// fit in its blind bytes sends none and announces itself with a
	// START_MSG instead (Homa with start_msg, pHost's RTS), and the
	// level of that packet.
	announces(p *peer, n uint32) (level uint8, ok bool)
	// rank is what the next DATA packet of o carries for switches that
	// order packets by it (pFabric), asked before the packet is accounted
	// for; 0 for the others.
	rank(o *msgOut) uint32
	// oldestShare reports whether one pick in pacerFIFOEvery serves the
	// oldest outbound message rather than the one with the fewest bytes
	// left (Linux Homa's pacer_fifo_fraction); pFabric's hosts send by
	// SRPT alone.
	oldestShare() bool
	// staleCutoffs answers a DATA packet with header c from p that
	// carried another cutoff version than this receiver's (Homa: a
	// CUTOFFS packet; the others choose their priorities themselves).
	staleCutoffs(now time.Duration, p *peer, c wire.Common)
	// track hands an incomplete inbound message to whatever lets its
	// sender go on (a START_MSG announced it, a NACK asks for it).
	track(m *msgIn)
	// arrived is told that fresh bytes of the incomplete message m
	// arrived.
	arrived(m *msgIn)
	// untrack takes the restarted message m, which track credited
	// (m.credited), out of the credit queue.
	untrack(m *msgIn)
	// restLost reports whether a retransmission that arrives for r shows
	// the rest of its gap lost (resendRest).
	restLost(r *rpc) bool
	// regrant restates the credit m holds, in a resend round that finds
	// nothing arrived past some of it: the GRANT of those bytes may have
	// been lost, and a RESEND grants only the packet it asks for.
	regrant(now time.Duration, m *msgIn)
	// trimmed handles a DATA packet, header d, whose payload a switch
	// trimmed; r is its RPC if known.
	trimmed(now time.Duration, addr netip.Addr, d wire.Data, r *rpc)
	// control handles a packet b of a type only this transport accepts
	// (NDP's PULL and NACK) about r.
	control(now time.Duration, b []byte, t wire.Type, r *rpc)
	// credits sends the credits due at the end of an event (pHost's
	// tokens, NDP's PULLs).
	credits()
}

// newPolicy builds the policy e's configuration names (defaults filled
// in), with how many bytes of a message it sends before any credit
// (unsched).
func newPolicy(e *Endpoint) (pol policy, unsched uint32) {
	cfg := &e.cfg
	base := familyBase{e: e}
	gap := wireTime(cfg.MTU+cfg.FrameOverhead, cfg.LinkBps)
	switch cfg.Variant {
	case homaconf.VariantPFabric:
		return &pfabricPolicy{base}, cfg.UnschedBytes
	case homaconf.VariantPHost:
		// A message that fits in the credit window goes whole on free
		// tokens; a longer one sends an RTS and waits for tokens.
		// Control packets at the top, every DATA packet at the bottom
		// (phostPolicy).
		return &phostPolicy{familyBase: base, creditQueue: creditQueue{gap: gap}, window: cfg.CreditWindow},
			cfg.CreditWindow
	case homaconf.VariantNDP:
		// Data at the bottom; the switch forwards trimmed headers at the
		// top, where PULLs and NACKs go too. The credit window is its
		// initial window, which its PULLs keep in flight.
		return &ndpPolicy{familyBase: base, creditQueue: creditQueue{gap: gap}}, cfg.CreditWindow
	}
	return &homaPolicy{base}, cfg.UnschedBytes
}

// familyBase is what a policy does unless it says otherwise: Homa's
// packets only, its blind bytes at the bottom level (Homa: its receivers'
// cutoffs instead), no announcements, no rank, no cutoffs, no credit, no
// trimmed packets.
type familyBase struct{ e *Endpoint }

func (familyBase) accepts(t wire.Type) bool { return t < wire.TypePull }

func (familyBase) blindLevel(*peer, uint32) uint8 { return 0 }

func (familyBase) announces(*peer, uint32) (uint8, bool) { return 0, false }

func (familyBase) rank(*msgOut) uint32 { return 0 }

func (familyBase) oldestShare() bool { return true }

func (familyBase) staleCutoffs(time.Duration, *peer, wire.Common) {}

func (familyBase) track(*msgIn) {}

func (familyBase) arrived(*msgIn) {}

func (familyBase) untrack(*msgIn) {}

func (familyBase) restLost(*rpc) bool { return true }

// regrant: Homa's GRANT again, at the level of the last one. A message
// sent whole blind was never granted anything.
func (b familyBase) regrant(now time.Duration, m *msgIn) {
	if !m.unschedOnly {
		b.e.sendGrant(now, m.rpc, m.granted, m.prio)
	}
}

// trimmed: only NDP's switch ports trim.
func (b familyBase) trimmed(time.Duration, netip.Addr, wire.Data, *rpc) {
	b.e.drop(DropWrongVariant)
}

func (familyBase) control(time.Duration, []byte, wire.Type, *rpc) {}

func (familyBase) credits() {}

// homaPolicy is Homa's: receivers grant by SRPT with overcommitment
// (grantSched) and tell senders the cutoffs that set the levels of their
// blind bytes.
type homaPolicy struct{ familyBase }

// blindLevel is chosen per packet as Linux does, so cutoffs that arrive
// in the middle of a message apply to its remaining unscheduled packets.
// Before p's first CUTOFFS it is the top level, where this host's own
// default cutoffs put every unscheduled byte (a new Linux peer uses 6,
// which on a Linux receiver is unscheduled too but here is the top
// scheduled level; docs/homa.md, departures).
func (h *homaPolicy) blindLevel(p *peer, n uint32) uint8 {
	st := &h.e.state
	if p.cutoffs.version != 0 {
		return unschedPriority(&p.cutoffs.cut, st.prios, n)
	}
	return uint8(st.prios - 1)
}

// announces: with start_msg, at the level its unscheduled bytes would
// have used.
func (h *homaPolicy) announces(p *peer, n uint32) (uint8, bool) {
	return h.blindLevel(p, n), h.e.cfg.StartMsg
}

func (h *homaPolicy) staleCutoffs(now time.Duration, p *peer, c wire.Common) {
	h.e.sendCutoffs(now, p, &c)
}

func (h *homaPolicy) track(m *msgIn) { h.e.state.sched.add(m) }

func (h *homaPolicy) arrived(m *msgIn) { h.e.state.sched.add(m) }
