package stats

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/homatb/homatb/internal/hostset"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// CollectiveStats summarises one collective phase of an experiment: its
// completion time per iteration and the share of the hosts' time spent
// waiting on the network.
type CollectiveStats struct {
	Phase string   `json:"phase"`
	Kind  string   `json:"kind"`
	Hosts []string `json:"hosts"`
	// Iterations counts the iterations every step of which completed;
	// Incomplete those begun but not finished (a failed or unfinished
	// step), which enter no statistic.
	Iterations int `json:"iterations"`
	Incomplete int `json:"incomplete"`
	// Requested is the iterations the scenario asked for (0 when the
	// manifest does not say); the measurement's end may come first.
	Requested int `json:"iterations_requested,omitempty"`
	// CCT is an iteration's collective completion time: from the first
	// step message sent to the last one answered (µs).
	CCT CCTStats `json:"cct_us"`
	// Step is one step message's time, sent to answered (µs).
	Step StepStats `json:"step_us"`
	// ExposedFraction is the time hosts waited on communication over that
	// plus their compute: for each host and iteration, from the end of its
	// compute (its first send's intended time) to its part done (its last
	// send answered and its last input answered by it), against the
	// compute recorded before its first send.
	ExposedFraction *float64 `json:"exposed_fraction"`
	// IdealCCT is, over the steps on the critical path, this transport's
	// own unloaded RTT of one step message with its 1-byte answer (from
	// the run's calibration of the transport: docs/reports.md); null
	// without calibration. FabricIdealCCT is the same steps over the
	// fabric's ideal RTT instead (the fastest transport's smallest
	// calibrated RPC plus the step's bytes at the link rate), the same for
	// every transport; null without calibration and link rate.
	IdealCCT       *float64 `json:"ideal_cct_us"`
	FabricIdealCCT *float64 `json:"fabric_ideal_cct_us"`
	// OrderChecked counts the steps whose inputs rundir.CheckCollectiveOrder
	// found arrived before the step started; OrderError is its first
	// violation ("" for none).
	OrderChecked int    `json:"order_checked"`
	OrderError   string `json:"order_error,omitempty"`
	// Series is each complete iteration's start (s since the experiment's
	// first) and CCT (µs), for the report's chart.
	Series [][2]float64 `json:"series"`
}

// NotBegun is how many of the iterations asked for the measurement's end
// came before.
func (c CollectiveStats) NotBegun() int {
	return max(c.Requested-c.Iterations-c.Incomplete, 0)
}

// CCTStats are a collective's completion-time percentiles.
type CCTStats struct {
	P50 *float64 `json:"p50"`
	P99 *float64 `json:"p99"`
	Max *float64 `json:"max"`
}

// StepStats are a step message's time percentiles.
type StepStats struct {
	P50 *float64 `json:"p50"`
	P99 *float64 `json:"p99"`
}

// collectivePhases lists the collective phases of the run's scenario, in
// its order and by name.
func collectivePhases(m *Manifest) (names []string, phases map[string]scenarioCollective) {
	phases = map[string]scenarioCollective{}
	for _, c := range scenarioCollectives(m) {
		names = append(names, c.phase)
		phases[c.phase] = c
	}
	return names, phases
}

// scenarioCollective is a collective phase of the run's scenario.
type scenarioCollective struct {
	phase, kind string
	iterations  int
	// members is how many hosts the phase names, resolved against the
	// fabric's hosts; 0 when that cannot be done (no fabric in the
	// manifest), and the members are those the records show.
	members int
}

// scenarioCollectives lists the collective phases of the run's scenario,
// in its order.
func scenarioCollectives(m *Manifest) []scenarioCollective {
	if m == nil {
		return nil
	}
	var fabricHosts []string
	if m.Fabric != nil {
		for _, h := range m.Fabric.Hosts {
			fabricHosts = append(fabricHosts, h.Name)
		}
	}
	var out []scenarioCollective
	for _, p := range ListOf(MapOf(m.Scenario)["phases"]) {
		pm := MapOf(p)
		if c := MapOf(pm["collective"]); c != nil {
			it, _ := c["iterations"].(float64)
			sc := scenarioCollective{phase: Scalar(pm["name"]), kind: Scalar(c["kind"]), iterations: int(it)}
			if len(fabricHosts) > 0 {
				var set []string
				for _, h := range ListOf(pm["hosts"]) {
					set = append(set, Scalar(h))
				}
				if hs, err := hostset.Expand(set, fabricHosts); err == nil {
					sc.members = len(hs)
				}
			}
			out = append(out, sc)
		}
	}
	return out
}

