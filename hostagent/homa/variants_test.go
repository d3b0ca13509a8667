package homa_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/wire"
)

// variantNet describes one protocol test of a variant: the network (loss,
// and the switch mode of its downlinks) and what must show in the counters.
type variantNet struct {
	name     string
	v        homaconf.Variant
	lc       homatest.LinkConfig
	parallel int // Calls at a time per client
}

// incast runs perClient Calls from each of several hosts to one echo
// server, parallel at a time per host, of a mix of sizes, and checks every
// response byte for byte. synctest fails the test if a goroutine is left
// behind.
func incast(t *testing.T, lc homatest.LinkConfig, cfg homaconf.Config, clients, perClient, parallel int) (server *homa.Endpoint, cs []*homa.Endpoint, network *homatest.Network) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	network = homatest.NewNetwork(lc)
	t.Cleanup(network.Close)
	server = attach(t, network, serverAddr, cfg)
	srv, err := server.Listen(serverPort)
	if err != nil {
		t.Fatal(err)
	}
	es := serveEcho(ctx, t, srv)
	dest := netip.AddrPortFrom(serverAddr, serverPort)
	sizes := []int{10, 1500, 6000, 20_000, 70_000, 150_000}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for c := range clients {
		ep := attach(t, network, netip.AddrFrom4([4]byte{10, 0, 1, byte(c + 1)}), cfg)
		cs = append(cs, ep)
		for g := range parallel {
			wg.Go(func() {
				for i := g; i < perClient; i += parallel {
					req := make([]byte, sizes[(i+c)%len(sizes)])
					fill(req, uint64(c<<16|i))
					resp, _, err := ep.Call(ctx, dest, req)
					if err == nil && string(resp) != string(req) {
						err = fmt.Errorf("response differs")
					}
					if err != nil {
						failed.Add(1)
						t.Errorf("client %d rpc %d (%d bytes): %v", c, i, len(req), err)
					}
				}
			})
		}
	}
	wg.Wait()
	if d := es.Duplicates(); d != 0 {
		t.Errorf("%d requests executed twice", d)
	}
	return server, cs, network
}

// sum adds a per-priority counter over all priorities.
func sum(a [wire.MaxPriorities]uint64) (n uint64) {
	for _, v := range a {
		n += v
	}
	return n
}

// TestVariantsWithLoss runs each comparison transport over a lossy network
// (2% of packets dropped at random) with four clients sending to one
// server, with and without its switch mode: every RPC completes with the
// exact bytes, and each variant's signature shows in the packet counts.
func TestVariantsWithLoss(t *testing.T) {
	base := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Loss: 0.02, Seed: 11}
	ranked := base
	ranked.RankOrder, ranked.QueueBytes = true, 30_000 // about two BDPs
	trim := base
	trim.TrimAbovePackets = 8
	for _, tt := range []variantNet{
		// pFabric needs its switch: over deep FIFO queues, 16 messages at
		// line rate into one port outlast its short RTO many times over,
		// and the spurious retransmissions collapse the network; so one
		// Call per client there.
		{"pfabric", homaconf.VariantPFabric, base, 1},
		{"pfabric/rank_order", homaconf.VariantPFabric, ranked, 4},
		{"phost", homaconf.VariantPHost, base, 4},
		{"ndp", homaconf.VariantNDP, base, 4},
		{"ndp/trim_above", homaconf.VariantNDP, trim, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := homaconf.Config{Variant: tt.v}
				server, cs, network := incast(t, tt.lc, cfg, 4, 40, tt.parallel)
				ss, cst := server.Stats(), cs[0].Stats()
				ns := network.Stats()
				if ns.Lost == 0 {
					t.Error("the network lost nothing")
				}
				grants := sum(ss.TxPackets[wire.TypeGrant.Index()])
				pulls := sum(ss.TxPackets[wire.TypePull.Index()])
				switch tt.v {
				case homaconf.VariantPFabric:
					if grants != 0 || pulls != 0 {
						t.Errorf("pFabric server sent %d GRANTs and %d PULLs, want none", grants, pulls)
					}
				case homaconf.VariantPHost:
					if grants == 0 || ss.TxPackets[wire.TypeGrant.Index()][7] != grants {
						t.Errorf("pHost tokens %v, want some, all at the top level", ss.TxPackets[wire.TypeGrant.Index()])
					}
					// At level 0, but for a first packet its receiver
					// never saw, which a RESEND asks for at the top.
					if d := cst.TxPackets[wire.TypeData.Index()]; d[0] == 0 || sum(d) != d[0]+d[7] {
						t.Errorf("pHost DATA %v, want some, all at level 0 or 7", d)
					}
				case homaconf.VariantNDP:
					if pulls == 0 || grants != 0 {
						t.Errorf("NDP server sent %d PULLs and %d GRANTs, want PULLs only", pulls, grants)
					}
				}
				if n := sum(ss.TxPackets[wire.TypeCutoffs.Index()]); n != 0 {
					t.Errorf("server sent %d CUTOFFS: only Homa has cutoffs", n)
				}
				if tt.lc.TrimAbovePackets > 0 {
					nacks := sum(ss.TxPackets[wire.TypeNack.Index()])
					if ns.Trimmed == 0 || ss.Trimmed == 0 || nacks == 0 {
						t.Errorf("trimmed %d at the switch, %d at the server, %d NACKs: want all nonzero", ns.Trimmed, ss.Trimmed, nacks)
					}
				}
				if tt.lc.RankOrder && ns.QueueDrops == 0 {
					t.Error("the rank-ordered ports dropped nothing")
				}
				t.Logf("net %+v; server resends %d retransmits %d; client retransmits %d", ns, ss.ResendsSent, ss.Retransmits, cst.Retransmits)
			})
		})
	}
}

