package homa

import "time"

// phostPolicy is pHost's (homaconf.VariantPHost): a message that fits in
// the credit window goes whole on free tokens; a longer one sends an RTS
// (a START_MSG) and nothing else, and its receiver grants it one packet per
// token from byte 0, paced at its link rate, to the message with the fewest
// bytes left. Priorities keep control packets (RTS and tokens) ahead of
// data only: every DATA packet, free or tokened, goes at the bottom level.
// That is pHost as the Homa paper simulated it (the pHost authors'
// simulator, whose configuration gives free tokens only to flows of at
// most capability_initial packets and sends all data at one level).
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

// announces: every message too long for free tokens sends an RTS, at the
// control level.
func (p *phostPolicy) announces(*peer, uint32) (uint8, bool) { return p.e.state.ctrlPrio, true }

// eligible: a sender that does not use its tokens gets no more until it
// does (the paper's token expiry).
func (p *phostPolicy) eligible(m *msgIn) bool { return m.granted-m.received < p.window }

// restLost: never. pHost's receiver recovers a lost packet with a token
// for it, at its link's pace; asking for the rest of a gap whole sends it
// at line rate, past the tokens.
func (p *phostPolicy) restLost(*rpc) bool { return false }

// regrant: the last token again, which is cumulative.
func (p *phostPolicy) regrant(now time.Duration, m *msgIn) {
	if !m.unschedOnly {
		p.e.sendGrant(now, m.rpc, m.granted, p.prio)
	}
}

// give sends a token: a GRANT of one more packet.
func (p *phostPolicy) give(now time.Duration, m *msgIn) {
	e, r := p.e, m.rpc
	m.granted = min(m.length, m.granted+e.state.pkt)
	e.sendGrant(now, r, m.granted, p.prio)
}
