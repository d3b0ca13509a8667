package tcpmodel

import (
	"net/netip"
	"testing"
	"time"
)

// TestBICCount: the segments BIC needs acknowledged per segment of growth,
// against the binary-increase equations with Linux's defaults (B 4,
// max_increment 16, low_window 14, smooth_part 20).
func TestBICCount(t *testing.T) {
	for _, tc := range []struct {
		name              string
		cwnd, max, lossCw int
		want              int
	}{
		{"low window: Reno", 14, 100, 50, 14},
		{"far below Wmax: +16 per RTT", 100, 200, 200, 100 / 16},
		{"binary search: +dist per RTT", 100, 120, 120, 100 / 5},
		{"at Wmax: +B/smooth_part per RTT", 100, 102, 102, 100 * 20 / 4},
		{"just past Wmax: slow", 100, 98, 98, 100 * 20 / 4},
		{"max probing: +(cwnd-Wmax)/(B-1) per RTT", 100, 90, 90, 100 * 3 / 10},
		{"far past Wmax: +16 per RTT", 200, 100, 100, 200 / 16},
		{"before any loss: at least 5% per RTT", 100, 102, 0, 20},
		{"never below one", 15, 200, 200, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bicCount(tc.cwnd, bicState{lastMax: tc.max, lossCwnd: tc.lossCw}); got != tc.want {
				t.Errorf("bicCount(%d, Wmax %d) = %d, want %d", tc.cwnd, tc.max, got, tc.want)
			}
		})
	}
}

// TestBICLoss: the window after a loss is 819/1024 of it (half at or
// below the low window), and Wmax is the window, or with fast convergence
// (the window below the last Wmax) (1+beta)/2 of it.
func TestBICLoss(t *testing.T) {
	for _, tc := range []struct {
		name              string
		cwnd, max         int
		wantThresh, wantM int
	}{
		{"first loss", 100, 0, 79, 100},
		{"past Wmax", 200, 150, 159, 200},
		{"fast convergence", 100, 150, 79, 89},
		{"low window halves", 10, 0, 5, 10},
		{"floor of two", 2, 0, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := bicState{lastMax: tc.max}
			if got := bicLoss(tc.cwnd, &s); got != tc.wantThresh || s.lastMax != tc.wantM || s.lossCwnd != tc.cwnd {
				t.Errorf("bicLoss(%d, Wmax %d) = %d, Wmax %d, loss %d; want %d, %d, %d", tc.cwnd, tc.max, got, s.lastMax, s.lossCwnd, tc.wantThresh, tc.wantM, tc.cwnd)
			}
		})
	}
}

// TestBICGrowthPerRTT: a window acknowledged in full (one RTT) grows as
// the binary-increase law says, through the connection's own growth path:
// max_increment (16) far below Wmax, about the distance over B near it,
// nothing on the plateau, max_increment again far beyond.
func TestBICGrowthPerRTT(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cwnd, max int
		lo, hi    int // the growth in one RTT
	}{
		{"additive far below Wmax", 160, 400, 16, 16},
		{"binary search: (Wmax-cwnd)/B", 160, 200, 8, 10},
		{"plateau at Wmax", 200, 200, 0, 0},
		{"far beyond Wmax", 320, 100, 15, 16},
		{"low window: Reno", 10, 100, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Host{cfg: Config{MSS: 1000, Law: BIC}}
			c := &conn{h: h, cwnd: tc.cwnd, ssthresh: 2, bic: bicState{lastMax: tc.max, lossCwnd: tc.max}}
			for range tc.cwnd / 2 { // delayed ACKs: two segments each
				c.grow(2, uint64(c.cwnd)*1000)
			}
			if g := c.cwnd - tc.cwnd; g < tc.lo || g > tc.hi {
				t.Errorf("grew %d in one RTT, want %d to %d", g, tc.lo, tc.hi)
			}
		})
	}
}

