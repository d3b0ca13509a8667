package homa_test

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/wire"
)

// TestRoCE runs the roce variant's incast (four clients, 40 Calls each,
// 4 at a time, sizes up to 150 KB) over the in-memory network: lossless,
// with random loss (go-back-N and go-back-0 recover it), and with ECN
// marking at the server's port (DCQCN reacts to the CNPs). Every RPC
// completes with the exact bytes (incast checks), and the counters show
// each mechanism at work.
func TestRoCE(t *testing.T) {
	base := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Seed: 7}
	marking := base
	marking.ECNAbovePackets = 8
	// Random loss on top of ECN marking: without a congestion signal,
	// line-rate senders whose go-back-N resends whole windows into 32 ms
	// of queue time out again and again (RoCE's reason for a lossless or
	// a congestion-controlled fabric).
	lossy := marking
	lossy.Loss = 0.02
	// Go-back-0 starts a whole message again for each loss: a 150 KB
	// message of 104 packets gets through 2% loss whole one time in
	// eight, so its case loses less.
	lossy0 := lossy
	lossy0.Loss = 0.002
	for _, tt := range []struct {
		name    string
		lc      homatest.LinkConfig
		cfg     homaconf.Config
		check   func(t *testing.T, server, client homa.Stats, ns homatest.Stats)
		qpsWant int
	}{
		{"lossless", base, homaconf.Config{}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			if ss.Retransmits+cs.Retransmits != 0 || ss.NAKsSent != 0 || ss.RoCETimeouts+cs.RoCETimeouts != 0 {
				t.Errorf("retransmits %d/%d, NAKs %d, timeouts %d/%d on a lossless network: want none",
					ss.Retransmits, cs.Retransmits, ss.NAKsSent, ss.RoCETimeouts, cs.RoCETimeouts)
			}
		}, 1},
		{"loss/go_back_n", lossy, homaconf.Config{}, lossChecks, 1},
		{"loss/go_back_0", lossy0, homaconf.Config{RoCEGoBack0: true}, lossChecks, 1},
		{"loss/qps_4", lossy, homaconf.Config{RoCEQPsPerPeer: 4}, lossChecks, 4},
		{"ecn/dcqcn", marking, homaconf.Config{}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			if ns.Marked == 0 || ss.CNPsSent == 0 || cs.CNPsReceived == 0 || cs.RateCuts == 0 {
				t.Errorf("marked %d, server CNPs sent %d, client CNPs received %d, rate cuts %d: want all nonzero",
					ns.Marked, ss.CNPsSent, cs.CNPsReceived, cs.RateCuts)
			}
		}, 1},
		{"ecn/no_dcqcn", marking, homaconf.Config{RoCENoDCQCN: true}, func(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
			if ns.Marked == 0 || ss.CNPsSent != 0 || cs.RateCuts != 0 {
				t.Errorf("marked %d, CNPs %d, cuts %d: want marks but no CNPs without DCQCN", ns.Marked, ss.CNPsSent, cs.RateCuts)
			}
		}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tt.cfg
				cfg.Variant = homaconf.VariantRoCE
				server, cs, network := incast(t, tt.lc, cfg, 4, 40, 4)
				ss, cst := server.Stats(), cs[0].Stats()
				// Data at the data level, acknowledgements at the control
				// level, no Homa control packet at all.
				if d := cst.TxPackets[wire.TypeData.Index()]; d[3] == 0 || sum(d) != d[3] {
					t.Errorf("client data packets by level %v, want all at 3", d)
				}
				if a := ss.TxPackets[wire.TypeAck.Index()]; a[6] == 0 || sum(a) != a[6] {
					t.Errorf("server ACKs by level %v, want all at 6", a)
				}
				for _, ty := range []wire.Type{wire.TypeGrant, wire.TypeResend, wire.TypeBusy, wire.TypeCutoffs, wire.TypeNeedAck} {
					if n := sum(ss.TxPackets[ty.Index()]) + sum(cst.TxPackets[ty.Index()]); n != 0 {
						t.Errorf("%d %v packets: RoCE sends none", n, ty)
					}
				}
				if ss.Malformed+cst.Malformed != 0 || ss.CallsFailed+cst.CallsFailed != 0 {
					t.Errorf("malformed %d, failed calls %d", ss.Malformed+cst.Malformed, ss.CallsFailed+cst.CallsFailed)
				}
				tt.check(t, ss, cst, network.Stats())
				t.Logf("net %+v; server %v", network.Stats(), roceCounters(ss))
			})
		})
	}
}

