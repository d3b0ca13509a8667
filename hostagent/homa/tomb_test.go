package homa

import (
	"net/netip"
	"testing"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// TestTombstoneBelowMax: a request whose id is below the largest
// tombstoned one (a late first packet of an earlier RPC) is still looked
// up, and served unless it has a tombstone of its own; one above it is
// served without a look-up (peer.tombMax).
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
	if p.tombMax != 14 {
		t.Fatalf("tombMax %d, want 14", p.tombMax)
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
