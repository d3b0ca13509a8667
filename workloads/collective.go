package workloads

import "slices"

// Collective kinds: the communication patterns a collective phase runs,
// each iteration after every member's compute.
const (
	// KindRingAllReduce is 2(N-1) steps around the ring: each host sends
	// bytes/N to the next, a step once the previous step's data arrived.
	KindRingAllReduce = "ring-allreduce"
	// KindAllGather and KindReduceScatter are N-1 such steps.
	KindAllGather     = "allgather"
	KindReduceScatter = "reduce-scatter"
	// KindAllToAll sends bytes/N from every host to every other at once.
	KindAllToAll = "alltoall"
	// KindIncastBarrier sends bytes/N from every host to the first, which
	// releases them all with a short message once every one has arrived.
	KindIncastBarrier = "incast-barrier"
)

// CollectiveKinds lists every collective kind.
var CollectiveKinds = []string{KindRingAllReduce, KindAllGather, KindReduceScatter, KindAllToAll, KindIncastBarrier}

// MinCollectiveMessage is the shortest step message: the agents' header
// that names the step travels in it. Incast-barrier's release is this long.
const MinCollectiveMessage = 32

// CollectiveSend is one sending step of a host in every iteration: a
// message of Bytes to each of Dests (ranks), sent once Deps inputs of step
// Dep of the same iteration have arrived at the host (Dep < 0: at once
// after the compute).
type CollectiveSend struct {
	Step      int
	Dests     []int
	Bytes     int
	Dep, Deps int
}

// CollectivePlan is what one member does in each iteration: its sends in
// order (Send(i) for i below NumSends), and the inputs (count by step)
// that must have arrived for its part to be done (with every send
// answered). A ring's sends are not stored: step k goes to the next rank
// once step k-1's input arrived, so a plan of 2(n-1) steps takes constant
// memory, which an 8,192-rank ring (16,382 steps on each of 8,192 ranks)
// needs.
type CollectivePlan struct {
	sends  []CollectiveSend
	Expect map[int]int
	// ringSteps, when positive, makes the plan a ring of that many steps
	// of ringBytes to the next rank.
	ringSteps, ringBytes int
	ringDests            []int // the next rank alone, shared by every step
}

// NumSends is how many sending steps the plan has.
func (p *CollectivePlan) NumSends() int {
	if p.ringSteps > 0 {
		return p.ringSteps
	}
	return len(p.sends)
}

// Send is the plan's i-th sending step.
func (p *CollectivePlan) Send(i int) CollectiveSend {
	if p.ringSteps > 0 {
		s := CollectiveSend{Step: i, Dests: p.ringDests, Bytes: p.ringBytes, Dep: i - 1, Deps: 1}
		if i == 0 {
			s.Deps = 0
		}
		return s
	}
	return p.sends[i]
}

// Messages is how many messages the member sends in each iteration.
func (p *CollectivePlan) Messages() int {
	if p.ringSteps > 0 {
		return p.ringSteps
	}
	n := 0
	for _, s := range p.sends {
		n += len(s.Dests)
	}
	return n
}

// PlanCollective is rank r's part in a collective of kind among n members
// moving bytes (each message carries bytes/n); the zero plan for an
// unknown kind. A step k > 0 always depends on the step k-1 messages sent
// to the host, which is what rundir.CheckCollectiveOrder checks.
func PlanCollective(kind string, n, r, bytes int) CollectivePlan {
	chunk := max(bytes/max(n, 1), MinCollectiveMessage)
	ring := func(steps int) CollectivePlan {
		return CollectivePlan{Expect: map[int]int{steps - 1: 1}, ringSteps: steps, ringDests: []int{(r + 1) % n}, ringBytes: chunk}
	}
	// others lists the other members from the next one on, as an
	// all-to-all's pairwise exchange posts them: every member in the
	// same order would send to the same receiver at once.
	others := func() []int {
		out := make([]int, 0, n-1)
		for i := 1; i < n; i++ {
			out = append(out, (r+i)%n)
		}
		return out
	}
	switch kind {
	case KindRingAllReduce:
		return ring(2 * (n - 1))
	case KindAllGather, KindReduceScatter:
		return ring(n - 1)
	case KindAllToAll:
		return CollectivePlan{sends: []CollectiveSend{{Step: 0, Dests: others(), Bytes: chunk, Dep: -1}}, Expect: map[int]int{0: n - 1}}
	case KindIncastBarrier:
		if r == 0 {
			return CollectivePlan{sends: []CollectiveSend{{Step: 1, Dests: others(), Bytes: MinCollectiveMessage, Dep: 0, Deps: n - 1}}, Expect: map[int]int{0: n - 1}}
		}
		return CollectivePlan{sends: []CollectiveSend{{Step: 0, Dests: []int{0}, Bytes: chunk, Dep: -1}}, Expect: map[int]int{1: 1}}
	}
	return CollectivePlan{}
}

