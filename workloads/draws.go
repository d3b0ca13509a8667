package workloads

import (
	"math/rand/v2"
	"time"
)

// OpenLoop is an open-loop client's RPCs in order: when each is due (an
// offset from the client's start), its request size and which of its
// targets it goes to, all drawn from one generator seeded by the
// workload's seed. The host agent and the simulator both issue from it,
// so the same seed gives the same RPCs in either.
type OpenLoop struct {
	rng     *rand.Rand
	sched   Schedule
	sizes   SizeDist
	targets int
}

// NewOpenLoop draws RPCs on sched with sizes over targets targets.
func NewOpenLoop(seed uint64, sched Schedule, sizes SizeDist, targets int) *OpenLoop {
	return &OpenLoop{rng: rand.New(rand.NewPCG(seed, 0x5eed)), sched: sched, sizes: sizes, targets: targets}
}

// Next is the next RPC: its offset, request size and target index.
func (o *OpenLoop) Next() (off time.Duration, size, target int) {
	off = o.sched.Next(o.rng)
	size = o.sizes.Sample(o.rng)
	return off, size, o.rng.IntN(o.targets)
}

// ClosedLoop is one closed-loop worker's RPCs in order (size and target),
// drawn from a generator seeded by the workload's seed and the worker.
type ClosedLoop struct {
	rng     *rand.Rand
	sizes   SizeDist
	targets int
}

// NewClosedLoop draws worker's RPCs with sizes over targets targets.
func NewClosedLoop(seed uint64, worker int, sizes SizeDist, targets int) *ClosedLoop {
	return &ClosedLoop{rng: rand.New(rand.NewPCG(seed, uint64(worker)+1)), sizes: sizes, targets: targets}
}

// Next is the worker's next RPC: its request size and target index.
func (c *ClosedLoop) Next() (size, target int) {
	size = c.sizes.Sample(c.rng)
	return size, c.rng.IntN(c.targets)
}
