package dataplane

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func testConfig(mod func(*Config)) Config {
	c := Config{Ports: map[uint16]string{1: "a", 2: "b"}}
	if mod != nil {
		mod(&c)
	}
	c, err := c.withDefaults()
	if err != nil {
		panic(err)
	}
	return c
}

func pkt(n int) *packet { return &packet{buf: make([]byte, n), n: n} }

// drainAll dequeues everything from t with the clock stepped to each wake
// time, returning the departures in order and their start times.
func drainAll(t *tm, start int64, jitter func() int64) (deps []departure, starts []int64, end int64) {
	now := start
	out := make([]departure, 16)
	for {
		n, wake, _ := t.dequeue(now, out)
		for _, d := range out[:n] {
			deps = append(deps, d)
			starts = append(starts, now)
		}
		if n > 0 {
			continue
		}
		if wake == 0 {
			return deps, starts, t.shaper.freeAt
		}
		now = wake
		if jitter != nil {
			now += jitter()
		}
	}
}

func TestStrictPriorityOrder(t *testing.T) {
	tests := []struct {
		name   string
		queues []uint8 // enqueue order
	}{
		{"ascending", []uint8{0, 1, 2, 3, 4, 5, 6, 7}},
		{"descending", []uint8{7, 6, 5, 4, 3, 2, 1, 0}},
		{"interleaved", []uint8{0, 7, 0, 3, 7, 3, 1, 0, 5, 5}},
		{"one queue", []uint8{2, 2, 2, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(func(c *Config) { c.Unshaped = true })
			tmq := newTM(&cfg, 1, nil)
			for i, q := range tc.queues {
				p := pkt(100)
				p.inPort = uint16(i) // arrival order tag
				if !tmq.enqueue(p, q, int64(i)) {
					t.Fatalf("enqueue %d dropped", i)
				}
			}
			deps, _, _ := drainAll(tmq, 100, nil)
			if len(deps) != len(tc.queues) {
				t.Fatalf("dequeued %d, want %d", len(deps), len(tc.queues))
			}
			// Expected: by queue descending, FIFO (arrival order) within a queue.
			want := make([]int, len(tc.queues))
			for i := range want {
				want[i] = i
			}
			slices.SortStableFunc(want, func(a, b int) int { return int(tc.queues[b]) - int(tc.queues[a]) })
			for i, d := range deps {
				if int(d.pkt.inPort) != want[i] {
					t.Fatalf("departure %d is arrival %d (queue %d), want arrival %d", i, d.pkt.inPort, d.pkt.queue, want[i])
				}
			}
		})
	}
}

// A packet arriving on a higher queue while a lower one is backlogged
// leaves next, once the frame on the wire has finished.
func TestPriorityPreemptsBacklog(t *testing.T) {
	cfg := testConfig(func(c *Config) { c.LinkRateBps = 100e6 }) // 123 µs per frame
	tmq := newTM(&cfg, 1, nil)
	for range 10 {
		tmq.enqueue(pkt(1500), 0, 0)
	}
	out := make([]departure, 1)
	if n, _, _ := tmq.dequeue(0, out); n != 1 || out[0].pkt.queue != 0 {
		t.Fatalf("first departure: n=%d", n)
	}
	hi := pkt(100)
	tmq.enqueue(hi, 7, 1000)
	_, wake, link := tmq.dequeue(1000, out)
	if !link {
		t.Error("wait for the frame on the wire not reported as a link wait")
	}
	if n, _, _ := tmq.dequeue(wake, out); n != 1 || out[0].pkt != hi {
		t.Fatalf("after the frame on the wire, got queue %d, want the queue-7 packet", out[0].pkt.queue)
	}
	if want := uint32(tmq.shaper.freeAt-int64(serializationNs(100, 100e6))-1000) / 1000; out[0].delayUs != want {
		t.Errorf("queue-7 delay %d µs, want %d (rest of one 1500 B frame)", out[0].delayUs, want)
	}
}

