package homa

import (
	"fmt"
	"github.com/homatb/homatb/wire"
	"time"
)

// onTick runs the timers: silence detection, RESENDs, NEED_ACKs, aborts,
// pending ACKs, tombstone expiry and dynamic cutoffs.
func (e *Endpoint) onTick(now time.Duration) {
	st := &e.state
	st.tick++
	servers := e.proto.tick(now)
	e.c.clientRPCs.Store(uint64(len(st.clients)))
	e.c.serverRPCs.Store(uint64(servers))
	if len(st.ackPeers) > 0 {
		e.flushAcks(now)
	}
	e.expireTombs()
	if st.dynamic && st.sizeNew >= e.cfg.CutoffSamples {
		e.updateCutoffs()
	}
}

// checkRPCs advances every RPC's silence timer (checkRPC), in id order
// on a Driven Endpoint; it returns how many server RPCs there are.
func (e *Endpoint) checkRPCs(now time.Duration) int {
	st := &e.state
	if e.driven {
		return e.checkInOrder(now)
	}
	for _, r := range st.clients {
		e.checkRPC(now, r)
	}
	servers := 0
	for _, p := range st.peers {
		for _, r := range p.servers {
			e.checkRPC(now, r)
		}
		servers += len(p.servers)
	}
	return servers
}

// expireTombs drops the tombstones due by now. They all live equally
// long, so they expire in the order they were made: a queue, not a scan
// of the peers' tombstones, which at 60,000 RPCs a second (12,000
// tombstones) held the lock for about 140 µs every 16 ticks.
func (e *Endpoint) expireTombs() {
	st := &e.state
	for st.tombHead < len(st.tombQ) && st.tombQ[st.tombHead].exp <= st.tick {
		t := st.tombQ[st.tombHead]
		st.byNum[t.peer].tombs.expire(t.id, t.exp)
		st.tombHead++
	}
	if st.tombHead > 64 && st.tombHead >= len(st.tombQ)/2 {
		n := copy(st.tombQ, st.tombQ[st.tombHead:])
		st.tombQ, st.tombHead = st.tombQ[:n], 0
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
	case r.state == srvResponding:
		// Waiting for grants: the client's scheduler may hold this
		// response back behind others for as long as it likes, sending
		// us nothing. Like Linux, a server never times out a response it
		// still has to send. After a timeout's worth of silence it asks,
		// every resend interval, whether the client still has the RPC: a
		// client that gave it up answers NEED_ACK with an ACK, which frees
		// it; one that is holding it back stays silent.
		r.silent++
		if r.silent >= e.cfg.TimeoutTicks && (r.silent-e.cfg.TimeoutTicks)%e.cfg.ResendInterval == 0 {
			e.sendControl(now, r.peer.addr, r.header(wire.TypeNeedAck))
		}
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
	st := &e.state
	st.sizeNew = 0
	st.scratch = append(st.scratch[:0], st.sizes...)
	cut := st.rule.compute(st.scratch, &st.weighs)
	if cut == st.cut.cut {
		return
	}
	st.cut.cut = cut
	st.cut.version++
	if st.cut.version == 0 {
		st.cut.version = 1 // 0 means "no cutoffs" on the wire
	}
	st.sched.maxSchedPrio = maxSchedPriority(&cut, st.prios, e.cfg.MaxMessageBytes)
	e.c.cutoffVersion.Store(uint64(st.cut.version))
}
