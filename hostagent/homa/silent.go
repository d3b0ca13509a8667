package homa

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// failSilentCalls is the Call timeout of the protocols that keep their
// own connections (roce, uet): each Call whose peer sent nothing during
// the last tick (heardTick: the tick during which the last packet for it
// came; st.tick has moved on by one since) counts a silent tick, and one
// silent for TimeoutTicks fails. scratch is the caller's slice for the
// Calls in id order (a Driven Endpoint's order must repeat); it returns it
// emptied for reuse.
func (e *Endpoint) failSilentCalls(now time.Duration, scratch []*rpc, heardTick func(*rpc) uint64) []*rpc {
	st := &e.state
	rs := scratch[:0]
	for _, r := range st.clients {
		rs = append(rs, r)
	}
	if e.driven {
		slices.SortFunc(rs, func(a, b *rpc) int { return cmp.Compare(a.id, b.id) })
	}
	for _, r := range rs {
		if r.silent++; heardTick(r)+1 >= st.tick {
			r.silent = 0
		}
		if r.silent >= e.cfg.TimeoutTicks {
			e.c.timeouts.Add(1)
			e.finishCall(now, r, nil, fmt.Errorf("homa: call %d to %v: %w", r.id, r.peer.addr, ErrTimeout))
		}
	}
	clear(rs)
	return rs[:0]
}

// serverCount is the number of server RPCs the endpoint holds: what a
// protocol's tick returns when it checks no server RPC itself.
func (e *Endpoint) serverCount() int {
	n := 0
	for _, p := range e.state.peers {
		n += len(p.servers)
	}
	return n
}