func TestShaperLineRate(t *testing.T) {
	const packets = 10_000
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name   string
		rate   uint64
		size   func() int
		jitter func() int64 // lateness of each wake-up
	}{
		{"1G 1500B", 1e9, func() int { return 1500 }, nil},
		{"1G 64B", 1e9, func() int { return 64 }, nil},
		{"10G mixed", 10e9, func() int { return 64 + rng.IntN(1437) }, nil},
		{"1G mixed late wake-ups", 1e9, func() int { return 64 + rng.IntN(1437) },
			func() int64 { return rng.Int64N(200_000) }}, // up to 200 µs late
		{"100M 1500B late wake-ups", 100e6, func() int { return 1500 },
			func() int64 { return rng.Int64N(500_000) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(func(c *Config) {
				c.LinkRateBps = tc.rate
				c.QueueDepthPkts = packets
			})
			tmq := newTM(&cfg, 1, nil)
			var wireBits float64
			for range packets {
				n := tc.size()
				wireBits += float64(n+wireOverhead) * 8
				if !tmq.enqueue(pkt(n), 0, 0) {
					t.Fatal("enqueue dropped")
				}
			}
			deps, _, end := drainAll(tmq, 0, tc.jitter)
			if len(deps) != packets {
				t.Fatalf("dequeued %d of %d", len(deps), packets)
			}
			got := wireBits / (float64(end) / 1e9)
			if ratio := got / float64(tc.rate); math.Abs(ratio-1) > 0.01 {
				t.Errorf("achieved %.4g bit/s, %.4f of the %d bit/s line rate", got, ratio, tc.rate)
			}
		})
	}
}

// Departure start times follow the serialization times of the frames
// before them to the nanosecond, with no rounding drift, when the scheduler
// is never late.
func TestShaperDepartureSchedule(t *testing.T) {
	const rate = 10e9 // 1230.4 ns per 1514 B frame: not a whole number of ns
	s := shaper{rate: rate, lag: 1e6}
	var exact float64
	now := int64(0)
	for i := range 10_000 {
		n := 64 + (i*37)%1451
		start := s.book(now, 0, n)
		if math.Abs(float64(start)-exact) > 1 {
			t.Fatalf("frame %d starts at %d ns, want %.1f", i, start, exact)
		}
		exact += serializationNs(n, rate)
		now = s.freeAt
	}
	// An idle link starts a frame at its arrival, not at the old free time.
	if got := s.book(1e12, 1e12-50, 100); got != 1e12-50 {
		t.Errorf("idle link: start %d, want the arrival %d", got, int64(1e12-50))
	}
}

func TestQueueRatePPS(t *testing.T) {
	cfg := testConfig(func(c *Config) {
		c.Unshaped = true
		c.QueueRates = []QueueRate{{Port: 1, Queue: 3, PPS: 1000}}
	})
	tmq := newTM(&cfg, 1, nil)
	for range 20 {
		tmq.enqueue(pkt(100), 3, 0)
	}
	tmq.enqueue(pkt(100), 2, 0) // not rate limited: must not wait behind queue 3
	deps, starts, _ := drainAll(tmq, 0, nil)
	if len(deps) != 21 {
		t.Fatalf("dequeued %d", len(deps))
	}
	var q3 []int64
	for i, d := range deps {
		if d.pkt.queue == 2 && starts[i] != 0 {
			t.Errorf("queue 2 left at %d, want 0 (queue 3 is rate limited, not blocking)", starts[i])
		}
		if d.pkt.queue == 3 {
			q3 = append(q3, starts[i])
		}
	}
	for i := 1; i < len(q3); i++ {
		if gap := q3[i] - q3[i-1]; gap != 1e6 {
			t.Fatalf("queue 3 gap %d ns, want 1e6 (1000 pps)", gap)
		}
	}
}

