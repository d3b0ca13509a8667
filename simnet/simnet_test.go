package simnet

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/internal/fabric"
)

// star builds a one-switch network of n hosts at rate, programmed by the
// controller.
func star(t testing.TB, n int, rate uint64) *Network {
	t.Helper()
	return starWith(t, n, Config{RateBps: rate, Delay: time.Microsecond})
}

// starWith is star with cfg's rate and delays (its hosts and switches are
// the star's).
func starWith(t testing.TB, n int, cfg Config) *Network {
	t.Helper()
	return starPolicy(t, n, cfg, controller.DefaultPolicy())
}

// starPolicy is starWith with the switch programmed with policy.
func starPolicy(t testing.TB, n int, cfg Config, policy controller.Policy) *Network {
	t.Helper()
	topo := &controller.Topology{Switches: []controller.Switch{{Name: "s1", DeviceID: 1}}}
	var hosts []Host
	for i := 1; i <= n; i++ {
		ip := netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})
		mac := controller.MAC{2, 0, 0, 0, 0, byte(i)}
		topo.Hosts = append(topo.Hosts, controller.Host{Name: fmt.Sprintf("h%d", i), IP: ip, MAC: mac, Switch: "s1", Port: i})
		hosts = append(hosts, Host{Name: fmt.Sprintf("h%d", i), IP: ip, MAC: uint64(i) | 2<<40, Switch: "s1", Port: uint16(i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sws, err := StartSwitches(ctx, topo, policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sws.Close() })
	cfg.WireOverhead, cfg.Hosts, cfg.Switches = fabric.WireOverhead, hosts, sws.Pipelines()
	net, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return net
}

func homaCfg(rate uint64) homaconf.Config {
	return homaconf.Config{LinkBps: rate, FrameOverhead: fabric.Framing, UnloadedRTT: 20 * time.Microsecond}
}

// echo serves port 4000 on h with responses of respBytes.
func echo(t *testing.T, h *Node, respBytes int) {
	t.Helper()
	resp := make([]byte, respBytes)
	if err := h.Serve(4000, func(sr *homa.ServerRPC) {
		if err := h.Reply(sr, resp); err != nil {
			t.Errorf("reply: %v", err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// TestUnloadedRTTIsWireTime checks one RPC on an idle network takes what
// its bytes take on the wire, store-and-forward through the switch, plus
// the fixed latencies configured: the simulation adds no time of its own.
func TestUnloadedRTTIsWireTime(t *testing.T) {
	const rate = 10_000_000_000
	// The Homa paper's simulator's host and switch latencies.
	paper := Config{SwitchDelay: 250 * time.Nanosecond, HostTxDelay: 500 * time.Nanosecond, HostRxDelay: 500 * time.Nanosecond}
	tests := []struct {
		name  string
		req   int
		fixed Config
	}{
		{"100B", 100, Config{}},
		{"1400B", 1400, Config{}},
		{"100B with latencies", 100, paper},
		{"1400B with latencies", 1400, paper},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.fixed
			cfg.RateBps, cfg.Delay = rate, time.Microsecond
			n := starWith(t, 2, cfg)
			epoch := time.Unix(1_000_000, 0)
			for i, h := range n.Nodes() {
				if err := h.Start(homaCfg(rate), uint64(i)<<40, epoch, nil); err != nil {
					t.Fatal(err)
				}
			}
			echo(t, n.Node("h2"), 100)
			var got time.Duration
			n.Node("h1").Call(netip.AddrPortFrom(n.Node("h2").IP, 4000), make([]byte, tt.req), func(_ []byte, info homa.CallInfo, err error) {
				if err != nil {
					t.Errorf("call: %v", err)
				}
				got = info.Done.Sub(info.Sent)
			})
			n.Clock().Run(int64(10 * time.Millisecond))
			// Two hops each way, each a frame's wire time plus the delay.
			hdr := 20 + 40 // IPv4 + a DATA header, about
			wireT := func(b int) time.Duration {
				return fabric.WireTime(rate, b+hdr+fabric.Framing) + time.Microsecond
			}
			// Each way: a host's send and receive time, one switch's.
			fixed := 2 * (cfg.HostTxDelay + cfg.SwitchDelay + cfg.HostRxDelay)
			want := 2*wireT(tt.req) + 2*wireT(100) + fixed
			if got < want*95/100 || got > want*105/100 {
				t.Errorf("RTT %v, want about %v", got, want)
			}
		})
	}
}

// run drives an incast of clients calling h1 on a fresh network and
// returns every call's completion time and the counters.
func runIncast(t *testing.T, clients, calls int) []int64 {
	t.Helper()
	const rate = 1_000_000_000
	n := star(t, clients+1, rate)
	epoch := time.Unix(1_000_000, 0)
	for i, h := range n.Nodes() {
		if err := h.Start(homaCfg(rate), uint64(i+1)<<40, epoch, nil); err != nil {
			t.Fatal(err)
		}
	}
	echo(t, n.Node("h1"), 100)
	var done []int64
	srv := netip.AddrPortFrom(n.Node("h1").IP, 4000)
	for c := 2; c <= clients+1; c++ {
		h := n.Node(fmt.Sprintf("h%d", c))
		for k := range calls {
			at := int64(k) * int64(200*time.Microsecond)
			size := 1000 + 37_000*((k+c)%5)
			n.Clock().At(at, func() {
				h.Call(srv, make([]byte, size), func(_ []byte, info homa.CallInfo, err error) {
					if err != nil {
						t.Errorf("call from %s: %v", h.Name, err)
						return
					}
					done = append(done, info.Done.Sub(epoch).Nanoseconds())
				})
			})
		}
	}
	n.Clock().Run(int64(time.Second))
	if len(done) != clients*calls {
		t.Fatalf("%d of %d calls completed", len(done), clients*calls)
	}
	return done
}

// TestRepeatsExactly checks two runs of the same incast give the same
// completion times, call for call.
func TestRepeatsExactly(t *testing.T) {
	a := runIncast(t, 4, 50)
	b := runIncast(t, 4, 50)
	if len(a) != len(b) {
		t.Fatalf("%d vs %d completions", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("completion %d at %d ns in one run, %d ns in the other", i, a[i], b[i])
		}
	}
}

// TestLinkDown checks a link-down window drops what crosses the link both
// ways, counts it, and that Homa recovers the calls it hit once it is up.
func TestLinkDown(t *testing.T) {
	n := echoStar(t)
	if err := n.SetDown("h1", int64(2*time.Millisecond), int64(4*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	done, failed := callsOf5000(n, 100)
	if done != 100 || failed != 0 {
		t.Errorf("%d calls completed and %d failed of 100", done, failed)
	}
	var drops uint64
	for _, p := range n.SwitchStats()["s1"].Ports {
		if p.Port == 1 {
			drops = p.FaultDrops
		}
	}
	if drops == 0 {
		t.Error("the down link dropped nothing")
	}
}

// echoStar is two hosts on a switch at 1 Gbit/s, running Homa, h1 an echo
// server on port 4000 answering with 100 bytes.
func echoStar(t *testing.T) *Network {
	t.Helper()
	const rate = 1_000_000_000
	n := star(t, 2, rate)
	epoch := time.Unix(1_000_000, 0)
	for i, h := range n.Nodes() {
		if err := h.Start(homaCfg(rate), uint64(i+1)<<40, epoch, nil); err != nil {
			t.Fatal(err)
		}
	}
	echo(t, n.Node("h1"), 100)
	return n
}

// callsOf5000 has h2 call h1's echo server (port 4000) k times, 100 µs
// apart, with 5,000-byte requests, runs the network for 2 s and counts
// the calls that completed and failed.
func callsOf5000(n *Network, k int) (done, failed int) {
	srv := netip.AddrPortFrom(n.Node("h1").IP, 4000)
	for i := range k {
		n.Clock().At(int64(i)*int64(100*time.Microsecond), func() {
			n.Node("h2").Call(srv, make([]byte, 5000), func(_ []byte, _ homa.CallInfo, err error) {
				if err != nil {
					failed++
					return
				}
				done++
			})
		})
	}
	n.Clock().Run(int64(2 * time.Second))
	return done, failed
}

// TestLossCounted: loss on a host's link, either way, is counted at the
// switch's port toward the host, as the embedded switch counts its egress
// and ingress drops, and Homa recovers every call.
func TestLossCounted(t *testing.T) {
	for _, tc := range []struct {
		name             string
		toHost, fromHost float64
	}{
		{"to the host", 0.2, 0},
		{"from the host", 0, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := echoStar(t)
			if err := n.SetLoss("h2", tc.toHost, tc.fromHost); err != nil {
				t.Fatal(err)
			}
			if done, _ := callsOf5000(n, 50); done != 50 {
				t.Errorf("%d calls of 50 completed", done)
			}
			drops := map[uint16]uint64{}
			for _, p := range n.SwitchStats()["s1"].Ports {
				drops[p.Port] = p.FaultDrops
			}
			if drops[2] == 0 || drops[1] != 0 {
				t.Errorf("fault drops by port %v: want some at port 2 (h2's), none at port 1", drops)
			}
		})
	}
}

// TestOneWayMessage sends one-way messages (homa.Driven.Send): each ends
// when its receiver has it whole, at its one-way wire time when the
// network is idle, and no DATA goes back (a scheduled message's receiver
// still sends its grants); the sender finishes without an ACK.
func TestOneWayMessage(t *testing.T) {
	const rate = 10_000_000_000
	tests := []struct {
		name     string
		size     int
		maxGrant int // the receiver's grants, at most
	}{
		{"100B unscheduled", 100, 0},
		{"200KB scheduled", 200_000, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{RateBps: rate, Delay: time.Microsecond, SwitchDelay: 250 * time.Nanosecond,
				HostTxDelay: 500 * time.Nanosecond, HostRxDelay: 500 * time.Nanosecond}
			n := starWith(t, 2, cfg)
			epoch := time.Unix(1_000_000, 0)
			for i, h := range n.Nodes() {
				if err := h.Start(homaCfg(rate), uint64(i)<<40, epoch, nil); err != nil {
					t.Fatal(err)
				}
			}
			snd, rcv := n.Node("h1"), n.Node("h2")
			var delivered int64
			if err := rcv.Serve(4000, func(sr *homa.ServerRPC) {
				delivered = n.Clock().Now()
				if err := rcv.Drop(sr); err != nil {
					t.Errorf("drop: %v", err)
				}
				snd.Delivered(sr.ID())
			}); err != nil {
				t.Fatal(err)
			}
			var ended time.Duration
			ends := 0
			snd.Send(netip.AddrPortFrom(rcv.IP, 4000), make([]byte, tt.size), func(info homa.CallInfo, err error) {
				if err != nil {
					t.Errorf("send: %v", err)
				}
				ends++
				ended = info.Done.Sub(info.Sent)
			})
			n.Clock().Run(int64(20 * time.Millisecond))
			if ends != 1 {
				t.Fatalf("the message ended %d times, want once", ends)
			}
			if got := time.Duration(delivered); got != ended {
				t.Errorf("sender saw it end after %v, the receiver had it at %v: want the same instant", ended, got)
			}
			if tt.maxGrant == 0 {
				hdr := 20 + 56 // IPv4 + Homa's DATA header
				want := 2*(fabric.WireTime(rate, tt.size+hdr+fabric.Framing)+time.Microsecond) +
					cfg.HostTxDelay + cfg.SwitchDelay + cfg.HostRxDelay
				if ended < want*95/100 || ended > want*105/100 {
					t.Errorf("one-way time %v, want about %v (wire time and latencies one way)", ended, want)
				}
			}
			back := rcv.Endpoint().Stats().Map()
			var data, grants uint64
			for k, v := range back {
				switch {
				case strings.HasPrefix(k, "tx_data_"):
					data += v
				case strings.HasPrefix(k, "tx_grant_"):
					grants += v
				}
			}
			if data != 0 || grants > uint64(tt.maxGrant) || back["served"] != 1 {
				t.Errorf("receiver sent %d DATA and %d GRANTs and served %d, want no DATA, at most %d grants, 1 served",
					data, grants, back["served"], tt.maxGrant)
			}
			if tt.maxGrant > 0 && grants == 0 {
				t.Errorf("a scheduled message got no grants")
			}
			st := snd.Endpoint().Stats()
			if st.CallsCompleted != 1 || st.ClientRPCs != 0 {
				t.Errorf("sender: %d calls completed, %d client RPCs left, want 1 and 0", st.CallsCompleted, st.ClientRPCs)
			}
			// Let a few ticks pass: nothing more goes either way.
			before := snd.Endpoint().Stats().TxBytes + rcv.Endpoint().Stats().TxBytes
			n.Clock().Run(int64(60 * time.Millisecond))
			if after := snd.Endpoint().Stats().TxBytes + rcv.Endpoint().Stats().TxBytes; after != before {
				t.Errorf("%d bytes sent after the message ended, want none (no ACK, no RESEND)", after-before)
			}
		})
	}
}

// TestSwitchBufferLimits checks the switch's buffer settings reach the
// twin's ports as they reach the embedded switch's: four hosts send a
// 200 kB request each to h1 at once, so their unscheduled bytes and the
// first grants' queue at h1's downlink (queues 10,000 packets deep, so
// only the buffer limits what they hold). A 60 kB buffer shared with
// alpha 1 lets one queue take about half of it (q+n <= 60 kB - q) and
// drops the rest; a 20 kB port limit caps every queue below it; with
// neither, nothing is dropped.
func TestSwitchBufferLimits(t *testing.T) {
	const rate = 10_000_000_000
	tests := []struct {
		name    string
		cfg     Config
		limit   int // the largest a queue may hold; 0: no limit
		atLeast int // the largest queue's peak must exceed this
	}{
		{name: "no limit", atLeast: 31_000},
		{name: "shared 60 kB alpha 1", cfg: Config{SharedBufferBytes: 60_000, SharedAlpha: 1}, limit: (60_000 + 1514) / 2},
		{name: "port 20 kB", cfg: Config{PortBufferBytes: 20_000}, limit: 20_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.RateBps, cfg.Delay, cfg.QueueDepthPkts = rate, time.Microsecond, 10_000
			n := starWith(t, 5, cfg)
			epoch := time.Unix(1_000_000, 0)
			for i, h := range n.Nodes() {
				if err := h.Start(homaCfg(rate), uint64(i)<<40, epoch, nil); err != nil {
					t.Fatal(err)
				}
			}
			echo(t, n.Node("h1"), 100)
			done := 0
			for _, c := range []string{"h2", "h3", "h4", "h5"} {
				n.Node(c).Call(netip.AddrPortFrom(n.Node("h1").IP, 4000), make([]byte, 200_000), func(_ []byte, _ homa.CallInfo, err error) {
					if err != nil {
						t.Errorf("%s: call: %v", c, err)
					}
					done++
				})
			}
			n.Clock().Run(int64(50 * time.Millisecond))
			if done != 4 {
				t.Fatalf("%d of 4 calls completed", done)
			}
			var peak int
			var drops uint64
			for _, p := range n.SwitchStats()["s1"].Ports {
				if p.Port != 1 {
					continue
				}
				for _, q := range p.Queues {
					peak = max(peak, q.PeakBytes)
					drops += q.DropPkts
				}
			}
			switch {
			case tt.limit == 0 && (drops > 0 || peak <= tt.atLeast):
				t.Errorf("without a limit h1's downlink dropped %d frames and its largest queue peaked at %d bytes; want no drops and more than %d", drops, peak, tt.atLeast)
			case tt.limit > 0 && (drops == 0 || peak > tt.limit):
				t.Errorf("h1's downlink dropped %d frames and its largest queue peaked at %d bytes; want drops and at most %d", drops, peak, tt.limit)
			}
		})
	}
}
