package tcpmodel

import (
	"container/heap"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// pair is two hosts joined by a wire of fixed delay that loses the data
// segments drop picks: the model's own harness, on a clock of its own.
type pair struct {
	net          *Net
	client, srv  *Host
	q            events
	now, seq     int64
	delay        int64
	drop         func(s *Segment) bool
	tap          func(from netip.Addr, s *Segment) // sees every segment sent
	dataSegs     int
	cAddr, sAddr netip.Addr
	// link, when set, carries the client's data segments instead of the
	// fixed-delay wire (a bottleneck queue, laws_test.go).
	link func(s Segment, deliver func(now int64))
}

type event struct {
	at, seq int64
	fn      func(int64)
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	return e[i].at < e[j].at || (e[i].at == e[j].at && e[i].seq < e[j].seq)
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

func (p *pair) schedule(at int64, fn func(int64)) {
	p.seq++
	heap.Push(&p.q, event{at: max(at, p.now), seq: p.seq, fn: fn})
}

func (p *pair) run(until int64) {
	for p.q.Len() > 0 && p.q[0].at <= until {
		e := heap.Pop(&p.q).(event)
		p.now = e.at
		e.fn(e.at)
	}
}

func newPair(t *testing.T, cfg Config, drop func(*Segment) bool) *pair {
	t.Helper()
	p := &pair{net: NewNet(), delay: int64(50 * time.Microsecond), drop: drop,
		cAddr: netip.MustParseAddr("10.0.0.2"), sAddr: netip.MustParseAddr("10.0.0.1")}
	out := func(from netip.Addr) Output {
		return func(dst netip.Addr, s *Segment) {
			if p.tap != nil {
				p.tap(from, s)
			}
			if s.Len > 0 && from == p.cAddr {
				p.dataSegs++
				if p.drop != nil && p.drop(s) {
					return
				}
			}
			seg := *s
			deliver := func(now int64) { p.net.hosts[dst].Deliver(now, from, &seg) }
			if p.link != nil && s.Len > 0 && from == p.cAddr {
				p.link(seg, deliver)
				return
			}
			p.schedule(p.now+p.delay, deliver)
		}
	}
	var err error
	if p.client, err = p.net.NewHost(p.cAddr, cfg, out(p.cAddr), p.schedule); err != nil {
		t.Fatal(err)
	}
	if p.srv, err = p.net.NewHost(p.sAddr, cfg, out(p.sAddr), p.schedule); err != nil {
		t.Fatal(err)
	}
	if err := p.srv.Serve(4000, func(sr *ServerRPC) {
		if err := p.srv.Reply(p.now, sr, 100); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return p
}

// serveOneWay has the server take the requests on port as one-way
// messages: each call ends when its request arrives, and nothing goes back
// on the stream to carry the server's ACKs.
func (p *pair) serveOneWay(t *testing.T, port uint16) {
	t.Helper()
	if err := p.srv.Serve(port, func(sr *ServerRPC) {
		if err := p.srv.Delivered(p.now, sr); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// call makes one call of n bytes at now and runs until it ends or until.
func (p *pair) call(t *testing.T, n int, until time.Duration) (Result, bool) {
	t.Helper()
	var res Result
	done := false
	p.client.Call(p.now, netip.AddrPortFrom(p.sAddr, 4000), make([]byte, n), func(r Result, err error) {
		if err != nil {
			t.Errorf("call: %v", err)
		}
		res, done = r, true
	})
	p.run(p.now + until.Nanoseconds())
	return res, done
}

// TestLossRepair: losses in a window of a 100-segment message, after a
// call that gave an RTT sample. Losses with data behind them are found by
// SACK and RACK and repaired within a few round trips without a timeout,
// one hole or several, a lost retransmission included; a loss at the
// window's tail by the tail loss probe, two round trips and 2 ms after
// the last ACK; a lone last segment lost, which leaves one segment out, by
// the timeout (Linux's probe waits MinRTO then, so the timeout comes first),
// no sooner than its 200 ms floor.
func TestLossRepair(t *testing.T) {
	const rtt = 100 * time.Microsecond // the pair's two 50 us delays
	for _, tc := range []struct {
		name string
		// lose is how many times each data segment of the message (by its
		// index: segment i carries bytes [1000 i, 1000 i + 1000)) is lost.
		lose map[int]int
		// recoveries, timeouts, probes and retransmits are what the
		// client's counters must show: no spurious retransmission.
		recoveries, timeouts, probes, retransmits uint64
		minD, maxD                                time.Duration
	}{
		{"one hole", map[int]int{20: 1}, 1, 0, 0, 1, 0, 3 * time.Millisecond},
		{"three holes in a window", map[int]int{20: 1, 23: 1, 27: 1}, 1, 0, 0, 3, 0, 3 * time.Millisecond},
		{"a lost retransmission", map[int]int{20: 2}, 1, 0, 0, 2, 0, 3 * time.Millisecond},
		{"two holes, one lost twice", map[int]int{30: 2, 33: 1}, 1, 0, 0, 3, 0, 3 * time.Millisecond},
		{"the last two segments", map[int]int{98: 1, 99: 1}, 1, 0, 1, 2, 2 * time.Millisecond, 5 * time.Millisecond},
		{"the last segment alone", map[int]int{99: 1}, 0, 1, 0, 1, 200 * time.Millisecond, 205 * time.Millisecond},
	} {
		for _, law := range []Law{Reno, DCTCP} {
			t.Run(tc.name+"/"+law.String(), func(t *testing.T) {
				var base uint32
				armed := false
				lose := map[int]int{}
				p := newPair(t, Config{MSS: 1000, Law: law}, func(s *Segment) bool {
					i := int(s.Seq-base) / 1000
					if !armed || lose[i] == 0 {
						return false
					}
					lose[i]--
					return true
				})
				if _, ok := p.call(t, 10_000, time.Second); !ok { // an RTT sample first
					t.Fatal("first call did not complete")
				}
				base = uint32(10_000 + framing + 1)
				for i, n := range tc.lose {
					lose[i] = n
				}
				armed = true
				before := p.client.Stats()
				start := p.now
				r, ok := p.call(t, 100_000-framing, 5*time.Second)
				st := p.client.Stats()
				for i, n := range lose {
					if n != 0 {
						t.Fatalf("segment %d was not sent %d more times", i, n)
					}
				}
				rec, to, pr, re := st.FastRecovery-before.FastRecovery, st.Timeouts-before.Timeouts, st.Probes-before.Probes, st.Retransmits-before.Retransmits
				d := time.Duration(r.Done - start)
				t.Logf("done %v after %v (%.0f RTTs): recoveries %d, timeouts %d, probes %d, marked lost %d, retransmits %d",
					ok, d, float64(d)/float64(rtt), rec, to, pr, st.MarkedLost-before.MarkedLost, re)
				if !ok {
					t.Fatal("the call did not complete")
				}
				if rec != tc.recoveries || to != tc.timeouts || pr != tc.probes || re != tc.retransmits {
					t.Errorf("%d recoveries, %d timeouts, %d probes, %d retransmits; want %d, %d, %d, %d",
						rec, to, pr, re, tc.recoveries, tc.timeouts, tc.probes, tc.retransmits)
				}
				if d < tc.minD || d > tc.maxD {
					t.Errorf("the call took %v, want %v to %v", d, tc.minD, tc.maxD)
				}
			})
		}
	}
}

// TestLossRepairTime: one lost segment costs about one round trip beyond
// the same call without loss (RACK marks it once the segments behind it
// are SACKed, with no reordering window as three are), not a timeout.
func TestLossRepairTime(t *testing.T) {
	took := func(lose bool) time.Duration {
		var base uint32
		armed, lost := false, false
		p := newPair(t, Config{MSS: 1000}, func(s *Segment) bool {
			if armed && lose && !lost && int(s.Seq-base)/1000 == 40 {
				lost = true
				return true
			}
			return false
		})
		if _, ok := p.call(t, 10_000, time.Second); !ok {
			t.Fatal("first call did not complete")
		}
		base, armed = uint32(10_000+framing+1), true
		start := p.now
		r, ok := p.call(t, 100_000-framing, time.Second)
		if !ok || lose != lost {
			t.Fatalf("done %v, lost %v", ok, lost)
		}
		return time.Duration(r.Done - start)
	}
	clean, lossy := took(false), took(true)
	const rtt = 100 * time.Microsecond
	if extra := lossy - clean; extra < rtt/2 || extra > 3*rtt {
		t.Errorf("with one loss the call took %v, without %v: %v more, want about one round trip (%v)", lossy, clean, extra, rtt)
	}
}

// TestInitialRTO: a connection's first segment lost before any RTT sample
// is sent again after the initial RTO: the kernel's 1 s by default, or
// what InitRTO says (the PIAS simulations' 200 us, as their minimum).
func TestInitialRTO(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, ini time.Duration
		lo, hi   time.Duration
	}{
		{"kernel's", 0, 0, time.Second, time.Second + time.Millisecond},
		{"ns-2's", 200 * time.Microsecond, 200 * time.Microsecond, 200 * time.Microsecond, 500 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *pair
			p = newPair(t, Config{MSS: 1000, Law: DCTCP, MinRTO: tc.min, InitRTO: tc.ini}, func(*Segment) bool { return p.dataSegs == 1 })
			r, ok := p.call(t, 500, 3*time.Second)
			if st := p.client.Stats(); !ok || st.Timeouts != 1 {
				t.Fatalf("done %v, %+v; want done after one timeout", ok, st)
			}
			if d := time.Duration(r.Done); d < tc.lo || d > tc.hi {
				t.Errorf("first segment repaired after %v, want %v to %v", d, tc.lo, tc.hi)
			}
		})
	}
}

// TestPIASLevels: data segments leave at the level of the bytes their
// direction sent before them, pure ACKs at level 0, and the count
// restarts after an idle gap.
func TestPIASLevels(t *testing.T) {
	pi := &PIAS{Thresholds: []uint64{3000, 12000}, DSCP: []uint8{56, 48, 40}, IdleReset: time.Millisecond}
	var dscps []uint8
	var p *pair
	p = newPair(t, Config{MSS: 1000, PIAS: pi, Law: DCTCP}, func(s *Segment) bool {
		dscps = append(dscps, s.TOS>>2)
		if s.TOS&ecnMask != ect0 {
			t.Errorf("data segment TOS %#x not ECT(0)", s.TOS)
		}
		return false
	})
	if _, ok := p.call(t, 20_000-framing, time.Second); !ok {
		t.Fatal("call did not complete")
	}
	want := func(i int) uint8 { // segment i carries bytes [1000 i, 1000 i + 1000)
		switch {
		case i*1000 < 3000:
			return 56
		case i*1000 < 12000:
			return 48
		}
		return 40
	}
	for i, d := range dscps {
		if d != want(i) {
			t.Errorf("segment %d: DSCP %d, want %d", i, d, want(i))
		}
	}
	dscps = nil
	p.run(p.now + int64(2*time.Millisecond)) // idle beyond IdleReset
	if _, ok := p.call(t, 100, time.Second); !ok || len(dscps) != 1 || dscps[0] != 56 {
		t.Errorf("after idle: DSCPs %v, want one segment at 56", dscps)
	}
}

// TestPIASPerMessage: messages one after another on one connection, well
// within IdleReset (a minute: the harness's clock runs on to each
// message's last timer). Counting bytes per direction (the tc program's way),
// the later ones inherit the earlier ones' count and leave at the lowest
// level; with PerMessage (the ns-2 agents' flows) each message starts at
// level 0 and its segments take the level of their offset in it, a
// retransmission its original's.
func TestPIASPerMessage(t *testing.T) {
	for _, tc := range []struct {
		perMessage bool
		want       []uint8 // per message, each segment's DSCP in order sent
	}{
		{false, []uint8{40, 40, 40, 40, 40, 40}},
		{true, []uint8{56, 56, 56, 56, 48, 48, 48}}, // the 4th segment (offset 3000) lost and resent at 48
	} {
		t.Run(fmt.Sprint("per_message=", tc.perMessage), func(t *testing.T) {
			pi := &PIAS{Thresholds: []uint64{3000, 12000}, DSCP: []uint8{56, 48, 40}, IdleReset: time.Minute, PerMessage: tc.perMessage}
			var dscps []uint8
			lost := false
			var p *pair
			p = newPair(t, Config{MSS: 1000, PIAS: pi, Law: DCTCP}, func(s *Segment) bool {
				dscps = append(dscps, s.TOS>>2)
				// In the last message, lose the segment at offset 3000
				// once (its stream offset is 20,000 + 104 + 3,000).
				if tc.perMessage && !lost && s.Seq == 20_000+104+3000+1 {
					lost = true
					return true
				}
				return false
			})
			if _, ok := p.call(t, 20_000-framing, time.Second); !ok {
				t.Fatal("first call did not complete")
			}
			dscps = nil
			if _, ok := p.call(t, 100, time.Second); !ok {
				t.Fatal("second call did not complete")
			}
			if _, ok := p.call(t, 5000-framing, time.Second); !ok {
				t.Fatal("third call did not complete")
			}
			if !slices.Equal(dscps, tc.want) {
				t.Errorf("DSCPs of the second and third messages %v, want %v", dscps, tc.want)
			}
		})
	}
}

// TestPipelinedCalls: calls issued together share one connection (tcprpc's
// default) and end in the order they were sent, a short one behind a long
// one included, each once, at consecutive places in the streams; more
// of them than a queue holds before it compacts.
func TestPipelinedCalls(t *testing.T) {
	p := newPair(t, Config{MSS: 1460}, nil)
	const calls = 3 * compactAt
	var order []int
	var offsets []int64
	for i := range calls {
		size := 100
		if i == 0 {
			size = 1_000_000
		}
		p.client.Call(p.now, netip.AddrPortFrom(p.sAddr, 4000), make([]byte, size), func(r Result, err error) {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			order = append(order, i)
			offsets = append(offsets, r.ReqOffset, r.RespOffset)
		})
	}
	p.run(int64(10 * time.Second))
	if len(order) != calls {
		t.Fatalf("%d of %d calls ended", len(order), calls)
	}
	for i, k := range order {
		if k != i {
			t.Fatalf("call %d ended %dth", k, i)
		}
	}
	if st := p.client.Stats(); st.Conns != 1 {
		t.Errorf("%d connections, want 1", st.Conns)
	}
	// Call i's request starts after the 1 MB one and i-1 short ones, each
	// with its 4-byte length; responses are 100 bytes each.
	for i := 1; i < calls; i++ {
		wantReq, wantResp := int64(1_000_004+(i-1)*104), int64(i*104)
		if offsets[2*i] != wantReq || offsets[2*i+1] != wantResp {
			t.Fatalf("call %d at offsets %d, %d, want %d, %d", i, offsets[2*i], offsets[2*i+1], wantReq, wantResp)
		}
	}
}

// TestDelayedAck: with delayed ACKs the receiver of a bulk transfer ACKs
// every second full segment, and an ACK that nothing carries leaves after
// the 40 ms timeout: the client's for the response it got last.
func TestDelayedAck(t *testing.T) {
	p := newPair(t, Config{MSS: 1000, DelayedAck: true}, nil)
	var srvAcks int
	var lastClientAck int64
	p.tap = func(from netip.Addr, s *Segment) {
		switch {
		case from == p.sAddr && s.Len == 0:
			srvAcks++
		case from == p.cAddr && s.Len == 0:
			lastClientAck = p.now
		}
	}
	r, ok := p.call(t, 100_000-framing, time.Second) // 100 full segments
	if !ok {
		t.Fatal("call did not complete")
	}
	if srvAcks < 45 || srvAcks > 55 {
		t.Errorf("the server sent %d pure ACKs for 100 segments, want about 50", srvAcks)
	}
	if d := time.Duration(lastClientAck - r.Done); d != 40*time.Millisecond {
		t.Errorf("the client's ACK of the response left %v after it arrived, want 40ms", d)
	}
}

// TestOpenWhenBusy: with Config.OpenWhenBusy a short call issued while a
// 1 MB one is outstanding goes on a connection of its own and ends first,
// one round trip after it started, instead of behind the long one's bytes
// (TestPipelinedCalls); a call after both ended reuses the first
// connection, so the pool holds what was busy at once.
func TestOpenWhenBusy(t *testing.T) {
	p := newPair(t, Config{MSS: 1460, OpenWhenBusy: true}, nil)
	dst := netip.AddrPortFrom(p.sAddr, 4000)
	var order []int
	var shortDone int64
	for i, size := range []int{1_000_000, 100} {
		p.client.Call(p.now, dst, make([]byte, size), func(r Result, err error) {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			order = append(order, i)
			if i == 1 {
				shortDone = r.Done
			}
		})
	}
	p.run(int64(10 * time.Second))
	if len(order) != 2 || order[0] != 1 {
		t.Fatalf("calls ended in order %v, want the short one (1) first", order)
	}
	// Two one-way delays and the frames' nothing: the pair's wire has no
	// rate, so the short call takes its round trip and no more.
	if rtt := 2 * p.delay; shortDone > rtt+rtt/10 {
		t.Errorf("the short call ended at %v, want within 10%% of the round trip %v", time.Duration(shortDone), time.Duration(rtt))
	}
	if _, ok := p.call(t, 100, time.Second); !ok {
		t.Fatal("the third call did not end")
	}
	if st := p.client.Stats(); st.Conns != 2 {
		t.Errorf("%d connections, want 2 (the third call on an idle one)", st.Conns)
	}
}

// TestTimeoutResendsPastShortSegment: a short request that went alone and
// was lost (the next one waited for a window of one segment) is resent
// after the timeout with its own bounds, and both calls end after one
// timeout instead of the connection retrying forever.
func TestTimeoutResendsPastShortSegment(t *testing.T) {
	var p *pair
	p = newPair(t, Config{MSS: 1000, InitCwnd: 1, MinRTO: 200 * time.Microsecond, InitRTO: 200 * time.Microsecond},
		func(*Segment) bool { return p.dataSegs == 1 }) // the short request's only segment
	done := 0
	for _, n := range []int{500, 5000} { // the first leaves at once, [0, 504); the second waits
		p.client.Call(p.now, netip.AddrPortFrom(p.sAddr, 4000), make([]byte, n), func(_ Result, err error) {
			if err != nil {
				t.Error(err)
			}
			done++
		})
	}
	p.run(int64(time.Second))
	if st := p.client.Stats(); done != 2 || st.Timeouts != 1 {
		t.Errorf("%d of 2 calls ended, %d timeouts; want both after one", done, st.Timeouts)
	}
}

// TestProbeDSACK: a tail loss probe resends the last of two short
// one-way messages sent back to back (two segments out, together less than
// a full one, so the receiver delays its ACK, as Linux's does, and nothing
// goes back to carry it), after a message of two full segments gave the
// connection an RTT sample. The receiver, holding the segment already,
// ACKs at once with a D-SACK block, and the sender keeps its window; when
// the original was lost instead, the probe repaired a loss, and the window
// comes down once when an ACK passes the probe (after the next message).
func TestProbeDSACK(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lose        bool
		wantDSACK   uint64
		wantReduced bool
	}{
		{"original delayed", false, 1, false},
		{"original lost", true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *pair
			armed, seen := false, 0
			p = newPair(t, Config{MSS: 1000, DelayedAck: true}, func(s *Segment) bool {
				if armed && s.Len == 400 {
					if seen++; seen == 2 {
						return tc.lose
					}
				}
				return false
			})
			p.serveOneWay(t, 4001)
			dst := netip.AddrPortFrom(p.sAddr, 4001)
			var done bool
			send := func(n int) {
				done = false
				p.client.Call(p.now, dst, make([]byte, n-framing), func(_ Result, err error) { done = err == nil })
				p.run(p.now + int64(time.Second))
			}
			send(2000) // two full segments, ACKed at once: an RTT sample
			if st := p.client.Stats(); !done || st.Probes != 0 || st.Retransmits != 0 {
				t.Fatalf("first message: done %v, %+v", done, st)
			}
			armed = true
			p.client.Call(p.now, dst, make([]byte, 400-framing), func(Result, error) {})
			send(400)
			send(2000) // new data, ACKed beyond the probe: a repaired loss shows then
			var c *conn
			for k, x := range p.client.conns {
				if k.peer.Port() == 4001 {
					c = x
				}
			}
			st := p.client.Stats()
			t.Logf("done %v, %+v, cwnd %d ssthresh %d", done, st, c.cwnd, c.ssthresh)
			if !done || c.sndUna != c.sndMax || st.Probes != 1 || st.Timeouts != 0 {
				t.Fatalf("done %v, %d of %d bytes acknowledged, %d probes, %d timeouts; want done by one probe", done, c.sndUna, c.sndMax, st.Probes, st.Timeouts)
			}
			if st.DSACKs != tc.wantDSACK {
				t.Errorf("%d D-SACKs, want %d", st.DSACKs, tc.wantDSACK)
			}
			if reduced := c.ssthresh != 1<<30; reduced != tc.wantReduced {
				t.Errorf("window reduced: %v (cwnd %d, ssthresh %d), want %v", reduced, c.cwnd, c.ssthresh, tc.wantReduced)
			}
		})
	}
}

// TestDelayedAckBytes: with delayed ACKs the receiver ACKs at once when
// more than a full segment's bytes have arrived since its last ACK, short
// segments included (two one-way messages of 600 B with a 1,000 B MSS),
// and holds the ACK while they add up to no more (two of 400 B).
func TestDelayedAckBytes(t *testing.T) {
	for _, tc := range []struct {
		size    int
		wantNow bool
	}{{600, true}, {400, false}} {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			p := newPair(t, Config{MSS: 1000, DelayedAck: true}, nil)
			p.serveOneWay(t, 4001)
			dst := netip.AddrPortFrom(p.sAddr, 4001)
			for range 2 {
				p.client.Call(p.now, dst, make([]byte, tc.size-framing), func(Result, error) {})
			}
			p.run(p.now + int64(time.Millisecond)) // ten round trips, well before 40 ms
			var c *conn
			for _, x := range p.client.conns {
				c = x
			}
			if acked := c.sndUna == c.sndMax; acked != tc.wantNow {
				t.Errorf("%d of %d bytes acknowledged after 1 ms; want all: %v", c.sndUna, c.sndMax, tc.wantNow)
			}
		})
	}
}