func TestTailDropAccounting(t *testing.T) {
	tests := []struct {
		name     string
		mod      func(*Config)
		sizes    []int
		queue    uint8
		wantDrop int // packets dropped of sizes
	}{
		{"queue pkts", func(c *Config) { c.QueueDepthPkts = 4 }, []int{100, 100, 100, 100, 100, 100}, 0, 2},
		{"queue depth override", func(c *Config) {
			c.QueueDepths = []QueueDepth{{Port: 0, Queue: -1, Pkts: 10}, {Port: 1, Queue: 5, Pkts: 2}}
		}, []int{100, 100, 100}, 5, 1},
		{"queue bytes", func(c *Config) { c.QueueDepthBytes = 1000 }, []int{400, 400, 400, 100}, 1, 1},
		{"port pkts", func(c *Config) { c.PortBufferPkts = 3 }, []int{64, 64, 64, 64}, 7, 1},
		{"port bytes", func(c *Config) { c.PortBufferBytes = 3000 }, []int{1500, 1500, 64}, 2, 1},
		{"shared buffer threshold", func(c *Config) { c.SharedBufferBytes = 4000; c.SharedAlpha = 1 },
			// alpha 1: a queue may hold at most half the buffer.
			[]int{1000, 1000, 1000}, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(func(c *Config) { c.Unshaped = true; tc.mod(c) })
			var shared *sharedBuffer
			if cfg.SharedBufferBytes > 0 {
				shared = &sharedBuffer{size: int64(cfg.SharedBufferBytes), alpha: cfg.SharedAlpha}
			}
			tmq := newTM(&cfg, 1, shared)
			var dropped, droppedBytes, enqBytes int
			for _, n := range tc.sizes {
				if tmq.enqueue(pkt(n), tc.queue, 0) {
					enqBytes += n
				} else {
					dropped++
					droppedBytes += n
				}
			}
			if dropped != tc.wantDrop {
				t.Errorf("dropped %d, want %d", dropped, tc.wantDrop)
			}
			st := tmq.snapshot(0)[tc.queue]
			if st.DropPkts != uint64(dropped) || st.DropBytes != uint64(droppedBytes) {
				t.Errorf("drop counters %d pkts %d B, want %d, %d", st.DropPkts, st.DropBytes, dropped, droppedBytes)
			}
			if st.EnqPkts+st.DropPkts != uint64(len(tc.sizes)) || st.EnqBytes != uint64(enqBytes) {
				t.Errorf("enq %d pkts %d B, want %d, %d", st.EnqPkts, st.EnqBytes, len(tc.sizes)-dropped, enqBytes)
			}
			if st.DepthPkts != int(st.EnqPkts) || st.DepthBytes != enqBytes || st.PeakBytes != enqBytes {
				t.Errorf("depth %d pkts %d B peak %d B, want %d, %d", st.DepthPkts, st.DepthBytes, st.PeakBytes, st.EnqPkts, enqBytes)
			}
			drainAll(tmq, 0, nil)
			st = tmq.snapshot(0)[tc.queue]
			if st.SentPkts != st.EnqPkts || st.SentBytes != st.EnqBytes || st.DepthPkts != 0 || st.DepthBytes != 0 {
				t.Errorf("after drain: sent %d/%d B, depth %d/%d B", st.SentPkts, st.SentBytes, st.DepthPkts, st.DepthBytes)
			}
			if shared != nil && shared.used.Load() != 0 {
				t.Errorf("shared buffer still holds %d B", shared.used.Load())
			}
		})
	}
}

func TestEnqDeqDepthAndDelay(t *testing.T) {
	cfg := testConfig(func(c *Config) { c.LinkRateBps = 1e9 })
	tmq := newTM(&cfg, 1, nil)
	for i := range 5 {
		p := pkt(1500)
		tmq.enqueue(p, 4, 0)
		if p.enqDepth != uint32(i) {
			t.Fatalf("enq depth of packet %d is %d", i, p.enqDepth)
		}
	}
	deps, _, _ := drainAll(tmq, 0, nil)
	ser := int64(serializationNs(1500, 1e9))
	for i, d := range deps {
		if d.deqDepth != uint32(4-i) {
			t.Errorf("deq depth of packet %d is %d, want %d", i, d.deqDepth, 4-i)
		}
		if want := uint32(int64(i) * ser / 1000); d.delayUs != want {
			t.Errorf("delay of packet %d is %d µs, want %d", i, d.delayUs, want)
		}
	}
	st := tmq.snapshot(0)[4]
	if want := uint32(4 * ser / 1000); st.DelayMaxUs != want || st.PeakPkts != 5 {
		t.Errorf("max delay %d µs peak %d, want %d, 5", st.DelayMaxUs, st.PeakPkts, want)
	}
}

func TestHistogramPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		name string
		gen  func() uint32
	}{
		{"small exact", func() uint32 { return uint32(rng.IntN(60)) }},
		{"uniform wide", func() uint32 { return uint32(rng.IntN(100_000)) }},
		{"exponential", func() uint32 { return uint32(rng.ExpFloat64() * 300) }},
		{"mostly zero", func() uint32 { return uint32(max(0, rng.IntN(100)-90)) }},
		{"all zero", func() uint32 { return 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h histogram
			vals := make([]uint32, 20_000)
			for i := range vals {
				vals[i] = tc.gen()
				h.record(vals[i])
			}
			slices.Sort(vals)
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
				exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
				got := h.percentile(q)
				if got > exact || float64(exact-got) > float64(exact)/subBuckets+1 {
					t.Errorf("p%v = %d, exact %d", q*100, got, exact)
				}
				// The quantile's rank, q*20,000, is whole: the answer is the
				// low end of the exact value's bucket.
				if want := min(bucketLow(bucketOf(exact)), h.max); got != want {
					t.Errorf("p%v = %d, want %d (the bucket of %d)", q*100, got, want, exact)
				}
			}
			if h.max != vals[len(vals)-1] {
				t.Errorf("max %d, want %d", h.max, vals[len(vals)-1])
			}
		})
	}
	for v := uint32(0); v < 1<<20; v += 7 {
		if i := bucketOf(v); bucketLow(i) > v || (i+1 < histBuckets && bucketLow(i+1) <= v) {
			t.Fatalf("value %d in bucket %d [%d, %d)", v, i, bucketLow(i), bucketLow(i+1))
		}
	}
}