// lossChecks: the network lost packets and the receivers NAKed the gaps
// or the senders timed out, and the senders went back.
func lossChecks(t *testing.T, ss, cs homa.Stats, ns homatest.Stats) {
	t.Helper()
	if ns.Lost == 0 {
		t.Fatal("the network lost nothing")
	}
	if ss.NAKsSent+cs.NAKsSent == 0 || ss.OutOfSequence+cs.OutOfSequence == 0 {
		t.Errorf("NAKs %d, out of sequence %d: want both nonzero", ss.NAKsSent+cs.NAKsSent, ss.OutOfSequence+cs.OutOfSequence)
	}
	if ss.Retransmits+cs.Retransmits == 0 {
		t.Error("no retransmissions")
	}
}

func roceCounters(s homa.Stats) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range s.Map() {
		switch k {
		case "cnps_sent", "cnps_received", "naks_sent", "naks_received", "out_of_sequence", "rate_cuts", "roce_timeouts", "retransmits":
			out[k] = v
		}
	}
	return out
}

// TestRoCEHeadOfLine checks RoCE's in-order delivery on one queue pair: a
// short request queued behind a long one on the same queue pair completes
// after it, and with two queue pairs it need not wait.
func TestRoCEHeadOfLine(t *testing.T) {
	for _, tt := range []struct {
		qps        int
		shortFirst bool
	}{{1, false}, {2, true}} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cfg := homaconf.Config{Variant: homaconf.VariantRoCE, RoCEQPsPerPeer: tt.qps}
			client, srv, _ := pair(t, homatest.LinkConfig{Rate: 1e8, Delay: 2 * time.Microsecond}, cfg)
			serveEcho(ctx, t, srv)
			dest := netip.AddrPortFrom(serverAddr, serverPort)
			var order atomic.Int32
			var longAt, shortAt int32
			done := make(chan struct{})
			go func() {
				defer close(done)
				if _, _, err := client.Call(ctx, dest, make([]byte, 500_000)); err != nil {
					t.Error(err)
				}
				longAt = order.Add(1)
			}()
			// Ids go up by 2: the second Call's id selects the next queue
			// pair when there are two.
			time.Sleep(time.Millisecond)
			if _, _, err := client.Call(ctx, dest, []byte("short")); err != nil {
				t.Fatal(err)
			}
			shortAt = order.Add(1)
			<-done
			if (shortAt < longAt) != tt.shortFirst {
				t.Errorf("%d queue pairs: short finished %d, long %d; want short first %v", tt.qps, shortAt, longAt, tt.shortFirst)
			}
		})
	}
}

// TestRoCEWire checks the packets' bytes against the InfiniBand layouts:
// a SEND Only's BTH, an ACK's and a NAK's AETH, a CNP's opcode and size.
func TestRoCEWire(t *testing.T) {
	b := wire.AppendBTH(nil, &wire.BTH{Opcode: wire.OpSendOnly, PKey: wire.DefaultPKey, DestQP: 0x100, AckReq: true, PSN: 0xabcdef})
	b = append(b, "payload"...)
	b = wire.AppendICRC(b)
	want := []byte{0x04, 0, 0xff, 0xff, 0, 0, 0x01, 0, 0x80, 0xab, 0xcd, 0xef}
	if string(b[:12]) != string(want) || len(b) != 12+7+4 {
		t.Errorf("SEND Only % x, want BTH % x + payload + 4-byte ICRC", b, want)
	}
	p, err := wire.ParseRoCE(b)
	if err != nil || p.Opcode != wire.OpSendOnly || p.DestQP != 0x100 || !p.AckReq || p.PSN != 0xabcdef || string(p.Payload) != "payload" {
		t.Errorf("parsed %+v, %v", p, err)
	}
	for _, syn := range []uint8{wire.SyndromeAck, wire.SyndromeNakPSN} {
		a := wire.AppendRoCEAck(nil, 0x101, 7, syn, 3)
		if len(a) != wire.RoCEAckLen || a[0] != 0x11 || a[12] != syn || a[15] != 3 {
			t.Errorf("ACK % x", a)
		}
		if p, err := wire.ParseRoCE(a); err != nil || p.Syndrome != syn || p.PSN != 7 || p.MSN != 3 {
			t.Errorf("parsed ACK %+v, %v", p, err)
		}
	}
	c := wire.AppendCNP(nil, 0x100)
	if len(c) != wire.CNPLen || c[0] != 0x81 {
		t.Errorf("CNP % x", c)
	}
	for _, bad := range [][]byte{nil, make([]byte, 15), append([]byte{0x06}, make([]byte, 20)...), wire.AppendICRC(wire.AppendBTH(nil, &wire.BTH{Opcode: wire.OpAck}))} {
		if _, err := wire.ParseRoCE(bad); err == nil {
			t.Errorf("ParseRoCE(% x) accepted", bad)
		}
	}
}