// TestNVDecision: at a round's end NV compares the window with the window
// by slope (the round's best rate times the smallest RTT) plus the pad of
// 10: beyond it, with enough samples, it cuts 30% of the excess and stops
// growing; within it less 2, it lets the window grow; between, nothing.
func TestNVDecision(t *testing.T) {
	const mss = 1000
	for _, tc := range []struct {
		name        string
		cwnd, calls int
		queued      int // segments beyond the path's 20 in flight
		wantCwnd    int
		wantBlocked bool
	}{
		{"queue of 40: cut 30% of the excess", 70, 60, 40, 70 - (70-30)*38/128, true},
		{"queue of 40, too few samples", 70, 30, 40, 70, false},
		{"excess of 2: down to the pad", 32, 60, 12, 30, true},
		{"no queue: grow", 25, 20, 5, 25, false},
		{"within the pad buffer: hold", 29, 60, 9, 29, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 20 segments fill the path at the smallest RTT of 100 µs;
			// queued ones add a segment time (5 µs) each.
			const base, perSeg = 100_000, 5_000
			rtt := int64(base + tc.queued*perSeg)
			s := nvState{rounds: nvRTTMinCnt, calls: tc.calls - 1, lastRTT: rtt, minRTT: base, roundEnd: 1}
			flight := uint64(20+tc.queued) * mss
			cwnd, ss := nvSample(&s, rtt, flight, 2, 100, mss, tc.cwnd, 1000)
			if cwnd != tc.wantCwnd || s.blocked != tc.wantBlocked {
				t.Errorf("cwnd %d blocked %v, want %d %v", cwnd, s.blocked, tc.wantCwnd, tc.wantBlocked)
			}
			if tc.wantBlocked && ss != 30 {
				t.Errorf("ssthresh %d, want the window by slope plus the pad, 30", ss)
			}
		})
	}
}

// TestNVLoss: a loss takes NV's window to 80%, stops its growth, and a
// timeout halves its growth rate.
func TestNVLoss(t *testing.T) {
	s := nvState{}
	if got := nvLoss(100, &s, false); got != 79 || !s.blocked || s.growth != 0 {
		t.Errorf("loss: %d blocked %v growth %d, want 79 true 0", got, s.blocked, s.growth)
	}
	if got := nvLoss(100, &s, true); got != 79 || s.growth != -1 || nvCount(50, &s) != 100 {
		t.Errorf("timeout: %d growth %d count %d, want 79 -1 100", got, s.growth, nvCount(50, &s))
	}
}

// TestQueueBICvsNV: one bulk transfer through a 1 Gbit/s bottleneck of
// 200 packets with a 100 µs base RTT (about 9 packets in flight fill it).
// BIC fills the queue and loses packets; NV keeps about its pad of 10
// queued and loses none. Both keep the link busy.
func TestQueueBICvsNV(t *testing.T) {
	for _, tc := range []struct {
		law        Law
		minQ, maxQ float64 // the mean queue over the second half
		lossy      bool
	}{
		{BIC, 100, 200, true},
		{NV, 1, 20, false},
	} {
		t.Run(tc.law.String(), func(t *testing.T) {
			p := newPair(t, Config{MSS: 1460, Law: tc.law, DelayedAck: true}, nil)
			b := &bottleneck{p: p, nsPerByte: 8, cap: 200, from: int64(40 * time.Millisecond)}
			p.link = b.send
			p.serveOneWay(t, 4001)
			var res Result
			done := false
			const size = 10_000_000
			p.client.Call(0, netip.AddrPortFrom(p.sAddr, 4001), make([]byte, size), func(r Result, err error) {
				if err != nil {
					t.Error(err)
				}
				res, done = r, true
			})
			p.run(int64(2 * time.Second))
			if !done {
				t.Fatal("the transfer did not end")
			}
			mean := b.sum / float64(max(b.n, 1))
			gbps := float64(size) * 8 / float64(res.Done)
			t.Logf("%s: mean queue %.1f pkts, max %d, drops %d, %.2f Gbit/s", tc.law, mean, b.maxQ, b.drops, gbps)
			if mean < tc.minQ || mean > tc.maxQ {
				t.Errorf("mean queue %.1f packets, want %.0f to %.0f", mean, tc.minQ, tc.maxQ)
			}
			if (b.drops > 0) != tc.lossy {
				t.Errorf("%d drops, want lossy %v", b.drops, tc.lossy)
			}
			if gbps < 0.8 {
				t.Errorf("%.2f Gbit/s through a 1 Gbit/s bottleneck, want at least 0.8", gbps)
			}
		})
	}
}

// bottleneck is a drop-tail FIFO of cap packets serving nsPerByte ns per
// wire byte, then the pair's wire delay; it samples its depth at each
// arrival from from on.
type bottleneck struct {
	p            *pair
	nsPerByte    int64
	cap, q, maxQ int
	busy, from   int64
	drops, n     int
	sum          float64
}

func (b *bottleneck) send(s Segment, deliver func(int64)) {
	now := b.p.now
	if now >= b.from {
		b.sum += float64(b.q)
		b.n++
	}
	if b.q >= b.cap {
		b.drops++
		return
	}
	b.q++
	b.maxQ = max(b.maxQ, b.q)
	b.busy = max(b.busy, now) + int64(s.Len+HeaderLen+20)*b.nsPerByte
	b.p.schedule(b.busy, func(at int64) {
		b.q--
		b.p.schedule(at+b.p.delay, deliver)
	})
}
