package homa

import (
	"net/netip"
	"slices"
	"time"

	"github.com/homatb/homatb/wire"
)

// ndpPolicy is NDP's (homaconf.VariantNDP): a sender sends its initial
// window at line rate, then one packet per PULL; its receiver sends a PULL
// for every packet that arrives, whole or trimmed by a switch, paced at
// its link rate, and a NACK at once for a trimmed one, which the sender
// sends again on the next PULL.
type ndpPolicy struct {
	familyBase
	creditQueue
	// held are the sender's NACKed packets waiting for a PULL.
	held []heldNack
}

// heldNack is a NACKed packet of r waiting for a PULL to go again.
type heldNack struct {
	r *rpc
	span
}

func (n *ndpPolicy) accepts(wire.Type) bool { return true }
func (n *ndpPolicy) track(m *msgIn)         { n.add(m) }
func (n *ndpPolicy) untrack(m *msgIn)       { n.remove(m) }

// arrived: every arrival earns its sender a PULL.
func (n *ndpPolicy) arrived(m *msgIn) {
	m.pulls++
	n.add(m)
}

// restLost: a retransmission answers a NACK, unless a RESEND went out: the
// packets after it are still on their way (sprayed, or queued behind it
// as NACKed), and asking for them again sent each twice.
func (n *ndpPolicy) restLost(r *rpc) bool { return r.resent }

// regrant: none. A PULL lets one more packet go; a lost one is made up by
// the packets that still arrive, and a RESEND asks for the rest.
func (n *ndpPolicy) regrant(time.Duration, *msgIn) {}

func (n *ndpPolicy) credits() { n.issueDue(n.e, n) }

// eligible: a packet arrived (whole or trimmed) for which no PULL went out
// yet.
func (n *ndpPolicy) eligible(m *msgIn) bool { return m.pulls != 0 }

// give sends a PULL; it goes to a NACKed packet first, as the sender
// spends it.
func (n *ndpPolicy) give(now time.Duration, m *msgIn) {
	e, r := n.e, m.rpc
	m.pulls--
	m.pullSeq++
	if m.nackOwed > 0 {
		m.nackOwed--
	} else {
		m.granted = min(m.length, m.granted+e.state.pkt)
	}
	pl := wire.Pull{Common: r.header(wire.TypePull), Count: m.pullSeq}
	e.txCommit(now, wire.AppendPull(e.txBuf(), &pl), r.peer.addr, wire.TypePull, e.state.ctrlPrio)
}

// trimmed answers a DATA packet a switch trimmed: a NACK for its bytes at
// once, and a PULL owed for it as for any arrival, which the sender spends
// on the retransmission.
func (n *ndpPolicy) trimmed(now time.Duration, addr netip.Addr, d wire.Data, r *rpc) {
	e := n.e
	st := &e.state
	if d.MessageLength > e.cfg.MaxMessageBytes {
		e.drop(DropTooLarge)
		return
	}
	if r = e.inboundRPC(now, addr, &d, r); r == nil || !e.beginIn(now, addr, &d, 0, r) {
		return
	}
	m := &r.in
	e.c.trimmed.Add(1)
	r.lost(now)
	m.nackOwed++
	nk := wire.Nack{Common: r.header(wire.TypeNack), Offset: d.Offset, Length: min(st.pkt, m.length-d.Offset)}
	e.txCommit(now, wire.AppendNack(e.txBuf(), &nk), r.peer.addr, wire.TypeNack, st.ctrlPrio)
	if m.received < m.length {
		m.pulls++
		n.add(m)
	}
}

// control handles a PULL or NACK (type t) about r's outbound message;
// either shows the receiver is working on it.
func (n *ndpPolicy) control(now time.Duration, b []byte, t wire.Type, r *rpc) {
	e := n.e
	var err error
	if t == wire.TypePull {
		var p wire.Pull
		if p, err = wire.ParsePull(b); err == nil && e.sending(r) {
			r.progress(now)
			n.onPull(now, p.Count, r)
		}
	} else {
		var nk wire.Nack
		if nk, err = wire.ParseNack(b); err == nil && e.sending(r) {
			r.progress(now)
			n.onNack(&nk, r)
		}
	}
	if err != nil {
		e.dropErr(err)
	}
}

// onPull handles a PULL with count pulls: each PULL not seen before
// lets one packet go, a NACKed one first, else the next new one (as a
// GRANT of one more packet). A PULL with neither to send is kept (spare)
// for the next NACK: the receiver sends a trimmed packet's NACK and then
// its PULL, but packets sprayed over the spines can arrive in the other
// order, and a PULL spent on nothing would leave the NACKed packet held
// until the RESEND timeout (milliseconds at the Homa paper's scale).
func (n *ndpPolicy) onPull(now time.Duration, count uint32, r *rpc) {
	e := n.e
	o := &r.out
	if count <= o.pulled {
		return // reordered behind a later PULL
	}
	offset := o.granted
	for k := count - o.pulled; k > 0; k-- {
		switch {
		case n.releaseHeld(r):
		case offset < o.length:
			offset = min(o.length, offset+e.state.pkt)
		default:
			o.spare++
		}
	}
	o.pulled = count
	e.credit(now, r, offset, n.prio)
	e.enqueue(r)
}

// releaseHeld moves r's oldest held NACKed packet to its retransmissions;
// false when it has none. Entries of finished RPCs are dropped on the way.
func (n *ndpPolicy) releaseHeld(r *rpc) bool {
	for i := 0; i < len(n.held); {
		h := n.held[i]
		switch {
		case h.r.dead:
			n.held = slices.Delete(n.held, i, i+1)
		case h.r == r:
			n.held = slices.Delete(n.held, i, i+1)
			r.out.resend(resendReq{h.span, n.prio})
			return true
		default:
			i++
		}
	}
	return false
}

// onNack handles a NACK: the packet carrying [Offset, Offset+Length) lost
// its payload in a switch; it goes again on the next PULL, ahead of new
// bytes, as NDP's sender does, or at once on a PULL that came before the
// NACK and found nothing to send (onPull).
func (n *ndpPolicy) onNack(nk *wire.Nack, r *rpc) {
	e := n.e
	o := &r.out
	end := min(o.next, nk.Offset+nk.Length)
	if nk.Offset >= end {
		return
	}
	n.held = append(n.held, heldNack{r, span{nk.Offset, end}})
	if o.spare > 0 && n.releaseHeld(r) {
		o.spare--
		e.enqueue(r)
	}
}
