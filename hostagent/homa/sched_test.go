package homa

import (
	"math"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

const testPkt = 1000

// schedSim drives a grantSched without a network: each step the
// receiver's downlink delivers one packet, taken from the message whose
// sender holds the highest priority permission (unscheduled bytes go at
// the top level), as strict-priority switch queues would; senders of equal
// priority take turns, as they share a FIFO queue.
type schedSim struct {
	t             *testing.T
	s             *grantSched
	msgs          []*msgIn
	sent          map[*msgIn]uint32 // bytes the sender has transmitted
	prio          map[*msgIn]int
	unsched       uint32
	done          []uint32 // lengths in completion order
	grants        []grant  // every grant, in order
	turn          int
	overflow      bool
	fifoNotOldest bool
}

func newSchedSim(t *testing.T, p schedParams, maxSchedPrio int, unsched uint32) *schedSim {
	return &schedSim{t: t, s: &grantSched{p: p, maxSchedPrio: maxSchedPrio}, sent: map[*msgIn]uint32{},
		prio: map[*msgIn]int{}, unsched: unsched}
}

// add makes a message of length n from peer arrive at time birth.
func (sim *schedSim) add(n uint32, peer byte, birth time.Duration) *msgIn {
	m := &msgIn{length: n, granted: min(n, sim.unsched), birth: birth, peer: netip.AddrFrom4([4]byte{10, 0, 0, peer})}
	sim.msgs = append(sim.msgs, m)
	sim.prio[m] = 7
	sim.s.add(m)
	return m
}

// step delivers one packet and runs the scheduler; false when idle.
func (sim *schedSim) step() bool {
	var next *msgIn
	sim.turn++
	for i := range sim.msgs {
		m := sim.msgs[(sim.turn+i)%len(sim.msgs)]
		if sim.sent[m] < m.granted && (next == nil || sim.prio[m] > sim.prio[next]) {
			next = m
		}
	}
	if next == nil {
		return false
	}
	n := min(testPkt, next.granted-sim.sent[next])
	next.got.add(sim.sent[next], sim.sent[next]+n)
	sim.sent[next] += n
	next.received += n
	if sim.sent[next] >= sim.unsched {
		sim.prio[next] = int(next.prio)
	}
	if next.received == next.length {
		sim.s.remove(next)
		sim.done = append(sim.done, next.length)
	}
	before := sim.s.incoming()
	for _, g := range sim.s.schedule() {
		sim.grants = append(sim.grants, g)
		if !g.fifo {
			sim.prio[g.m] = int(g.prio)
			continue
		}
		// Messages a window and two FIFO grants behind are passed over.
		deaf := sim.s.window() + 2*sim.s.p.fifoBytes
		for _, m := range sim.s.order {
			if m.birth < g.m.birth && m.granted < m.length && m != g.m && m.incoming() < deaf {
				sim.fifoNotOldest = true
			}
		}
	}
	if after := sim.s.incoming(); after > max(before, sim.s.p.maxIncoming) {
		sim.overflow = true
	}
	return true
}

func (sim *schedSim) run() {
	for range 10_000_000 {
		if !sim.step() {
			return
		}
	}
	sim.t.Fatal("simulation did not finish")
}

func params(k int) schedParams {
	return schedParams{overcommit: k, maxIncoming: 40 * testPkt, packet: testPkt, fifoBytes: 10 * testPkt, highPrio: 6}
}

func TestSchedSRPTOrder(t *testing.T) {
	for _, k := range []int{1, 4} {
		sim := newSchedSim(t, params(k), 3, 5*testPkt)
		// Largest first, so arrival order is the opposite of SRPT order.
		sim.add(1_000_000, 3, 0)
		sim.add(100_000, 2, 1)
		sim.add(10_000, 1, 2)
		sim.run()
		if want := []uint32{10_000, 100_000, 1_000_000}; !slices.Equal(sim.done, want) {
			t.Errorf("K=%d: completion order %v, want %v", k, sim.done, want)
		}
		if sim.overflow {
			t.Errorf("K=%d: grants pushed incoming bytes above max_incoming", k)
		}
	}
}

// TestSchedOvercommit checks the active set: with K=1 every SRPT grant
// goes to the message with the fewest bytes remaining; with K=4 all three
// messages are granted in the first scheduling round.
func TestSchedOvercommit(t *testing.T) {
	for _, tt := range []struct {
		k          int
		wantActive int
	}{{1, 1}, {4, 3}} {
		sim := newSchedSim(t, params(tt.k), 3, 5*testPkt)
		ms := []*msgIn{sim.add(1_000_000, 3, 0), sim.add(100_000, 2, 1), sim.add(10_000, 1, 2)}
		sim.step()
		if got := sim.s.numActive(); got != tt.wantActive {
			t.Errorf("K=%d: %d active, want %d", tt.k, got, tt.wantActive)
		}
		granted := 0
		for _, m := range ms {
			if m.granted > min(m.length, 5*testPkt) {
				granted++
			}
		}
		if granted != tt.wantActive {
			t.Errorf("K=%d: %d messages granted beyond unscheduled bytes, want %d", tt.k, granted, tt.wantActive)
		}
		if tt.k == 1 {
			for sim.step() {
				g := sim.grants[len(sim.grants)-1]
				if g.fifo {
					continue
				}
				for _, m := range sim.s.order {
					if m.remaining() < g.m.remaining() {
						t.Fatalf("K=1 granted %d B message with %d left while one with %d left waits",
							g.m.length, g.m.remaining(), m.remaining())
					}
				}
			}
		}
	}
}

func TestSchedOnePerSender(t *testing.T) {
	sim := newSchedSim(t, params(2), 3, testPkt)
	a1 := sim.add(20_000, 1, 0)
	a2 := sim.add(30_000, 1, 1)
	b := sim.add(500_000, 2, 2)
	sim.s.schedule()
	if !slices.Equal(sim.s.active, []*msgIn{a1, b}) {
		t.Fatalf("active %v, want the best of each sender (a1, b)", lengths(sim.s.active))
	}
	sim.s.p.overcommit = 3 // a spare slot may go to a second message of one sender
	sim.s.schedule()
	if !slices.Equal(sim.s.active, []*msgIn{a1, a2, b}) {
		t.Fatalf("active %v, want a1 a2 b", lengths(sim.s.active))
	}
}

func lengths(ms []*msgIn) []uint32 {
	var l []uint32
	for _, m := range ms {
		l = append(l, m.length)
	}
	return l
}

// TestSchedPriorities: priorities follow rank on the lowest scheduled
// levels; with more active messages than levels the extras share 0.
func TestSchedPriorities(t *testing.T) {
	for _, tt := range []struct {
		n, maxSchedPrio int
		want            []uint8
	}{
		{1, 3, []uint8{0}},
		{3, 3, []uint8{2, 1, 0}},
		{4, 3, []uint8{3, 2, 1, 0}},
		{6, 3, []uint8{3, 2, 1, 0, 0, 0}},
		{2, 0, []uint8{0, 0}},
	} {
		p := params(8)
		p.maxIncoming = 1 << 30
		sim := newSchedSim(t, p, tt.maxSchedPrio, testPkt)
		for i := range tt.n {
			sim.add(uint32(10_000*(i+1)), byte(i+1), time.Duration(i))
		}
		got := make([]uint8, tt.n)
		for _, g := range sim.s.schedule() {
			got[slices.Index(sim.msgs, g.m)] = g.prio
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%d active, max sched prio %d: priorities %v, want %v", tt.n, tt.maxSchedPrio, got, tt.want)
		}
	}
}

// TestSchedFIFO: the share of bytes granted FIFO matches the configured
// permille, and FIFO grants always go to the oldest grantable message.
func TestSchedFIFO(t *testing.T) {
	for _, permille := range []int{50, 100, 200} {
		p := params(2)
		p.fifoPermille = permille
		sim := newSchedSim(t, p, 3, 5*testPkt)
		for i := range 6 {
			sim.add(uint32(200_000+50_000*i), byte(i+1), time.Duration(6-i)) // the largest is the oldest
		}
		var fifoBytes, all uint64
		prev := map[*msgIn]uint32{}
		for _, m := range sim.msgs {
			prev[m] = m.granted
		}
		for sim.step() {
		}
		for _, g := range sim.grants {
			inc := uint64(g.offset - prev[g.m])
			prev[g.m] = g.offset
			all += inc
			if g.fifo {
				fifoBytes += inc
			}
		}
		share := float64(fifoBytes) / float64(all)
		if want := float64(permille) / 1000; math.Abs(share-want) > 0.2*want {
			t.Errorf("permille %d: FIFO share %.3f, want %.3f ± 20%%", permille, share, want)
		}
		if sim.fifoNotOldest {
			t.Errorf("permille %d: a FIFO grant went to a message that was not the oldest", permille)
		}
	}
}

func TestSchedBasic(t *testing.T) {
	p := params(1)
	p.basic, p.basicWindow = true, 8*testPkt
	sim := newSchedSim(t, p, 0, testPkt)
	for i := range 10 {
		sim.add(100_000, byte(i+1), time.Duration(i))
	}
	gs := sim.s.schedule()
	if len(gs) != 10 {
		t.Fatalf("basic mode granted %d of 10 messages", len(gs))
	}
	for _, g := range gs {
		if g.prio != 0 || g.offset != 8*testPkt {
			t.Fatalf("basic grant %+v, want offset %d at priority 0", g, 8*testPkt)
		}
	}
}

// TestComputeCutoffs: cutoffs from a known size mix split the
// unscheduled bytes evenly over the unscheduled levels.
func TestComputeCutoffs(t *testing.T) {
	var uniform []uint32
	for i := 1; i <= 1000; i++ {
		uniform = append(uniform, uint32(10*i)) // 10 B .. 10 KB, all below unsched
	}
	withLarge := append(slices.Clone(uniform), slices.Repeat([]uint32{200_000}, 100)...)
	for _, tt := range []struct {
		name       string
		sizes      []uint32
		prios      int
		levels     int // given; 0: from the unscheduled share
		wantLevels int
	}{
		// All bytes unscheduled: every level but one (kept for scheduled bytes).
		{"uniform, 4 levels", uniform, 4, 0, 3},
		{"uniform, 8 levels", uniform, 8, 0, 7},
		// Unscheduled 5.005 MB + 100 x 10 KB of 25.005 MB: round(8 x 0.24) = 2.
		{"with large, 8 levels", withLarge, 8, 0, 2},
		// The Homa paper's runs chose the split per workload.
		{"with large, 4 unscheduled levels given", withLarge, 8, 4, 4},
		{"more levels given than there are", uniform, 4, 9, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const maxMsg = 1_000_000
			full, err := homaconf.Config{UnschedBytes: 10_000, MaxMessageBytes: maxMsg, Priorities: tt.prios}.WithDefaults()
			if err != nil {
				t.Fatal(err)
			}
			unsched := full.UnschedBytes
			cut := ruleOf(full, tt.levels).compute(slices.Clone(tt.sizes), nil)
			lowest := maxSchedPriority(&cut, tt.prios, maxMsg) + 1
			levels := tt.prios - lowest
			var un float64
			for _, s := range tt.sizes {
				un += float64(min(s, unsched))
			}
			if levels != tt.wantLevels {
				t.Fatalf("%d unscheduled levels (cutoffs %v), want %d", levels, cut, tt.wantLevels)
			}
			perLevel := make([]float64, tt.prios)
			for _, s := range tt.sizes {
				perLevel[unschedPriority(&cut, tt.prios, s)] += float64(min(s, unsched))
			}
			for lvl := lowest; lvl < tt.prios; lvl++ {
				share := perLevel[lvl] / un
				if want := 1 / float64(levels); math.Abs(share-want) > 0.05 {
					t.Errorf("level %d carries %.3f of unscheduled bytes, want %.3f (cutoffs %v)", lvl, share, want, cut)
				}
			}
			// The same cutoffs as a configured table (a simulated run's,
			// fixed from the workload): valid, and the same levels.
			tab := CutoffsFor(slices.Clone(tt.sizes), full, tt.levels)
			if _, err := (homaconf.Config{UnschedCutoffs: tab, Priorities: tt.prios, SharedCutoffs: true}).WithDefaults(); err != nil {
				t.Fatalf("CutoffsFor %v: %v", tab, err)
			}
			var conf [wire.MaxPriorities]uint32
			copy(conf[:], tab)
			linuxCutoffs(&conf, tt.prios)
			if got := maxSchedPriority(&conf, tt.prios, maxMsg); got != lowest-1 {
				t.Errorf("CutoffsFor %v: highest scheduled level %d, want %d", tab, got, lowest-1)
			}
			for _, s := range tt.sizes {
				if a, b := unschedPriority(&conf, tt.prios, s), unschedPriority(&cut, tt.prios, s); a != b {
					t.Fatalf("CutoffsFor %v puts %d B at level %d, compute %v at %d", tab, s, a, cut, b)
				}
			}
		})
	}
}

