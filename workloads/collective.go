package workloads

import (
	"math/bits"
	"slices"
)

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
	// KindTreeAllReduce reduces up a binary tree and broadcasts down it,
	// pipelined: the buffer goes in N chunks of bytes/N, and each chunk
	// moves on from a host once it has arrived there and the host's
	// window (TreeWindow by default) has room.
	KindTreeAllReduce = "tree-allreduce"
)

// CollectiveKinds lists every collective kind.
var CollectiveKinds = []string{KindRingAllReduce, KindTreeAllReduce, KindAllGather, KindReduceScatter, KindAllToAll, KindIncastBarrier}

// TreeWindow is how many of a tree all-reduce member's step messages may
// be unanswered at once; a send ready beyond it waits for an answer. A
// collective library bounds its chunks in flight by its buffer slots
// (NCCL's NCCL_STEPS, 8); unbounded, a leaf would post all N chunks to its
// parent at once, with its sibling's beside them.
const TreeWindow = 8

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
	// tree, when set, makes the plan a member's part in a tree
	// all-reduce, its sends computed as a ring's are (Expect is nil).
	tree *treePlan
	// window bounds the member's unanswered messages (0: no bound).
	window int
}

// treePlan is one member's part in a pipelined binary-tree all-reduce.
// The tree is in heap order: rank r's parent is (r-1)/2 and its children
// 2r+1 and 2r+2. Chunk c travels up as step 2c (a member sends it to its
// parent once every child's chunk c has arrived; a leaf at once) and down
// as step 2c+1 (the root sends it to its children once their chunk c has
// arrived, every other member once its parent's has). Its sends are
// numbered up chunks first (none at the root), then down chunks (none at
// a leaf).
type treePlan struct {
	parent        int   // -1 at the root
	up            []int // the parent alone; nil at the root
	children      []int
	chunks, bytes int
}

// ups is how many up sends the member has.
func (t *treePlan) ups() int {
	if t.parent < 0 {
		return 0
	}
	return t.chunks
}

func (t *treePlan) numSends() int {
	if len(t.children) == 0 {
		return t.ups()
	}
	return t.ups() + t.chunks
}

func (t *treePlan) send(i int) CollectiveSend {
	if i < t.ups() {
		if len(t.children) == 0 {
			return CollectiveSend{Step: 2 * i, Dests: t.up, Bytes: t.bytes, Dep: -1}
		}
		return CollectiveSend{Step: 2 * i, Dests: t.up, Bytes: t.bytes, Dep: 2 * i, Deps: len(t.children)}
	}
	c := i - t.ups()
	if t.parent < 0 {
		return CollectiveSend{Step: 2*c + 1, Dests: t.children, Bytes: t.bytes, Dep: 2 * c, Deps: len(t.children)}
	}
	return CollectiveSend{Step: 2*c + 1, Dests: t.children, Bytes: t.bytes, Dep: 2*c + 1, Deps: 1}
}

// waiting is the send that waits for step's inputs, -1 for none: an up
// chunk from the children lets the same chunk go up (or, at the root,
// down); a down chunk from the parent lets it go on down.
func (t *treePlan) waiting(step int) int {
	c := step / 2
	switch {
	case c < 0 || c >= t.chunks || len(t.children) == 0:
		return -1
	case step%2 == 0:
		return c // the up send of chunk c, or at the root its down send
	case t.parent >= 0:
		return t.ups() + c
	}
	return -1
}

// inputs is how many step messages reach the member in each iteration.
func (t *treePlan) inputs() int {
	n := len(t.children) * t.chunks
	if t.parent >= 0 {
		n += t.chunks
	}
	return n
}

// computed reports whether the plan's sends are computed (a ring's, a
// tree's) rather than stored: then firstSends, waiting and inputs say
// what the stored plan's Dep fields and Expect would.
func (p *CollectivePlan) computed() bool { return p.ringSteps > 0 || p.tree != nil }

// firstSends is how many of a computed plan's sends, from the first, go
// at the compute's end: a ring's step 0, a tree leaf's up chunks.
func (p *CollectivePlan) firstSends() int {
	switch {
	case p.ringSteps > 0:
		return 1
	case len(p.tree.children) == 0:
		return p.tree.ups()
	}
	return 0
}

