package homa_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/wire"
)

// TestUET runs the uet variant's incast (four clients, 40 Calls each, 4 at
// a time, sizes up to 150 KB) over the in-memory network: lossless, with
// random loss (SACK gaps and timeouts recover it), with reordering (the
// receiver takes packets in any order), with trimming at the server's
// port (TRIM NACKs, resent at once), and with ECN marking at the
// server's port (NSCC cuts its windows). Every RPC completes with the
// exact bytes, no request runs twice (incast checks), and the counters
// show each mechanism at work.
func TestUET(t *testing.T) {
	base := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Seed: 7}
	lossy := base
	lossy.Loss = 0.02
	reorder := base
	reorder.Reorder, reorder.ReorderDelay = 0.05, 30*time.Microsecond
	marking := base
	marking.ECNAbovePackets = 8
	trimming := base
	trimming.TrimAbovePackets, trimming.TrimUET = 8, true
	for _, tt := range []struct {
		name  string
		lc    homatest.LinkConfig
		cfg   homaconf.Config
		check func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats)
	}{
		{"lossless", base, homaconf.Config{}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			if ss.Retransmits+cs.Retransmits != 0 || ss.RoCETimeouts+cs.RoCETimeouts != 0 {
				t.Errorf("retransmits %d/%d, timeouts %d/%d on a lossless network: want none",
					ss.Retransmits, cs.Retransmits, ss.RoCETimeouts, cs.RoCETimeouts)
			}
		}},
		{"loss", lossy, homaconf.Config{}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			if ns.Lost == 0 {
				t.Fatal("the network lost nothing")
			}
			if ss.OutOfSequence+cs.OutOfSequence == 0 || ss.Retransmits+cs.Retransmits == 0 {
				t.Errorf("out of sequence %d, retransmits %d: want both nonzero", ss.OutOfSequence+cs.OutOfSequence, ss.Retransmits+cs.Retransmits)
			}
			// SACK gaps, not timeouts, find most losses: each timeout
			// firing (RoCETimeouts, UET's RTO for a PDC) resends at least
			// one packet, so most resends came from the SACK bitmaps.
			if rtx, to := ss.Retransmits+cs.Retransmits, ss.RoCETimeouts+cs.RoCETimeouts; rtx < 4*to {
				t.Errorf("%d retransmits for %d timeout firings: want most from SACK gaps", rtx, to)
			}
		}},
		{"reorder", reorder, homaconf.Config{UETReorderPkts: 64}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			if ns.Reordered == 0 || ss.OutOfSequence+cs.OutOfSequence == 0 {
				t.Errorf("reordered %d, out of sequence %d: want both nonzero", ns.Reordered, ss.OutOfSequence+cs.OutOfSequence)
			}
			if ss.Retransmits+cs.Retransmits != 0 {
				t.Errorf("%d retransmits with a reorder threshold above the reordering: want none", ss.Retransmits+cs.Retransmits)
			}
		}},
		{"trim", trimming, homaconf.Config{}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			// The server NACKs each trimmed packet; the client resends it.
			if ns.Trimmed == 0 || ss.Trimmed == 0 || ss.NAKsSent == 0 || cs.NAKsReceived == 0 || cs.Retransmits == 0 {
				t.Errorf("trimmed %d, server saw %d trimmed and sent %d NACKs, client got %d NACKs and resent %d: want all nonzero",
					ns.Trimmed, ss.Trimmed, ss.NAKsSent, cs.NAKsReceived, cs.Retransmits)
			}
			if n := ss.TxPackets[wire.TypeNack.Index()]; n[6] != ss.NAKsSent {
				t.Errorf("NACKs by level %v, want all %d at 6", n, ss.NAKsSent)
			}
		}},
		{"rccc", marking, homaconf.Config{UETRCCC: true}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			// The server credits its senders (CREDIT control packets,
			// counted as grants, at the control level).
			if c := ss.TxPackets[wire.TypeGrant.Index()]; c[6] == 0 || sum(c) != c[6] || sum(cs.RxPackets[wire.TypeGrant.Index()]) == 0 {
				t.Errorf("server CREDITs by level %v, client received %d: want some, all at 6", c, sum(cs.RxPackets[wire.TypeGrant.Index()]))
			}
		}},
		{"ecn/nscc", marking, homaconf.Config{}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			if ns.Marked == 0 || cs.RateCuts == 0 {
				t.Errorf("marked %d, client window cuts %d: want both nonzero", ns.Marked, cs.RateCuts)
			}
		}},
		{"ecn/no_nscc", marking, homaconf.Config{UETNoNSCC: true}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			if ns.Marked == 0 || cs.RateCuts != 0 {
				t.Errorf("marked %d, cuts %d: want marks but no cuts without NSCC", ns.Marked, cs.RateCuts)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tt.cfg
				cfg.Variant = homaconf.VariantUET
				server, cs, network := incast(t, tt.lc, cfg, 4, 40, 4)
				ss, cst := server.Stats(), cs[0].Stats()
				if d := cst.TxPackets[wire.TypeData.Index()]; d[3] == 0 || sum(d) != d[3] {
					t.Errorf("client data packets by level %v, want all at 3", d)
				}
				if a := ss.TxPackets[wire.TypeAck.Index()]; a[6] == 0 || sum(a) != a[6] {
					t.Errorf("server ACKs by level %v, want all at 6", a)
				}
				none := []wire.Type{wire.TypeResend, wire.TypeBusy, wire.TypeCutoffs, wire.TypeNeedAck}
				if !cfg.UETRCCC {
					none = append(none, wire.TypeGrant) // RCCC's CREDITs count as grants
				}
				for _, ty := range none {
					if n := sum(ss.TxPackets[ty.Index()]) + sum(cst.TxPackets[ty.Index()]); n != 0 {
						t.Errorf("%d %v packets: UET sends none", n, ty)
					}
				}
				if ss.Malformed+cst.Malformed != 0 || ss.CallsFailed+cst.CallsFailed != 0 {
					t.Errorf("malformed %d, failed calls %d", ss.Malformed+cst.Malformed, ss.CallsFailed+cst.CallsFailed)
				}
				tt.check(t, ss, cst, network.Stats())
				t.Logf("net %+v; server %v; client %v", network.Stats(), roceCounters(ss), roceCounters(cst))
			})
		})
	}
}