// TestSchedGrantIncrement: with an increment of four packets every SRPT
// grant but a message's last advances its offset by at least four packets,
// so a message needs about a quarter of the grants, and still completes.
func TestSchedGrantIncrement(t *testing.T) {
	count := func(inc uint32) (int, []uint32) {
		p := params(1)
		p.increment = inc
		sim := newSchedSim(t, p, 3, 5*testPkt)
		m := sim.add(200_000, 1, 0)
		sim.run()
		last := min(m.length, 5*testPkt)
		for _, g := range sim.grants {
			if step := g.offset - last; !g.fifo && g.offset < m.length && step < max(inc, testPkt) {
				t.Errorf("increment %d: grant advanced %d bytes", inc, step)
			}
			last = g.offset
		}
		return len(sim.grants), sim.done
	}
	one, done1 := count(0)
	four, done4 := count(4 * testPkt)
	if len(done1) != 1 || len(done4) != 1 {
		t.Fatalf("messages completed: %v and %v, want one each", done1, done4)
	}
	if four*3 > one {
		t.Errorf("%d grants with an increment of 4 packets, %d with 1: want at most a third", four, one)
	}
}

// TestSchedUnscheduledNotCounted: messages that need no grants (all
// unscheduled) are not counted against max_incoming, as Linux counts only
// grantable messages, so many short messages in flight do not hold back
// the grants of a long one.
func TestSchedUnscheduledNotCounted(t *testing.T) {
	s := &grantSched{p: params(4), maxSchedPrio: 3}
	for i := range 8 {
		s.add(&msgIn{length: 5 * testPkt, granted: 5 * testPkt, unschedOnly: true, birth: time.Duration(i),
			peer: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)})})
	}
	long := &msgIn{length: 1_000_000, granted: 5 * testPkt, birth: 10, peer: netip.AddrFrom4([4]byte{10, 0, 1, 1})}
	s.add(long)
	s.schedule()
	// 45 KB of short messages are in flight; the long one still gets its
	// window of max_incoming/2.
	if want := uint32(20 * testPkt); long.granted < want {
		t.Errorf("long message granted %d bytes, want at least %d", long.granted, want)
	}
}