// collectiveStats summarises the step records of one experiment, one
// entry per collective phase (order: the scenario's, then by name). It
// sorts steps.
func collectiveStats(steps *rundir.Steps, order []string, phases map[string]scenarioCollective, ideal *idealRTT, own *ownBaseline, spread *fabricSpread, conf float64) []CollectiveStats {
	steps.Sort()
	byPhase := map[string][]rundir.Step{}
	rundir.Runs(steps.All, func(s *rundir.Step) uint64 { return uint64(s.Phase) }, func(lo, hi int) {
		byPhase[steps.Phases[steps.All[lo].Phase]] = steps.All[lo:hi]
	})
	var out []CollectiveStats
	for _, p := range orderedKeys(order, byPhase) {
		out = append(out, oneCollective(p, phases[p], steps, byPhase[p], ideal, own, spread, conf))
	}
	return out
}

// oneCollective summarises one phase's steps, a run of all's sorted steps.
func oneCollective(phase string, sc scenarioCollective, all *rundir.Steps, ss []rundir.Step, ideal *idealRTT, own *ownBaseline, spread *fabricSpread, conf float64) CollectiveStats {
	kind := sc.kind
	cs := CollectiveStats{Phase: phase, Kind: kind, Requested: sc.iterations, Series: [][2]float64{}}
	member := make([]bool, len(all.Hosts))
	var stepNs []int64
	for i := range ss {
		s := &ss[i]
		member[s.Client], member[s.Server] = true, true
		if s.Completed {
			stepNs = append(stepNs, s.Done-s.Sent)
		}
	}
	for h, in := range member {
		if in {
			cs.Hosts = append(cs.Hosts, all.Hosts[h])
		}
	}
	slices.SortFunc(cs.Hosts, naturalCompare)
	// The scenario's members, not only those the records show: a run cut
	// short may not have reached every member, and an iteration needs them
	// all.
	n := len(cs.Hosts)
	if sc.members > 0 {
		n = sc.members
	}
	want, critical := workloads.CollectiveShape(kind, n, int(all.Longest[ss[0].Phase])*n)
	critical = fabricCritical(kind, critical, all, ss, spread)
	var ccts []int64
	var waitNs, computeNs int64
	var first int64
	// Per host of an iteration: its part done, its compute's end (-1:
	// none) and its compute.
	doneAt, computeEnd, compute := make([]int64, len(all.Hosts)), make([]int64, len(all.Hosts)), make([]int64, len(all.Hosts))
	rundir.Runs(ss, rundir.PhaseIteration, func(lo, hi int) {
		its := ss[lo:hi]
		complete := len(its) == want
		for i := range its {
			complete = complete && its[i].Completed
		}
		if !complete {
			cs.Incomplete++
			return
		}
		start, end := its[0].Sent, its[0].Done
		for i := range its {
			s := &its[i]
			doneAt[s.Client], doneAt[s.Server], computeEnd[s.Client], compute[s.Client] = 0, 0, -1, 0
		}
		for i := range its {
			s := &its[i]
			start, end = min(start, s.Sent), max(end, s.Done)
			doneAt[s.Client] = max(doneAt[s.Client], s.Done)
			doneAt[s.Server] = max(doneAt[s.Server], s.Done)
			if s.Compute > 0 || s.Step == 0 {
				if e := computeEnd[s.Client]; e < 0 || s.Intended < e {
					computeEnd[s.Client] = s.Intended
				}
			}
			// Each host's compute, once (an all-to-all's first sends each carry it).
			compute[s.Client] = max(compute[s.Client], s.Compute)
		}
		for i := range its {
			h := its[i].Client
			if e := computeEnd[h]; e >= 0 {
				waitNs += max(doneAt[h]-e, 0)
				computeNs += compute[h]
				computeEnd[h] = -1 // counted
			}
		}
		if first == 0 {
			first = start
		}
		ccts = append(ccts, end-start)
		cs.Series = append(cs.Series, [2]float64{float64(start-first) / 1e9, float64(end-start) / 1e3})
	})
	cs.Iterations = len(ccts)
	phase1 := &rundir.Steps{Phases: all.Phases, Hosts: all.Hosts, All: ss}
	if n, err := phase1.CheckOrder(func(string) string { return kind }); err != nil {
		cs.OrderError = err.Error()
	} else {
		cs.OrderChecked = n
	}
	if len(ccts) > 0 {
		slices.Sort(ccts)
		p := percentiles(ccts, conf, 1e-3)
		cs.CCT = CCTStats{P50: p.P50, P99: p.P99, Max: p.Max}
	}
	if len(stepNs) > 0 {
		slices.Sort(stepNs)
		p := percentiles(stepNs, conf, 1e-3)
		cs.Step = StepStats{P50: p.P50, P99: p.P99}
	}
	if waitNs+computeNs > 0 {
		cs.ExposedFraction = Ptr(float64(waitNs) / float64(waitNs+computeNs))
	}
	// The busiest link's bytes of each step on the critical path as one
	// message, with a 1-byte answer. A step waits for its input's arrival,
	// not its answer, so every step but the last is one way: each of them
	// gives back one answer's return.
	chained := float64(max(len(critical)-1, 0))
	if ideal != nil && len(critical) > 0 {
		var ns float64
		for _, b := range critical {
			ns += ideal.at(int64(b), 1, 0)
		}
		ns -= chained * ideal.answerReturn(1, ideal.at(1, 1, 0))
		cs.FabricIdealCCT = Ptr(ns / 1e3)
	}
	if own != nil && len(critical) > 0 {
		var ns float64
		for _, b := range critical {
			ns += own.withAnswer(int64(b), 1, ideal)
		}
		l := own.lengths[0]
		small := own.withAnswer(l, 1, ideal)
		if ideal != nil {
			ns -= chained * ideal.answerReturn(l, small)
		} else {
			ns -= chained * small / 2 // no fabric to split it by: half the smallest RPC
		}
		cs.IdealCCT = Ptr(ns / 1e3)
	}
	return cs
}

