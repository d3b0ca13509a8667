package homa

import (
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// RCCC, the receiver-credit congestion control of UET 1.0 (uet_rccc),
// reduced to its mechanism. Credit is a limit on a PDC's new bytes: the
// count of new payload bytes the sender may have sent in all. A sender may
// always go a first window (its NSCC cap) past what it had sent when its
// PDC last had nothing in flight, on speculation, and as far as its
// receiver's credit beyond. Each request says how many new bytes its PDC still has to send
// (the RUD_CC request's credit target); the receiver raises a PDC's limit
// by one packet at a time, paced at its link rate, round robin over the
// PDCs with bytes left and less than a window of credit outstanding, in
// CREDIT control packets that carry the limit itself (so a lost one is
// made good by the next; a tick that brought no data from a PDC with
// bytes left repeats it).

// rcccSender is a PDC's side of RCCC at the sender.
type rcccSender struct {
	initial uint64
	limit   uint64 // new bytes it may have sent in all
	sent    uint64 // new bytes sent
}

func (r *rcccSender) init(cc *nscc) {
	r.initial = uint64(cc.maxwnd)
	r.limit = r.initial
}

// idle renews the speculative window: the PDC has nothing in flight.
func (r *rcccSender) idle() { r.limit = max(r.limit, r.sent+r.initial) }

// mayStart reports whether the credit lets a new packet begin.
func (r *rcccSender) mayStart() bool { return r.sent < r.limit }

func (r *rcccSender) sent1(n uint32) { r.sent += uint64(n) }

// credited takes a CREDIT's limit (its low 32 bits, within 2 GB of what
// was sent).
func (r *rcccSender) credited(v uint32) {
	if d := int32(v - uint32(r.sent)); d > 0 {
		r.limit = max(r.limit, r.sent+uint64(d))
	}
}

// rcccTarget is a PDC's side of RCCC at the receiver.
type rcccTarget struct {
	window  uint64
	backlog uint32 // the sender's last credit target: new bytes it has left
	limit   uint64 // the limit last granted
	rcvd    uint64 // new bytes received
	heard   uint64 // tick of the last credit target
}

func (t *rcccTarget) init(cfg *homaconf.Config) {
	var cc nscc
	cc.init(cfg)
	t.window = uint64(cc.maxwnd)
}

// wants reports whether the sender has bytes left and less than a window
// of credit outstanding.
func (t *rcccTarget) wants(pl uint32) bool {
	out := t.limit - min(t.limit, t.rcvd)
	return t.backlog > 0 && out+uint64(pl) <= t.window
}

// rcccReceiver is the receiver's credit pacer.
type rcccReceiver struct {
	at time.Duration // when the next credit may go
	rr int
}

// credits hands out what credit the pacer allows at now and arms the
// pacer's timer for the next when a PDC still wants some.
func (u *uetProtocol) credits(now time.Duration) {
	e := u.e
	gap := wireTime(e.cfg.MTU+e.cfg.FrameOverhead, e.cfg.LinkBps)
	rc := &u.rc
	rc.at = max(rc.at, now-gap) // an idle pacer saves no credit up
	for range len(u.tlist) * 4 {
		var pick *uetTarget
		for i := range u.tlist {
			t := u.tlist[(rc.rr+i)%len(u.tlist)]
			if t.rt.wants(u.pl) {
				pick, rc.rr = t, (rc.rr+i+1)%len(u.tlist)
				break
			}
		}
		if pick == nil {
			return
		}
		if rc.at > now {
			e.armPacer(now, rc.at)
			return
		}
		rc.at += gap
		pick.rt.limit = max(pick.rt.limit, pick.rt.rcvd) + uint64(u.pl)
		u.sendCredit(now, pick)
	}
}

// sendCredit sends t's limit.
func (u *uetProtocol) sendCredit(now time.Duration, t *uetTarget) {
	e := u.e
	h := wire.UETPDS{Next: wire.UETCtlCredit, SPDCID: t.local, DPDCID: t.remote, Payload: uint32(t.rt.limit)}
	prio := uint8(e.cfg.UETCtrlPriority)
	e.txCommitTOS(now, wire.AppendUETControl(e.txBuf(), &h), t.addr, wire.TypeGrant, prio, TOS(prio))
}

// creditTick repeats the limit of each PDC that has bytes left but sent
// none during the last tick: its last CREDIT may have been lost.
func (u *uetProtocol) creditTick(now time.Duration) {
	st := &u.e.state
	for _, t := range u.tlist {
		if t.rt.backlog > 0 && t.rt.limit > 0 && t.rt.heard+1 < st.tick {
			u.sendCredit(now, t)
		}
	}
}