// TestSchedBoostTail: with boostTail, a grant made while fewer bytes than
// boostTail remain to be granted carries the receiver's unscheduled level
// for a message that long when that is above its rank's scheduled level
// (HomaSimulation's boostTailBytesPrio); without it, or with more left,
// the rank's level.
func TestSchedBoostTail(t *testing.T) {
	cut := cutoffTable{version: 1, cut: [wire.MaxPriorities]uint32{anyLength, anyLength, anyLength, anyLength, 100_000, 20_000, 5_000, 1_000}}
	for _, tc := range []struct {
		name            string
		boost           uint32
		length, granted uint32
		want            uint8
	}{
		{"off", 0, 14_000, 10_000, 0},
		{"last bytes boosted", 10_000, 14_000, 10_000, 6},
		{"more left than the boost", 10_000, 100_000, 10_000, 0},
		{"a longer boost", 200_000, 100_000, 10_000, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := params(4)
			p.boostTail = tc.boost
			s := &grantSched{p: p, maxSchedPrio: 3, cut: &cut, prios: 8}
			m := &msgIn{length: tc.length, granted: tc.granted, received: tc.granted}
			s.add(m)
			out := s.schedule()
			if len(out) != 1 || out[0].m != m {
				t.Fatalf("grants %+v, want one to the message", out)
			}
			if out[0].prio != tc.want {
				t.Errorf("priority %d, want %d", out[0].prio, tc.want)
			}
		})
	}
}