// TestPFabricRank checks the rank each pFabric DATA packet carries: the
// message's bytes from the packet's first on, its own included (0 for
// control packets and for Homa).
func TestPFabricRank(t *testing.T) {
	for _, v := range []homaconf.Variant{homaconf.VariantHoma, homaconf.VariantPFabric} {
		t.Run(string(v), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var bad, data atomic.Int64
				var mu sync.Mutex
				var first string
				lc := homatest.LinkConfig{Rate: 1e9, Drop: func(_ netip.Addr, p homa.Packet) bool {
					c, err := wire.ParseCommon(p.Buf)
					if err != nil {
						return false
					}
					want := uint32(0)
					if c.Type == wire.TypeData {
						d, _, _ := wire.ParseData(p.Buf)
						if v == homaconf.VariantPFabric {
							want = d.MessageLength - d.Offset
						}
						data.Add(1)
					}
					if c.Rank != want {
						bad.Add(1)
						mu.Lock()
						if first == "" {
							first = fmt.Sprintf("%v rank %d, want %d", c.Type, c.Rank, want)
						}
						mu.Unlock()
					}
					return false
				}}
				client, srv, _ := pair(t, lc, homaconf.Config{Variant: v})
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				serveEcho(ctx, t, srv)
				req := make([]byte, 100_000)
				fill(req, 1)
				if _, _, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), req); err != nil {
					t.Fatal(err)
				}
				if bad.Load() != 0 || data.Load() < 100 {
					t.Errorf("%d of %d DATA packets with a wrong rank (first: %s)", bad.Load(), data.Load(), first)
				}
			})
		})
	}
}

// TestUnknownTypesRefused checks that an endpoint refuses packet types of
// another variant as it refuses unknown ones: Homa counts an NDP PULL or
// NACK as malformed and ignores a trimmed DATA packet.
func TestUnknownTypesRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := homatest.NewNetwork(homatest.LinkConfig{})
		t.Cleanup(network.Close)
		ep := attach(t, network, serverAddr, homaconf.Config{})
		raw, err := network.NewConn(clientAddr)
		if err != nil {
			t.Fatal(err)
		}
		c := wire.Common{SPort: 0x8000, DPort: serverPort, SenderID: 2}
		trimmed, _ := wire.Trim(append(wire.AppendData(nil, &wire.Data{Common: c, MessageLength: 5000}), make([]byte, 1000)...))
		pkts := []homa.Packet{
			{Buf: wire.AppendPull(nil, &wire.Pull{Common: c, Count: 1}), Addr: serverAddr},
			{Buf: wire.AppendNack(nil, &wire.Nack{Common: c, Length: 1}), Addr: serverAddr},
			{Buf: trimmed, Addr: serverAddr},
		}
		if err := raw.WriteBatch(pkts); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := ep.Stats(); st.Malformed != 3 || sum(st.RxPackets[wire.TypePull.Index()]) != 0 || st.Trimmed != 0 {
			t.Errorf("malformed %d, rx pull %d, trimmed %d: want 3, 0, 0", st.Malformed,
				sum(st.RxPackets[wire.TypePull.Index()]), st.Trimmed)
		}
	})
}
