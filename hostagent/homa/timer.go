package homa

import (
	"fmt"
	"github.com/homatb/homatb/hostagent/homa/wire"
	"time"
)

// onTick runs the timers: silence detection, RESENDs, NEED_ACKs, aborts,
// pending ACKs, tombstone expiry and dynamic cutoffs.
func (e *Endpoint) onTick(now time.Duration) {
	l := &e.loop
	l.tick++
	for _, r := range l.clients {
		e.checkRPC(now, r)
	}
	for _, p := range l.peers {
		for _, r := range p.servers {
			e.checkRPC(now, r)
		}
	}
	if len(l.ackPeers) > 0 {
		e.flushAcks(now)
	}
	e.expireTombs()
	if l.dynamic && l.sizeNew >= e.cfg.CutoffSamples {
		e.updateCutoffs()
	}
}

// expireTombs drops the tombstones due by now. They all live equally
// long, so they expire in the order they were made: a queue, not a scan
// of the map, which at 60,000 RPCs a second (12,000 tombstones) held the
// lock for about 140 µs every 16 ticks.
func (e *Endpoint) expireTombs() {
	l := &e.loop
	for l.tombHead < len(l.tombQ) && l.tombQ[l.tombHead].exp <= l.tick {
		t := l.tombQ[l.tombHead]
		if t.p.tombs[t.id] == t.exp {
			delete(t.p.tombs, t.id)
		}
		l.tombQ[l.tombHead] = tomb{}
		l.tombHead++
	}
	if l.tombHead > 64 && l.tombHead >= len(l.tombQ)/2 {
		n := copy(l.tombQ, l.tombQ[l.tombHead:])
		clear(l.tombQ[n:])
		l.tombQ, l.tombHead = l.tombQ[:n], 0
	}
}

// waitingOnUs reports whether r's silence is this host's own doing: it is
// still transmitting, or every byte it granted of a message it is
// receiving has arrived (its own scheduler is holding the sender back).
func (e *Endpoint) waitingOnUs(r *rpc) bool {
	if r.out.data != nil && r.out.next < r.out.granted {
		return true
	}
	m := &r.in
	receiving := r.client || r.state == srvReceiving
	return receiving && m.started && m.received >= m.granted
}

// resendDue reports whether a RESEND is due after silent ticks.
func (e *Endpoint) resendDue(silent int) bool {
	return silent >= e.cfg.ResendTicks && (silent-e.cfg.ResendTicks)%e.cfg.ResendInterval == 0
}

// checkRPC advances r's silence timer: RESEND when due on the side
// receiving a message, NEED_ACK for a sent response, abort on timeout.
func (e *Endpoint) checkRPC(now time.Duration, r *rpc) {
	switch {
	case r.state == srvServing:
		return // the application holds it
	case r.state != srvAwaitAck && e.waitingOnUs(r):
		r.silent = 0
		return
	case r.state == srvResponding && r.peer.heard+uint64(e.cfg.ResendTicks) > e.loop.tick:
		// Waiting for grants from a client that is alive: its scheduler
		// may hold this response back behind others for a long time.
		r.silent = 0
		return
	}
	r.silent++
	switch {
	case r.silent >= e.cfg.TimeoutTicks && r.client:
		e.c.timeouts.Add(1)
		e.finishCall(now, r, nil, fmt.Errorf("homa: call %d to %v: %w", r.id, r.peer.addr, ErrTimeout))
	case r.silent >= e.cfg.TimeoutTicks:
		e.c.timeouts.Add(1)
		e.forgetServer(r, r.state != srvReceiving)
	case (r.client || r.state == srvReceiving) && e.resendDue(r.silent):
		e.requestResend(now, r)
	case r.state == srvAwaitAck && !e.cfg.AtLeastOnce && r.silent >= e.cfg.RequestAckTicks &&
		(r.silent-e.cfg.RequestAckTicks)%e.cfg.ResendInterval == 0:
		e.sendControl(now, r.peer.addr, r.header(wire.TypeNeedAck))
	}
}

// updateCutoffs recomputes the unscheduled cutoffs from recent inbound
// message lengths and bumps the version when they change; senders learn
// them from CUTOFFS packets sent when their DATA carries an old version.
func (e *Endpoint) updateCutoffs() {
	l := &e.loop
	l.sizeNew = 0
	l.scratch = append(l.scratch[:0], l.sizes...)
	cut := computeCutoffs(l.scratch, e.cfg.UnschedBytes, l.prios, e.cfg.MaxMessageBytes)
	if cut == l.cut.cut {
		return
	}
	l.cut.cut = cut
	l.cut.version++
	if l.cut.version == 0 {
		l.cut.version = 1 // 0 means "no cutoffs" on the wire
	}
	l.sched.maxSchedPrio = maxSchedPriority(&cut, l.prios, e.cfg.MaxMessageBytes)
	e.c.cutoffVersion.Store(uint64(l.cut.version))
}