// TestGraduatedWeights: under the graduated rule each packet of a
// message's first unsched bytes, and of its last boost bytes, weighs at
// the bytes its message has left before it; the scheduled middle weighs
// nothing.
func TestGraduatedWeights(t *testing.T) {
	const p = 1000
	for _, tc := range []struct {
		name           string
		unsched, boost uint32
		size           uint32
		want           []weighed
	}{
		{"all unscheduled", 5 * p, 0, 2*p + 300, []weighed{weigh(2*p+300, p), weigh(p+300, p), weigh(300, 300)}},
		{"scheduled middle skipped", 2 * p, 0, 10 * p, []weighed{weigh(10*p, p), weigh(9*p, p)}},
		// Boosted as the grant scheduler boosts: fewer than boost bytes left.
		{"boosted tail counted", 2 * p, 2 * p, 10 * p, []weighed{weigh(10*p, p), weigh(9*p, p), weigh(p, p)}},
		{"boosted tail of a ragged message", 2 * p, 2 * p, 10*p + 500, []weighed{weigh(10*p+500, p), weigh(9*p+500, p), weigh(p+500, p), weigh(500, 500)}},
		{"linux rule", 2 * p, 0, 10 * p, []weighed{weigh(10*p, 2*p)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cutoffRule{unsched: tc.unsched, boost: tc.boost, pkt: p, graduated: tc.name != "linux rule"}
			if got := r.weights([]uint32{tc.size}, nil); !slices.Equal(got, tc.want) {
				t.Errorf("weights %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGraduatedCutoffs: graduated cutoffs split the bytes the unscheduled
// levels carry, by the bytes left, evenly over the levels, and sit below
// the lengths Linux's rule gives (a message's last packets count at what
// is left of it).
func TestGraduatedCutoffs(t *testing.T) {
	var sizes []uint32
	for i := 1; i <= 2000; i++ {
		sizes = append(sizes, uint32(25*i)) // 25 B .. 50 KB
	}
	const prios, levels = 8, 4
	linux := cutoffRule{unsched: 10_000, maxMsg: 1_000_000, prios: prios, levels: levels, pkt: 1000}
	grad := linux
	grad.graduated, grad.boost = true, 10_000
	lc := linux.compute(slices.Clone(sizes), nil)
	gc := grad.compute(slices.Clone(sizes), nil)
	ws := grad.weights(sizes, nil)
	var sum float64
	perLevel := make([]float64, prios)
	for _, w := range ws {
		sum += w.bytes()
		perLevel[unschedPriority(&gc, prios, w.key())] += w.bytes()
	}
	for lvl := prios - levels; lvl < prios; lvl++ {
		if share := perLevel[lvl] / sum; math.Abs(share-1.0/levels) > 0.02 {
			t.Errorf("level %d carries %.3f of the graduated bytes, want %.3f (cutoffs %v)", lvl, share, 1.0/levels, gc)
		}
		if lvl > prios-levels && gc[lvl] >= lc[lvl] {
			t.Errorf("level %d: graduated cutoff %d, not below Linux's %d", lvl, gc[lvl], lc[lvl])
		}
	}
}