// CollectiveShape is how many step messages one iteration of kind among
// n members moving bytes sends in all, and its critical path: for each
// step on it, the bytes the busiest link carries in that step (a ring's
// one message per link; an all-to-all's n-1 messages on each host's
// uplink; incast-barrier's n-1 messages into the first host, then its
// n-1 releases).
func CollectiveShape(kind string, n, bytes int) (messages int, critical []int) {
	if n > 1 && (kind == KindRingAllReduce || kind == KindAllGather || kind == KindReduceScatter) {
		p := PlanCollective(kind, n, 0, bytes)
		messages = n * p.Messages() // every rank sends the same steps
	} else {
		for r := range n {
			p := PlanCollective(kind, n, r, bytes)
			messages += p.Messages()
		}
	}
	chunk := max(bytes/max(n, 1), MinCollectiveMessage)
	ring := func(steps int) []int {
		out := make([]int, steps)
		for i := range out {
			out[i] = chunk
		}
		return out
	}
	switch kind {
	case KindRingAllReduce:
		critical = ring(2 * (n - 1))
	case KindAllGather, KindReduceScatter:
		critical = ring(n - 1)
	case KindAllToAll:
		critical = []int{(n - 1) * chunk}
	case KindIncastBarrier:
		critical = []int{(n - 1) * chunk, (n - 1) * MinCollectiveMessage}
	}
	return messages, critical
}

// CollectiveRun is one member's progress through a collective's
// iterations, on any clock: the agents run it in real time, the simulator
// in virtual time. Inputs may arrive for an iteration the member has not
// begun; they wait for it. It is not safe for concurrent use.
type CollectiveRun struct {
	plan CollectivePlan
	in   map[[2]int]*collArrivals // by (iteration, step)
	iter int                      // the iteration being run, -1 before the first
	// computeEnd and computeNs are the current iteration's compute.
	computeEnd, computeNs int64
	launched              []bool // by index in the plan's sends
	nLaunched             int    // how many are true
	pending               int    // sends launched and not yet answered
	failed                bool
	// byDep lists, for each step, the sends that wait for its inputs (a
	// ring's step k+1 waits for step k: not stored), so an arrival looks
	// at those alone.
	byDep map[int][]int
}

type collArrivals struct {
	n    int
	last int64
}

// CollectiveLaunch is a step message to send now: to rank Dest, Bytes
// long. Ready is when it could go (the later of its last input's arrival,
// Input, 0 for none, and the compute's end); ComputeNs is the compute
// before the member's first send of the iteration, 0 on the others.
type CollectiveLaunch struct {
	Iter, Step, Dest, Bytes int
	Ready, Input, ComputeNs int64
}

// NewCollectiveRun starts a member's run of plan.
func NewCollectiveRun(plan CollectivePlan) *CollectiveRun {
	c := &CollectiveRun{plan: plan, in: map[[2]int]*collArrivals{}, iter: -1, byDep: map[int][]int{}}
	if plan.ringSteps == 0 {
		for i, s := range plan.sends {
			if s.Dep >= 0 {
				c.byDep[s.Dep] = append(c.byDep[s.Dep], i)
			}
		}
	}
	return c
}