func TestFaultInjection(t *testing.T) {
	tests := []struct {
		name  string
		f     Fault
		n     int
		check func(t *testing.T, dropped []int, n int)
	}{
		{"every 10th", Fault{EveryN: 10}, 1000, func(t *testing.T, d []int, n int) {
			if len(d) != 100 {
				t.Fatalf("dropped %d, want 100", len(d))
			}
			for i, idx := range d {
				if idx != 10*(i+1)-1 {
					t.Fatalf("drop %d at frame %d, want %d", i, idx, 10*(i+1)-1)
				}
			}
		}},
		{"probability 0.2", Fault{DropProb: 0.2}, 20_000, func(t *testing.T, d []int, n int) {
			// Binomial(20000, 0.2): sd ~57; 5 sd either side.
			if mean := 0.2 * float64(n); math.Abs(float64(len(d))-mean) > 5*math.Sqrt(mean*0.8) {
				t.Fatalf("dropped %d of %d at p=0.2", len(d), n)
			}
		}},
		{"probability 1", Fault{DropProb: 1}, 100, func(t *testing.T, d []int, n int) {
			if len(d) != n {
				t.Fatalf("dropped %d of %d", len(d), n)
			}
		}},
		{"off", Fault{}, 1000, func(t *testing.T, d []int, _ int) {
			if len(d) != 0 {
				t.Fatalf("dropped %d with no fault", len(d))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fi := newFaultInjector(1, tc.f)
			var dropped []int
			for i := range tc.n {
				if fi.dropEgress(0) {
					dropped = append(dropped, i)
				}
			}
			tc.check(t, dropped, tc.n)
			if fi.drops.Load() != uint64(len(dropped)) {
				t.Errorf("counter %d, dropped %d", fi.drops.Load(), len(dropped))
			}
		})
	}
	if err := (Fault{DropProb: 1.5}).check(); err == nil {
		t.Error("probability 1.5 accepted")
	}
	if err := (Fault{DropProb: math.NaN()}).check(); err == nil {
		t.Error("NaN probability accepted")
	}
}

// A scheduler that wakes later than the shaper may catch up loses the
// difference as link time, counted in lost; one that wakes within the lag,
// or finds the link idle, loses nothing.
func TestShaperLostLinkTime(t *testing.T) {
	const rate, lag = 10e6, 1e6
	frame := int64(serializationNs(1000, rate)) // 819,200 ns
	tests := []struct {
		name          string
		arrival, wake int64 // of the second frame, after one booked at 0
		wantStart     int64
		wantLost      int64
	}{
		{"on time", 0, frame, frame, 0},
		{"late within the lag", 0, frame + lag, frame, 0},
		{"late beyond the lag", 0, 5e6, 5e6 - lag, 5e6 - lag - frame},
		{"idle link, late arrival seen late", 3e6, 3e6 + lag/2, 3e6, 0},
		{"idle link, arrival seen beyond the lag", 3e6, 6e6, 5e6, 2e6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := shaper{rate: rate, lag: lag}
			s.book(0, 0, 1000)
			if got := s.book(tc.wake, tc.arrival, 1000); got != tc.wantStart {
				t.Errorf("start %d ns, want %d", got, tc.wantStart)
			}
			if s.lost != tc.wantLost {
				t.Errorf("lost %d ns, want %d", s.lost, tc.wantLost)
			}
		})
	}
}

func TestLagFor(t *testing.T) {
	tests := []struct {
		rate uint64
		want int64
	}{
		{0, 1e6},   // unshaped: the configured lag
		{1e9, 1e6}, // four frames take 49 µs: the configured lag
		{10e6, int64(lagFrames * serializationNs(fullFrame, 10e6))}, // four frames: 4.9 ms
	}
	for _, tc := range tests {
		if got := lagFor(time.Millisecond, tc.rate, fullFrame); got != tc.want {
			t.Errorf("rate %d: lag %d ns, want %d", tc.rate, got, tc.want)
		}
	}
}