// fabricCritical scales the critical path's bytes by what the
// collective's own messages put on the links between switches
// (fabricSpread.factor), for the kinds whose every step sends as its
// first does (rings, all-to-all): on an oversubscribed fabric the busiest
// link of a step is above a switch, not a host's. ss are the phase's
// steps, sorted by iteration and step.
func fabricCritical(kind string, critical []int, all *rundir.Steps, ss []rundir.Step, spread *fabricSpread) []int {
	switch kind {
	case workloads.KindRingAllReduce, workloads.KindAllGather, workloads.KindReduceScatter, workloads.KindAllToAll:
	default:
		return critical
	}
	var msgs [][2]string
	for i := range ss {
		if ss[i].Iteration != ss[0].Iteration || ss[i].Step != ss[0].Step {
			break
		}
		msgs = append(msgs, [2]string{all.Hosts[ss[i].Client], all.Hosts[ss[i].Server]})
	}
	f := spread.factor(msgs)
	if f == 1 {
		return critical
	}
	out := make([]int, len(critical))
	for i, b := range critical {
		out[i] = int(math.Round(float64(b) * f))
	}
	return out
}

// naturalCompare orders host names as people number them: h2 before h10.
func naturalCompare(a, b string) int {
	ta, na := splitNumber(a)
	tb, nb := splitNumber(b)
	if c := cmp.Compare(ta, tb); c != 0 {
		return c
	}
	if c := cmp.Compare(na, nb); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

func splitNumber(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n := 0
	fmt.Sscanf(s[i:], "%d", &n)
	return s[:i], n
}