// Begin starts iteration iter, whose compute of computeNs ended at end,
// and returns the messages to send now. Inputs of earlier iterations still
// held are dropped.
func (c *CollectiveRun) Begin(iter int, end, computeNs int64) []CollectiveLaunch {
	for k := range c.in {
		if k[0] < iter {
			delete(c.in, k)
		}
	}
	c.iter, c.computeEnd, c.computeNs = iter, end, computeNs
	c.launched, c.nLaunched, c.pending, c.failed = make([]bool, c.plan.NumSends()), 0, 0, false
	var out []CollectiveLaunch
	if c.plan.ringSteps > 0 {
		// A ring's step 0 goes now and so does each step whose input
		// came early; trying every step would cost each member 2(N-1)
		// look-ups an iteration, 134 million among 8,192 members.
		out = c.try(out, 0)
		var early []int
		for k := range c.in {
			if k[0] == iter && k[1]+1 < c.plan.ringSteps {
				early = append(early, k[1]+1)
			}
		}
		slices.Sort(early)
		for _, i := range early {
			out = c.try(out, i)
		}
		return out
	}
	for i := range c.launched {
		out = c.try(out, i)
	}
	return out
}

// Iter is the iteration being run, -1 before the first.
func (c *CollectiveRun) Iter() int { return c.iter }

// Arrived counts an input, step of iteration iter, arrived at at, and
// returns the messages it lets go now.
func (c *CollectiveRun) Arrived(iter, step int, at int64) []CollectiveLaunch {
	a := c.in[[2]int{iter, step}]
	if a == nil {
		a = &collArrivals{}
		c.in[[2]int{iter, step}] = a
	}
	a.n++
	a.last = max(a.last, at)
	if iter != c.iter {
		return nil
	}
	if c.plan.ringSteps > 0 {
		if step+1 < c.plan.ringSteps {
			return c.try(nil, step+1)
		}
		return nil
	}
	var out []CollectiveLaunch
	for _, i := range c.byDep[step] {
		out = c.try(out, i)
	}
	return out
}

// Answered counts the answer to one launched message of iteration iter.
func (c *CollectiveRun) Answered(iter int, ok bool) {
	if iter != c.iter {
		return
	}
	c.pending--
	c.failed = c.failed || !ok
}

// Done reports whether the member's part of the current iteration is
// over: every message sent and answered and every input it waits for
// arrived; or failed, when a message of it failed (its successors would
// wait for ever).
func (c *CollectiveRun) Done() (done, failed bool) {
	if c.iter < 0 {
		return false, false
	}
	if c.failed {
		return true, true
	}
	if c.pending > 0 || c.nLaunched < len(c.launched) {
		return false, false
	}
	for step, n := range c.plan.Expect {
		if a := c.in[[2]int{c.iter, step}]; a == nil || a.n < n {
			return false, false
		}
	}
	return true, false
}

// try appends to out the messages of the current iteration's send i when
// it is not launched yet and its inputs are all here, marking it launched.
func (c *CollectiveRun) try(out []CollectiveLaunch, i int) []CollectiveLaunch {
	if c.launched[i] {
		return out
	}
	s := c.plan.Send(i)
	readyAt, input := c.computeEnd, int64(0)
	if s.Dep >= 0 {
		a := c.in[[2]int{c.iter, s.Dep}]
		if a == nil || a.n < s.Deps {
			return out
		}
		input = a.last
		readyAt = max(readyAt, input)
	}
	c.launched[i] = true
	c.nLaunched++
	if c.plan.ringSteps > 0 && s.Dep >= 0 {
		// A ring's input lets one send go and no other send or Done
		// reads it (Expect names the last step, which no send waits
		// for): kept, a member would hold 2(N-1) of them an iteration,
		// 134 million among 8,192 members.
		delete(c.in, [2]int{c.iter, s.Dep})
	}
	compute := int64(0)
	if i == 0 {
		compute = c.computeNs
	}
	for _, d := range s.Dests {
		c.pending++
		out = append(out, CollectiveLaunch{Iter: c.iter, Step: s.Step, Dest: d, Bytes: s.Bytes, Ready: readyAt, Input: input, ComputeNs: compute})
	}
	return out
}
