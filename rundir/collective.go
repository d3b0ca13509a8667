package rundir

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/homatb/homatb/workloads"
)

// Step is what the report and the order check read of one collective step
// message's row: 64 bytes, its hosts and phase by number (Steps names
// them), so 134 million steps of an 8,192-rank ring fit in memory where
// their rows would not.
type Step struct {
	Intended, Sent, Done, Input, Compute int64 // ns
	Iteration, Step                      int32
	Client, Server                       uint32 // indexes into Steps.Hosts
	Phase                                uint16 // index into Steps.Phases
	Completed                            bool
}

// Steps are the collective step messages of one experiment.
type Steps struct {
	Phases, Hosts []string
	All           []Step
	// Longest is each phase's longest step message (bytes).
	Longest []int64
	phaseOf map[string]uint16
	hostOf  map[string]uint32
}

// Add keeps r, a collective step's row.
func (s *Steps) Add(r *RPC) error {
	if r.Iteration < 0 || r.Iteration > math.MaxInt32 || r.Step < 0 || r.Step > math.MaxInt32 {
		return fmt.Errorf("collective %s: iteration %d step %d: want 0 to %d", r.Collective, r.Iteration, r.Step, math.MaxInt32)
	}
	p, ok := s.phaseOf[r.Collective]
	if !ok {
		if len(s.Phases) == math.MaxUint16 {
			return fmt.Errorf("collective %s: more than %d collective phases", r.Collective, math.MaxUint16)
		}
		if s.phaseOf == nil {
			s.phaseOf, s.hostOf = map[string]uint16{}, map[string]uint32{}
		}
		p = uint16(len(s.Phases))
		name := strings.Clone(r.Collective) // not the row's line
		s.phaseOf[name] = p
		s.Phases = append(s.Phases, name)
		s.Longest = append(s.Longest, 0)
	}
	s.Longest[p] = max(s.Longest[p], r.ReqBytes)
	if len(s.All) == cap(s.All) {
		// Double, where append grows a large slice by a quarter: a ring
		// of thousands of ranks appends hundreds of millions of steps,
		// and copying them a dozen times took half of its report.
		s.All = slices.Grow(s.All, max(len(s.All), 1024))
	}
	s.All = append(s.All, Step{Intended: r.IntendedNs, Sent: r.SentNs, Done: r.DoneNs, Input: r.InputNs, Compute: r.ComputeNs,
		Iteration: int32(r.Iteration), Step: int32(r.Step), Client: s.host(r.Client), Server: s.host(r.ServerHost),
		Phase: p, Completed: r.Status == StatusCompleted})
	return nil
}

func (s *Steps) host(name string) uint32 {
	if i, ok := s.hostOf[name]; ok {
		return i
	}
	name = strings.Clone(name)
	i := uint32(len(s.Hosts))
	s.hostOf[name] = i
	s.Hosts = append(s.Hosts, name)
	return i
}

// Sort orders the steps by phase, iteration, receiver, step and sender:
// each phase's iterations, and each receiver's inputs in them, are then
// runs of All.
func (s *Steps) Sort() {
	slices.SortFunc(s.All, func(a, b Step) int {
		return cmp.Or(cmp.Compare(a.Phase, b.Phase), cmp.Compare(a.Iteration, b.Iteration), cmp.Compare(a.Server, b.Server),
			cmp.Compare(a.Step, b.Step), cmp.Compare(a.Client, b.Client))
	})
}

// Runs splits sorted steps into the runs that share key, calling each
// with its bounds [lo, hi).
func Runs(steps []Step, key func(*Step) uint64, each func(lo, hi int)) {
	for lo := 0; lo < len(steps); {
		k, hi := key(&steps[lo]), lo+1
		for hi < len(steps) && key(&steps[hi]) == k {
			hi++
		}
		each(lo, hi)
		lo = hi
	}
}

// PhaseIteration is the key of Runs for one phase's iteration.
func PhaseIteration(s *Step) uint64 { return uint64(s.Phase)<<32 | uint64(uint32(s.Iteration)) }

