package homa

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// CallID is the id of e's Call whose request begins with the 8-byte tag,
// 0 if it has none.
func CallID(e *Endpoint, tag uint64) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, r := range e.state.clients {
		if len(r.out.data) >= 8 && binary.BigEndian.Uint64(r.out.data) == tag {
			return id
		}
	}
	return 0
}

// DescribeRPC says what e holds about RPC id (every RPC for id 0), for the failure messages of
// the liveness tests: each side's state, silence and message progress.
func DescribeRPC(e *Endpoint, id uint64) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	show := func(r *rpc) {
		fmt.Fprintf(&b, "%v: client=%v id=%d state=%d dead=%v silent=%d restarts=%d refusals=%d resent=%v; out len=%d next=%d granted=%d unsched=%d rexmit=%v queued=%v; in started=%v len=%d received=%d granted=%d tracked=%v credited=%v prefix=%d spans=%v; tick=%d",
			e.local, r.client, r.id, r.state, r.dead, r.silent, r.restarts, r.refusals, r.resent,
			r.out.length, r.out.next, r.out.granted, r.out.unsched, r.out.rexmit, r.out.queued,
			r.in.started, r.in.length, r.in.received, r.in.granted, r.in.tracked, r.in.credited, r.in.got.prefix, r.in.got.spans, e.state.tick)
		fmt.Fprintf(&b, " sendq=%d linkIdle=%v now=%v armed=%v armedAt=%v spinning=%v; ", e.state.sendq.Len(), e.state.linkIdle, e.now(), e.state.armed, e.state.armedAt, e.state.spinning)
	}
	if r := e.state.clients[id]; r != nil || id == 0 {
		for _, c := range e.state.clients {
			if c == r || id == 0 {
				show(c)
			}
		}
	}
	for _, p := range e.state.peers {
		for _, r := range p.servers {
			if r.id == id || id == 0 {
				show(r)
			}
		}
		if exp, ok := p.tombs.get(id); ok {
			fmt.Fprintf(&b, "%v: tombstone for %v until tick %d (now %d)", e.local, p.addr, exp, e.state.tick)
		}
	}
	if b.Len() == 0 {
		return fmt.Sprintf("%v: nothing", e.local)
	}
	return b.String()
}

// RPCIDs lists the ids of every RPC e holds, client or server.
func RPCIDs(e *Endpoint) []uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []uint64
	for id := range e.state.clients {
		ids = append(ids, id)
	}
	for _, p := range e.state.peers {
		for id := range p.servers {
			ids = append(ids, id)
		}
	}
	return ids
}

// IncompleteHeld reports what e holds for inbound messages not yet
// complete: the bytes charged against its bounds, and the capacity of
// their receive buffers.
func IncompleteHeld(e *Endpoint) (charged, bufCap uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	add := func(r *rpc) {
		if r.in.started && r.in.received < r.in.length {
			bufCap += uint64(cap(r.in.buf))
		}
	}
	for _, r := range e.state.clients {
		add(r)
	}
	for _, p := range e.state.peers {
		for _, r := range p.servers {
			add(r)
		}
	}
	return e.state.inHeld, bufCap
}
