package simnet

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/simnet/tcpmodel"
)

// bulk is a TCP experiment on a star: senders h2.. each keep one message
// of msgBytes outstanding to h1 (a closed loop, as incast's bulk phase),
// for length of virtual time; the switch marks ECN at ecnK packets (0:
// never) in queues of depth packets.
type bulk struct {
	senders  int
	law      tcpmodel.Law
	ecnK     uint32
	depth    int
	msgBytes int
	length   time.Duration
	delack   bool // delayed ACKs
}

// bulkResult is what a bulk experiment measured: each sender's goodput
// (request payload bytes completed per second after the first quarter),
// the bottleneck queue's depth sampled every 100 µs after the first
// quarter, every completion time, and h1's port counters.
type bulkResult struct {
	goodput []float64
	depths  []int
	done    []int64
	stats   []tcpmodel.Stats
	ce      uint64
}

const bulkRate = 100_000_000

func (b bulk) run(t *testing.T) bulkResult {
	t.Helper()
	pol := controller.DefaultPolicy()
	pol.ECNThresholdPkts = b.ecnK
	n := starPolicy(t, b.senders+1, Config{RateBps: bulkRate, Delay: time.Microsecond, QueueDepthPkts: b.depth}, pol)
	cfg := tcpmodel.Config{MSS: 1460, Law: b.law, DelayedAck: b.delack}
	for _, h := range n.Nodes() {
		if err := h.StartTCP(cfg); err != nil {
			t.Fatal(err)
		}
	}
	srv := n.Node("h1")
	if err := srv.TCP().Serve(4000, func(sr *tcpmodel.ServerRPC) {
		if err := srv.TCP().Reply(n.Clock().Now(), sr, 100); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	end := b.length.Nanoseconds()
	from := end / 4
	res := bulkResult{goodput: make([]float64, b.senders)}
	req := make([]byte, b.msgBytes)
	dst := netip.AddrPortFrom(srv.IP, 4000)
	for i := range b.senders {
		h := n.Node(fmt.Sprintf("h%d", i+2))
		var next func()
		next = func() {
			h.TCP().Call(n.Clock().Now(), dst, req, func(r tcpmodel.Result, err error) {
				if err != nil {
					t.Errorf("%s: %v", h.Name, err)
					return
				}
				res.done = append(res.done, r.Done)
				if r.Done >= from && r.Done < end {
					res.goodput[i] += float64(b.msgBytes) * 8 / (float64(end-from) / 1e9)
				}
				next()
			})
		}
		n.Clock().At(0, next)
	}
	bottleneck := n.switches["s1"].ports.get(1)
	var sample func()
	sample = func() {
		if n.Clock().Now() >= from {
			res.depths = append(res.depths, bottleneck.pm.Stats().QueuedPkts)
		}
		if n.Clock().Now() < end {
			n.Clock().At(n.Clock().Now()+int64(100*time.Microsecond), sample)
		}
	}
	n.Clock().At(0, sample)
	n.Clock().Run(end)
	for _, h := range n.Nodes() {
		res.stats = append(res.stats, h.TCP().Stats())
	}
	for _, q := range bottleneck.ceMarks {
		res.ce += q
	}
	return res
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func median(v []int) int {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// payloadShare is the share of a link's bits a full segment's payload
// is: 1460 of 1460 + 40 (IPv4, TCP) + 14 (Ethernet) + 24 (preamble, gap,
// FCS).
const payloadShare = 1460.0 / 1538

// TestTCPModelFillsLink: one flow of each law fills the link, its goodput
// within 10% of the payload's share of the rate; Reno fills the drop-tail
// queue (it backs off only on loss), DCTCP keeps it near the marking
// threshold.
func TestTCPModelFillsLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		law  tcpmodel.Law
		ecnK uint32
	}{{"reno", tcpmodel.Reno, 0}, {"dctcp", tcpmodel.DCTCP, 20}} {
		t.Run(tc.name, func(t *testing.T) {
			r := bulk{senders: 1, law: tc.law, ecnK: tc.ecnK, depth: 256, msgBytes: 100_000, length: 2 * time.Second}.run(t)
			want := bulkRate * payloadShare
			if g := sum(r.goodput); g < 0.9*want || g > 1.02*want {
				t.Errorf("goodput %.1f Mbit/s, want about %.1f", g/1e6, want/1e6)
			}
			t.Logf("goodput %.1f Mbit/s, queue median %d peak %d, stats %+v", sum(r.goodput)/1e6, median(r.depths), slices.Max(r.depths), r.stats[1])
		})
	}
}

// TestTCPModelSharesLink: two Reno flows into one receiver share its link,
// each within 30% of half of it, and together fill it.
func TestTCPModelSharesLink(t *testing.T) {
	r := bulk{senders: 2, law: tcpmodel.Reno, depth: 256, msgBytes: 1_000_000, length: 4 * time.Second}.run(t)
	want := bulkRate * payloadShare
	if g := sum(r.goodput); g < 0.9*want {
		t.Errorf("goodput %.1f Mbit/s together, want about %.1f", g/1e6, want/1e6)
	}
	for i, g := range r.goodput {
		if g < 0.35*want || g > 0.65*want {
			t.Errorf("flow %d: %.1f Mbit/s of %.1f together, want about half", i, g/1e6, sum(r.goodput)/1e6)
		}
	}
	t.Logf("goodputs %.1f Mbit/s", r.goodput)
}

// TestTCPModelSACKRecovery: four Reno flows into a 64-packet queue lose
// packets at each window's peak, often several in one window. The SACK
// blocks cross the simulated frames (without them RACK could mark nothing:
// only a segment delivered after a hole shows it), so every loss is
// marked by RACK and repaired in recovery, with no timeout, no tail loss
// probe and no retransmission of a segment not marked lost.
func TestTCPModelSACKRecovery(t *testing.T) {
	r := bulk{senders: 4, law: tcpmodel.Reno, depth: 64, msgBytes: 1_000_000, length: 2 * time.Second}.run(t)
	var s tcpmodel.Stats
	for _, h := range r.stats {
		s.FastRecovery += h.FastRecovery
		s.MarkedLost += h.MarkedLost
		s.Retransmits += h.Retransmits
		s.Probes += h.Probes
		s.Timeouts += h.Timeouts
	}
	t.Logf("%d recoveries, %d segments marked lost, %d retransmitted, %d probes, %d timeouts",
		s.FastRecovery, s.MarkedLost, s.Retransmits, s.Probes, s.Timeouts)
	if s.FastRecovery == 0 || s.Retransmits <= s.FastRecovery {
		t.Errorf("%d recoveries for %d retransmissions, want losses, several in some windows", s.FastRecovery, s.Retransmits)
	}
	if s.Timeouts != 0 || s.Probes != 0 || s.Retransmits != s.MarkedLost {
		t.Errorf("%d timeouts, %d probes, %d retransmissions of %d segments marked lost; want every loss found by SACK and RACK",
			s.Timeouts, s.Probes, s.Retransmits, s.MarkedLost)
	}
}

// TestDCTCPModelQueueNearThreshold: four DCTCP flows keep the bottleneck
// queue near the switch's marking threshold K = 20 (median within K/2 of
// it, P95 under 3K, no drop), where Reno's fill the 256-packet buffer;
// both fill the link; with an ACK per segment and with delayed ACKs.
func TestDCTCPModelQueueNearThreshold(t *testing.T) {
	for _, delack := range []bool{false, true} {
		t.Run(fmt.Sprintf("delayed-ack=%v", delack), func(t *testing.T) { dctcpQueue(t, delack) })
	}
}

func dctcpQueue(t *testing.T, delack bool) {
	const k = 20
	d := bulk{senders: 4, law: tcpmodel.DCTCP, ecnK: k, depth: 256, msgBytes: 1_000_000, length: 4 * time.Second, delack: delack}.run(t)
	r := bulk{senders: 4, law: tcpmodel.Reno, ecnK: k, depth: 256, msgBytes: 1_000_000, length: 4 * time.Second, delack: delack}.run(t)
	p95 := func(v []int) int { s := slices.Clone(v); slices.Sort(s); return s[len(s)*95/100] }
	t.Logf("dctcp: queue median %d p95 %d peak %d, %d CE marks, goodput %.1f; reno: median %d p95 %d peak %d, goodput %.1f",
		median(d.depths), p95(d.depths), slices.Max(d.depths), d.ce, sum(d.goodput)/1e6,
		median(r.depths), p95(r.depths), slices.Max(r.depths), sum(r.goodput)/1e6)
	if m := median(d.depths); m < k/2 || m > k+k/2 {
		t.Errorf("DCTCP's queue median %d packets, want within %d of K = %d", m, k/2, k)
	}
	if p := p95(d.depths); p > 3*k {
		t.Errorf("DCTCP's queue P95 %d packets, want at most 3K = %d", p, 3*k)
	}
	if d.ce == 0 {
		t.Error("the switch marked nothing CE")
	}
	var timeouts, recoveries uint64
	for _, s := range d.stats {
		timeouts += s.Timeouts
		recoveries += s.FastRecovery
	}
	if timeouts+recoveries > 0 {
		t.Errorf("DCTCP lost packets: %d timeouts, %d fast recoveries", timeouts, recoveries)
	}
	if m := median(r.depths); m < 128 {
		t.Errorf("Reno's queue median %d packets, want at least half the 256-packet buffer", m)
	}
	want := bulkRate * payloadShare
	for name, g := range map[string]float64{"dctcp": sum(d.goodput), "reno": sum(r.goodput)} {
		if g < 0.9*want {
			t.Errorf("%s: goodput %.1f Mbit/s, want about %.1f", name, g/1e6, want/1e6)
		}
	}
}

// TestTCPModelRepeatsExactly: the same experiment twice completes every
// call at the same virtual time.
func TestTCPModelRepeatsExactly(t *testing.T) {
	b := bulk{senders: 3, law: tcpmodel.DCTCP, ecnK: 20, depth: 64, msgBytes: 300_000, length: time.Second}
	x, y := b.run(t), b.run(t)
	if !slices.Equal(x.done, y.done) || len(x.done) == 0 {
		t.Fatalf("%d and %d completions differ", len(x.done), len(y.done))
	}
}

// TestPrioritizedNIC: a PIAS host that sends a 100 B message on a
// connection of its own just after a 1 MB one has the short one's segment
// behind the long one's first window in a FIFO NIC (ten full segments,
// 1.2 ms at 100 Mbit/s); with PrioritizeNIC its level-0 segment passes the
// long message's demoted ones and it arrives within a few segments' time.
func TestPrioritizedNIC(t *testing.T) {
	// Thresholds: 1 segment at level 0, the rest at level 1 (CS6).
	pias := &tcpmodel.PIAS{Thresholds: []uint64{1460}, DSCP: []uint8{56, 48}}
	for _, prio := range []bool{false, true} {
		n := starPolicy(t, 2, Config{RateBps: bulkRate, Delay: time.Microsecond, QueueDepthPkts: 1000}, controller.DefaultPolicy())
		cfg := tcpmodel.Config{MSS: 1460, Law: tcpmodel.Reno, OpenWhenBusy: true, PIAS: pias}
		for _, h := range n.Nodes() {
			if err := h.StartTCP(cfg); err != nil {
				t.Fatal(err)
			}
			if prio {
				if err := h.PrioritizeNIC(); err != nil {
					t.Fatal(err)
				}
			}
		}
		srv, cl := n.Node("h1"), n.Node("h2")
		if err := srv.TCP().Serve(4000, func(sr *tcpmodel.ServerRPC) {
			if err := srv.TCP().Delivered(n.Clock().Now(), sr); err != nil {
				t.Error(err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		dst := netip.AddrPortFrom(srv.IP, 4000)
		var short int64
		start := int64(20 * time.Microsecond) // the long message's first window is in the NIC
		n.Clock().At(0, func() { cl.TCP().Call(0, dst, make([]byte, 1_000_000), func(tcpmodel.Result, error) {}) })
		n.Clock().At(start, func() {
			cl.TCP().Call(start, dst, make([]byte, 100), func(r tcpmodel.Result, err error) {
				if err != nil {
					t.Error(err)
				}
				short = r.Done - start
			})
		})
		n.Clock().Run(int64(time.Second))
		frame := int64(1538 * 8 * time.Second / bulkRate)
		switch {
		case short == 0:
			t.Errorf("priorities %v: the short message did not arrive", prio)
		case prio && short > 3*frame:
			t.Errorf("with priorities the short message took %v, want under three full frames' time (%v)", time.Duration(short), time.Duration(3*frame))
		case !prio && short < 8*frame:
			t.Errorf("in one FIFO the short message took %v, want it behind the long message's first window (over %v)", time.Duration(short), time.Duration(8*frame))
		}
	}
}