// TestUETSleek: on a long link that delays some packets by more than 8
// packets' time but less than a window, the fixed count (uet_reorder_pkts,
// 8) takes the reordering for loss and resends, SLEEK's threshold
// (uet_sleek: 1.5 windows) does not; with random loss SLEEK still finds
// most losses from SACK gaps rather than timeouts.
func TestUETSleek(t *testing.T) {
	long := homatest.LinkConfig{Rate: 1e9, Delay: 100 * time.Microsecond, Seed: 11}
	reorder := long
	reorder.Reorder, reorder.ReorderDelay = 0.05, 200*time.Microsecond // about 17 packets
	lossy := long
	lossy.Loss = 0.02
	for _, tt := range []struct {
		name  string
		lc    homatest.LinkConfig
		sleek bool
		check func(t *testing.T, rtx, timeouts uint64, ns homatest.Stats)
	}{
		{"reorder/count", reorder, false, func(t *testing.T, rtx, _ uint64, ns homatest.Stats) {
			if ns.Reordered == 0 || ns.Lost != 0 || rtx == 0 {
				t.Errorf("reordered %d, lost %d, resent %d: want packets reordered beyond 8, none lost, some resent", ns.Reordered, ns.Lost, rtx)
			}
		}},
		{"reorder/sleek", reorder, true, func(t *testing.T, rtx, _ uint64, ns homatest.Stats) {
			if ns.Reordered == 0 || rtx != 0 {
				t.Errorf("reordered %d, resent %d: want reordering and nothing resent", ns.Reordered, rtx)
			}
		}},
		{"loss/sleek", lossy, true, func(t *testing.T, rtx, timeouts uint64, ns homatest.Stats) {
			if ns.Lost == 0 || rtx < 2*timeouts || rtx < ns.Lost/2 {
				t.Errorf("lost %d, resent %d, timeout firings %d: want most losses resent on SACK gaps", ns.Lost, rtx, timeouts)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := homaconf.Config{Variant: homaconf.VariantUET, UETSleek: tt.sleek, TimeoutTicks: 2000}
				server, cs, network := incast(t, tt.lc, cfg, 1, 20, 1)
				ss, cst := server.Stats(), cs[0].Stats()
				if ss.CallsFailed+cst.CallsFailed != 0 {
					t.Errorf("%d Calls failed", ss.CallsFailed+cst.CallsFailed)
				}
				tt.check(t, ss.Retransmits+cst.Retransmits, ss.RoCETimeouts+cst.RoCETimeouts, network.Stats())
				t.Logf("net %+v; server %v; client %v", network.Stats(), roceCounters(ss), roceCounters(cst))
			})
		})
	}
}