// waiting is the computed plan's send that waits for step's inputs, -1
// for none (a ring's last step, a tree leaf's down chunks).
func (p *CollectivePlan) waiting(step int) int {
	if p.ringSteps > 0 {
		if step+1 < p.ringSteps {
			return step + 1
		}
		return -1
	}
	return p.tree.waiting(step)
}

// inputs is how many step messages reach a computed plan's member in
// each iteration.
func (p *CollectivePlan) inputs() int {
	if p.ringSteps > 0 {
		return p.ringSteps
	}
	return p.tree.inputs()
}

// SetWindow bounds the member's unanswered messages to w; w <= 0 keeps
// the kind's default (TreeWindow for a tree all-reduce, none otherwise).
func (p *CollectivePlan) SetWindow(w int) {
	if w > 0 {
		p.window = w
	}
}

// NumSends is how many sending steps the plan has.
func (p *CollectivePlan) NumSends() int {
	switch {
	case p.ringSteps > 0:
		return p.ringSteps
	case p.tree != nil:
		return p.tree.numSends()
	}
	return len(p.sends)
}

// Send is the plan's i-th sending step.
func (p *CollectivePlan) Send(i int) CollectiveSend {
	switch {
	case p.ringSteps > 0:
		s := CollectiveSend{Step: i, Dests: p.ringDests, Bytes: p.ringBytes, Dep: i - 1, Deps: 1}
		if i == 0 {
			s.Deps = 0
		}
		return s
	case p.tree != nil:
		return p.tree.send(i)
	}
	return p.sends[i]
}

// Messages is how many messages the member sends in each iteration.
func (p *CollectivePlan) Messages() int {
	switch {
	case p.ringSteps > 0:
		return p.ringSteps
	case p.tree != nil:
		return p.tree.ups() + len(p.tree.children)*p.tree.chunks
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
	case KindTreeAllReduce:
		t := &treePlan{parent: -1, chunks: n, bytes: chunk}
		if r > 0 {
			t.parent = (r - 1) / 2
			t.up = []int{t.parent}
		}
		for _, c := range []int{2*r + 1, 2*r + 2} {
			if c < n {
				t.children = append(t.children, c)
			}
		}
		return CollectivePlan{tree: t, window: TreeWindow}
	}
	return CollectivePlan{}
}

// CollectiveInputStep is the step whose messages to the sender a send of
// step by a member of a kind collective waits for; false for none (the
// sends that go at the compute's end). received says whether any message
// of a step reached the sender in that iteration: a tree all-reduce's
// member waits for its children's or its parent's chunk, whichever it
// has. rundir.CheckCollectiveOrder reads the records with it.
func CollectiveInputStep(kind string, step int, received func(step int) bool) (int, bool) {
	if kind != KindTreeAllReduce {
		return step - 1, step > 0
	}
	switch {
	case step%2 == 0:
		return step, received(step) // from the children; a leaf waits for nothing
	case received(step):
		return step, true // from the parent
	}
	return step - 1, true // the root: from its children
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
	case KindTreeAllReduce:
		// The busiest member's uplink carries its chunks up and to each
		// child; then the last chunk goes the rest of the way up from the
		// deepest leaf and down to it, one chunk a hop.
		busiest := 0
		for r := range n {
			p := PlanCollective(kind, n, r, bytes)
			busiest = max(busiest, p.Messages())
		}
		if n > 1 {
			critical = append([]int{busiest * chunk}, ring(2*(bits.Len(uint(n))-1)-1)...)
		}
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
	pending               int    // messages launched and not yet answered
	failed                bool
	// byDep lists, for each step, the sends that wait for its inputs (a
	// computed plan's are CollectivePlan.waiting's), so an arrival looks
	// at those alone.
	byDep map[int][]int
	// counts are a computed plan's inputs arrived, by iteration: it
	// keeps only those a send waits for, and is done once all are in.
	counts map[int]int
	// queued are messages whose inputs are in, waiting for the window
	// (CollectivePlan.window) to let them go, in the order they came.
	queued []queuedSend
}

