package workloads

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
// order, and the inputs (count by step) that must have arrived for its
// part to be done (with every send answered).
type CollectivePlan struct {
	Sends  []CollectiveSend
	Expect map[int]int
}

// PlanCollective is rank r's part in a collective of kind among n members
// moving bytes (each message carries bytes/n); the zero plan for an
// unknown kind. A step k > 0 always depends on the step k-1 messages sent
// to the host, which is what runfmt.CheckCollectiveOrder checks.
func PlanCollective(kind string, n, r, bytes int) CollectivePlan {
	chunk := max(bytes/max(n, 1), MinCollectiveMessage)
	ring := func(steps int) CollectivePlan {
		p := CollectivePlan{Expect: map[int]int{steps - 1: 1}}
		for k := range steps {
			s := CollectiveSend{Step: k, Dests: []int{(r + 1) % n}, Bytes: chunk, Dep: k - 1, Deps: 1}
			if k == 0 {
				s.Deps = 0
			}
			p.Sends = append(p.Sends, s)
		}
		return p
	}
	others := func() []int {
		var out []int
		for i := range n {
			if i != r {
				out = append(out, i)
			}
		}
		return out
	}
	switch kind {
	case KindRingAllReduce:
		return ring(2 * (n - 1))
	case KindAllGather, KindReduceScatter:
		return ring(n - 1)
	case KindAllToAll:
		return CollectivePlan{Sends: []CollectiveSend{{Step: 0, Dests: others(), Bytes: chunk, Dep: -1}}, Expect: map[int]int{0: n - 1}}
	case KindIncastBarrier:
		if r == 0 {
			return CollectivePlan{Sends: []CollectiveSend{{Step: 1, Dests: others(), Bytes: MinCollectiveMessage, Dep: 0, Deps: n - 1}}, Expect: map[int]int{0: n - 1}}
		}
		return CollectivePlan{Sends: []CollectiveSend{{Step: 0, Dests: []int{0}, Bytes: chunk, Dep: -1}}, Expect: map[int]int{1: 1}}
	}
	return CollectivePlan{}
}

// CollectiveShape is how many step messages one iteration of kind among
// n members sends in all, and how many steps lie on its critical path.
func CollectiveShape(kind string, n int) (messages, critical int) {
	for r := range n {
		for _, s := range PlanCollective(kind, n, r, 0).Sends {
			messages += len(s.Dests)
		}
	}
	switch kind {
	case KindRingAllReduce:
		critical = 2 * (n - 1)
	case KindAllGather, KindReduceScatter:
		critical = n - 1
	case KindAllToAll:
		critical = 1
	case KindIncastBarrier:
		critical = 2
	}
	return messages, critical
}