// TestUETLiveness: under 10% to 30% random loss on every link, every Call
// of the incast still completes with its exact bytes (no message hangs):
// SACK gaps, NACKs and timeouts between them recover every packet, ACKs
// included.
func TestUETLiveness(t *testing.T) {
	for _, tt := range []struct {
		loss  float64
		sleek bool
	}{{0.1, false}, {0.2, false}, {0.3, false}, {0.3, true}} {
		loss := tt.loss
		name := fmt.Sprintf("loss_%.0f%%", loss*100)
		if tt.sleek {
			name += "/sleek"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Seed: uint64(loss * 1000), Loss: loss}
				// A Call must outlast many timeouts in a row at 30%.
				cfg := homaconf.Config{Variant: homaconf.VariantUET, TimeoutTicks: 2000, UETSleek: tt.sleek}
				server, cs, network := incast(t, lc, cfg, 3, 12, 3)
				ss, cst := server.Stats(), cs[0].Stats()
				if ss.CallsFailed+cst.CallsFailed != 0 {
					t.Errorf("%d Calls failed", ss.CallsFailed+cst.CallsFailed)
				}
				if network.Stats().Lost == 0 || ss.Retransmits+cst.Retransmits == 0 {
					t.Errorf("lost %d, retransmits %d: want both nonzero", network.Stats().Lost, ss.Retransmits+cst.Retransmits)
				}
			})
		})
	}
}

// TestUETAckBeyondTheBitmap loses the first packet of a 300 KB request
// three times. The receiver's cumulative PSN stays at the hole while the
// packets after it arrive, so its SACK bitmap (64 PSNs past the hole)
// cannot name those further on; each ACK still names the packet that
// asked for it, and the sender must take that as acknowledged. It did
// not: the packets past the bitmap were declared lost and sent again, and
// the window they held stayed full until their timeouts (14.8 ms and 4
// needless resends here; a ring all-reduce with 1% loss between switches
// stalled).
func TestUETAckBeyondTheBitmap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 300_000
		sends := map[uint32]int{} // data packets seen per PSN offset from the first
		var first uint32
		var seen bool
		lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
			var h wire.UETPDS
			if src != clientAddr {
				return false
			}
			if _, err := wire.ParseUETPDS(p.Buf, &h); err != nil || (h.Type != wire.UETRUDReq && h.Type != wire.UETRUDCCReq) {
				return false
			}
			if !seen {
				first, seen = h.PSN, true
			}
			off := h.PSN - first
			sends[off]++
			return off == 0 && sends[off] <= 3
		}}
		client, srv, _ := pair(t, lc, homaconf.Config{Variant: homaconf.VariantUET})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		serveFixed(ctx, srv, []byte("ok"))
		start := time.Now()
		if _, _, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), make([]byte, size)); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		resent := 0
		for _, n := range sends {
			resent += n - 1
		}
		t.Logf("300 KB call with its first packet lost three times: %v, %d packets sent again", d, resent)
		if sends[0] != 4 {
			t.Fatalf("the first packet went %d times: want it lost three times and sent a fourth", sends[0])
		}
		if resent != 3 || d > 8*time.Millisecond {
			t.Errorf("%d packets sent again in %v: want only the first packet's 3, within 8 ms", resent, d)
		}
	})
}