// CheckOrder checks, on steps sorted by Sort, that no collective step
// started before its input arrived: a step k of iteration i sent by host h
// depends on every message of iteration i sent to h of the step
// workloads.CollectiveInputStep names for the phase's kind (kindOf, by
// phase name; k-1 for k > 0 but in a tree all-reduce); its input_ns (the
// last of them arriving at h, on h's clock) must lie between the last
// one's send and its answer, its intended time must not be earlier than
// that, and it must not have been sent before its intended time. It
// returns how many dependent steps it checked, or the first violation.
func (s *Steps) CheckOrder(kindOf func(phase string) string) (int, error) {
	checked := 0
	// to[h] are host h's inputs in the current iteration, a run of it.
	to := make([][]Step, len(s.Hosts))
	var it []Step
	inputs := func(h uint32, k int32) []Step {
		mine := to[h]
		a, _ := slices.BinarySearchFunc(mine, k, func(x Step, k int32) int { return cmp.Compare(x.Step, k) })
		b := a
		for b < len(mine) && mine[b].Step == k {
			b++
		}
		return mine[a:b]
	}
	var cur *Step // the step received asks about, made once rather than per step
	received := func(k int) bool { return len(inputs(cur.Client, int32(k))) > 0 }
	var err error
	Runs(s.All, PhaseIteration, func(lo, hi int) {
		if err != nil {
			return
		}
		it = s.All[lo:hi]
		clear(to)
		Runs(it, func(s *Step) uint64 { return uint64(s.Server) }, func(lo, hi int) { to[it[lo].Server] = it[lo:hi] })
		kind := kindOf(s.Phases[it[0].Phase])
		for i := range it {
			r := &it[i]
			if r.Sent == 0 {
				continue
			}
			what := func() string {
				return fmt.Sprintf("%s iteration %d step %d from %s", s.Phases[r.Phase], r.Iteration, r.Step, s.Hosts[r.Client])
			}
			if r.Sent < r.Intended || r.Intended < r.Input {
				err = fmt.Errorf("%s: sent at %d, intended %d, its input arrived at %d: want input <= intended <= sent", what(), r.Sent, r.Intended, r.Input)
				return
			}
			cur = r
			dep, ok := workloads.CollectiveInputStep(kind, int(r.Step), received)
			if !ok {
				continue
			}
			in := inputs(r.Client, int32(dep))
			if len(in) == 0 {
				err = fmt.Errorf("%s: no step %d message to %s", what(), dep, s.Hosts[r.Client])
				return
			}
			var lastSent, lastDone int64
			for _, q := range in {
				if !q.Completed {
					err = fmt.Errorf("%s: sent though its input from %s did not complete", what(), s.Hosts[q.Client])
					return
				}
				lastSent, lastDone = max(lastSent, q.Sent), max(lastDone, q.Done)
			}
			if r.Input < lastSent || r.Input > lastDone {
				err = fmt.Errorf("%s: its input arrived at %d, outside the last input's send %d .. answer %d", what(), r.Input, lastSent, lastDone)
				return
			}
			checked++
		}
	})
	return checked, err
}

// CheckCollectiveOrder is Steps.CheckOrder over rows as rpcs.csv holds
// them; rows of several experiments are checked each among its own, in the
// order they first appear.
func CheckCollectiveOrder(rows []RPC, kindOf func(phase string) string) (int, error) {
	byExp := map[string]*Steps{}
	var order []string
	for i := range rows {
		r := &rows[i]
		if r.Collective == "" {
			continue
		}
		s := byExp[r.Experiment]
		if s == nil {
			s = &Steps{}
			byExp[r.Experiment] = s
			order = append(order, r.Experiment)
		}
		if err := s.Add(r); err != nil {
			return 0, err
		}
	}
	checked := 0
	for _, e := range order {
		s := byExp[e]
		s.Sort()
		n, err := s.CheckOrder(kindOf)
		checked += n
		if err != nil {
			return checked, err
		}
	}
	return checked, nil
}
