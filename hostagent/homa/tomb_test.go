package homa

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// TestTombstoneBelowMax: a request whose id is below the largest
// tombstoned one (a late first packet of an earlier RPC) is still looked
// up, and served unless it has a tombstone of its own; one above it is
// served without a search (tombstones.max).
func TestTombstoneBelowMax(t *testing.T) {
	e, err := newEndpoint(&sinkConn{}, homaconf.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const port = 99
	e.state.ports[port] = &Server{e: e, port: port}
	addr := netip.MustParseAddr("10.0.0.2")
	p := e.peer(addr)
	for _, id := range []uint64{10, 14} {
		r := &rpc{id: id, peer: p, lport: port, state: srvAwaitAck}
		p.servers[id] = r
		e.forgetServer(r, true)
	}
	if p.tombs.max != 14 {
		t.Fatalf("largest tombstoned id %d, want 14", p.tombs.max)
	}
	for _, tc := range []struct {
		id     uint64
		served bool
	}{{10, false}, {12, true}, {14, false}, {16, true}} {
		d := wire.Data{Common: wire.Common{SPort: 0x8000, DPort: port, SenderID: tc.id}, MessageLength: 100}
		before := e.c.dupData.Load()
		r := e.newServerRPC(0, addr, &d)
		if got := r != nil; got != tc.served {
			t.Errorf("id %d: served %v, want %v", tc.id, got, tc.served)
		}
		if dup := e.c.dupData.Load() - before; dup != 0 == tc.served {
			t.Errorf("id %d: %d duplicates counted", tc.id, dup)
		}
	}
}

// TestTombstonesAsMap runs random sets, expiries and look-ups on
// tombstones and on the map they stand for: ids mostly growing, some
// below the largest (late requests), some set again before or after they
// expire, expiries in the order made as Endpoint.expireTombs makes them,
// and look-ups mostly of ids set lately.
func TestTombstonesAsMap(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var ts tombstones
		ref := map[uint64]uint64{}
		type queued struct{ id, exp uint64 }
		var q, made []queued
		next, tick := uint64(2), uint64(0)
		life := uint64(1 + rng.IntN(20))
		for step := range 20_000 {
			var id uint64
			switch r := rng.IntN(100); {
			case r < 70: // a client's next request
				next += 2 * uint64(1+rng.IntN(3))
				id = next
			case r < 90 && len(made) > 0: // one set lately: live, expired or replaced
				id = made[len(made)-1-rng.IntN(min(len(made), 300))].id
			default: // a late one, or one long gone
				id = 2 * uint64(1+rng.IntN(int(next/2)))
			}
			exp := tick + life
			if _, ok := ref[id]; !ok || rng.IntN(3) == 0 {
				ts.set(id, exp)
				ref[id] = exp
				q = append(q, queued{id, exp})
				made = append(made, queued{id, exp})
			}
			if rng.IntN(2) == 0 {
				tick++
				for len(q) > 0 && q[0].exp <= tick {
					ts.expire(q[0].id, q[0].exp)
					if ref[q[0].id] == q[0].exp {
						delete(ref, q[0].id)
					}
					q = q[1:]
				}
			}
			for range 4 {
				probe := 2 * uint64(rng.IntN(int(next/2)+10))
				if rng.IntN(4) > 0 && len(made) > 0 {
					probe = made[len(made)-1-rng.IntN(min(len(made), 500))].id
				}
				got, gok := ts.get(probe)
				want, wok := ref[probe]
				if gok != wok || (wok && got != want) {
					t.Fatalf("seed %d step %d: get(%d) = %d, %v; map has %d, %v", seed, step, probe, got, gok, want, wok)
				}
			}
		}
	}
}