// queuedSend is a message the window holds back: send i's to its dest-th
// destination.
type queuedSend struct {
	i, dest      int
	ready, input int64
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
	if plan.computed() {
		c.counts = map[int]int{}
	}
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
	c.queued = c.queued[:0]
	var out []CollectiveLaunch
	if c.plan.computed() {
		// A computed plan's first sends go now and so does each send
		// whose input came early; trying every send would cost each
		// member 2(N-1) look-ups an iteration, 134 million among 8,192
		// members.
		for k := range c.counts {
			if k < iter {
				delete(c.counts, k)
			}
		}
		for i := range c.plan.firstSends() {
			out = c.try(out, i)
		}
		var early []int
		for k := range c.in {
			if k[0] == iter {
				early = append(early, c.plan.waiting(k[1]))
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
	computed := c.plan.computed()
	if computed {
		c.counts[iter]++
		if c.plan.waiting(step) < 0 {
			return nil // counted; no send waits for it
		}
	}
	a := c.in[[2]int{iter, step}]
	if a == nil {
		if computed && iter == c.iter {
			// A computed plan's input mostly lets its one send go at once,
			// which deletes it from c.in (try): such an input is not put
			// there. That was an allocation and two map writes a step
			// message, 2% of a simulated ring's run.
			if i := c.plan.waiting(step); !c.launched[i] {
				if s := c.plan.Send(i); s.Dep == step && s.Deps <= 1 {
					input := max(0, at) // the input's collArrivals.last
					return c.launch(nil, i, s, max(c.computeEnd, input), input)
				}
			}
		}
		a = &collArrivals{}
		c.in[[2]int{iter, step}] = a
	}
	a.n++
	a.last = max(a.last, at)
	if iter != c.iter {
		return nil
	}
	if computed {
		return c.try(nil, c.plan.waiting(step))
	}
	var out []CollectiveLaunch
	for _, i := range c.byDep[step] {
		out = c.try(out, i)
	}
	return out
}

// Answered counts the answer to one launched message of iteration iter,
// which came at at, and returns the messages it lets go now: those the
// window held back.
func (c *CollectiveRun) Answered(iter int, ok bool, at int64) []CollectiveLaunch {
	if iter != c.iter {
		return nil
	}
	c.pending--
	c.failed = c.failed || !ok
	var out []CollectiveLaunch
	for len(c.queued) > 0 && c.room() {
		q := c.queued[0]
		c.queued = c.queued[1:]
		out = c.emit(out, c.plan.Send(q.i), q.i, q.dest, max(q.ready, at), q.input)
	}
	return out
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
	if c.pending > 0 || c.nLaunched < len(c.launched) || len(c.queued) > 0 {
		return false, false
	}
	if c.plan.computed() {
		return c.counts[c.iter] >= c.plan.inputs(), false
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
	if c.plan.computed() && s.Dep >= 0 {
		// A computed plan's input lets one send go and no other send or
		// Done reads it (Done counts): kept, a member would hold 2(N-1)
		// of them an iteration, 134 million among 8,192 members.
		delete(c.in, [2]int{c.iter, s.Dep})
	}
	return c.launch(out, i, s, readyAt, input)
}

// launch appends to out the messages of the current iteration's send i
// (s), whose inputs are all here, ready at readyAt with its last input at
// input, and marks it launched.
func (c *CollectiveRun) launch(out []CollectiveLaunch, i int, s CollectiveSend, readyAt, input int64) []CollectiveLaunch {
	c.launched[i] = true
	c.nLaunched++
	for j := range s.Dests {
		if len(c.queued) > 0 || !c.room() {
			c.queued = append(c.queued, queuedSend{i: i, dest: j, ready: readyAt, input: input})
			continue
		}
		out = c.emit(out, s, i, j, readyAt, input)
	}
	return out
}

// room reports whether the window lets one more message go now.
func (c *CollectiveRun) room() bool {
	return c.plan.window <= 0 || c.pending < c.plan.window
}

// emit appends to out the message of send s (the plan's i-th) to its j-th
// destination, ready at readyAt with its last input at input, and counts
// it pending.
func (c *CollectiveRun) emit(out []CollectiveLaunch, s CollectiveSend, i, j int, readyAt, input int64) []CollectiveLaunch {
	compute := int64(0)
	if i == 0 {
		compute = c.computeNs
	}
	c.pending++
	return append(out, CollectiveLaunch{Iter: c.iter, Step: s.Step, Dest: s.Dests[j], Bytes: s.Bytes, Ready: readyAt, Input: input, ComputeNs: compute})
}
