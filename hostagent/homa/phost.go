package homa

import (
	"time"

	"github.com/homatb/homatb/wire"
)

// phostPolicy is pHost's (homaconf.VariantPHost): a sender sends its
// credit window blind (the paper's free tokens), then one packet per token
// its receiver grants, paced at its link rate, to the message with the
// fewest bytes left.
type phostPolicy struct {
	familyBase
	creditQueue
	// window: a message with this many bytes of tokens (or blind bytes)
	// not yet used gets no token (homaconf.Config.CreditWindow).
	window uint32
}

func (p *phostPolicy) track(m *msgIn)   { p.add(m) }
func (p *phostPolicy) arrived(m *msgIn) { p.add(m) }
func (p *phostPolicy) untrack(m *msgIn) { p.remove(m) }

func (p *phostPolicy) credits() { p.issueDue(p.e, p) }

// eligible: a sender that does not use its tokens gets no more until it
// does (the paper's token expiry).
func (p *phostPolicy) eligible(m *msgIn) bool { return m.granted-m.received < p.window }

// give sends a token: a GRANT of one more packet.
func (p *phostPolicy) give(now time.Duration, m *msgIn) {
	e, r := p.e, m.rpc
	m.granted = min(m.length, m.granted+e.state.pkt)
	g := wire.Grant{Common: r.header(wire.TypeGrant), Offset: m.granted, Priority: p.prio}
	e.txCommit(now, wire.AppendGrant(e.txBuf(), &g), r.peer.addr, wire.TypeGrant, e.state.ctrlPrio)
}
