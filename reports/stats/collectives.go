package stats

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// collStep is one step message of a collective, as rpcs.csv records it.
type collStep struct {
	phase                           string
	iter, step                      int
	client, server                  string
	bytes                           int64
	intended, sent, done, computeNs int64
	input                           int64
	completed                       bool
}

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

// collectiveKinds maps each collective phase of the run's scenario to its
// kind, in the scenario's order.
func collectiveKinds(m *Manifest) (names []string, kinds map[string]string) {
	kinds = map[string]string{}
	if m == nil {
		return nil, kinds
	}
	for _, p := range ListOf(MapOf(m.Scenario)["phases"]) {
		pm := MapOf(p)
		if c := MapOf(pm["collective"]); c != nil {
			names = append(names, Scalar(pm["name"]))
			kinds[Scalar(pm["name"])] = Scalar(c["kind"])
		}
	}
	return names, kinds
}

// collectiveStats summarises the step records of one experiment, one
// entry per collective phase (order: the scenario's, then by name).
func collectiveStats(steps []collStep, order []string, kinds map[string]string, ideal *idealRTT, own *ownBaseline, conf float64) []CollectiveStats {
	byPhase := map[string][]collStep{}
	for _, s := range steps {
		byPhase[s.phase] = append(byPhase[s.phase], s)
	}
	var out []CollectiveStats
	for _, p := range orderedKeys(order, byPhase) {
		out = append(out, oneCollective(p, kinds[p], byPhase[p], ideal, own, conf))
	}
	return out
}

type hostIter struct {
	host string
	iter int
}

func oneCollective(phase, kind string, ss []collStep, ideal *idealRTT, own *ownBaseline, conf float64) CollectiveStats {
	cs := CollectiveStats{Phase: phase, Kind: kind, Series: [][2]float64{}}
	hosts := map[string]bool{}
	byIter := map[int][]collStep{}
	var stepNs []int64
	for _, s := range ss {
		hosts[s.client], hosts[s.server] = true, true
		byIter[s.iter] = append(byIter[s.iter], s)
		if s.completed {
			stepNs = append(stepNs, s.done-s.sent)
		}
	}
	for h := range hosts {
		cs.Hosts = append(cs.Hosts, h)
	}
	slices.SortFunc(cs.Hosts, naturalCompare)
	n := len(cs.Hosts)
	want, critical := workloads.CollectiveShape(kind, n, bufferBytes(n, ss))
	var ccts []int64
	var waitNs, computeNs int64
	var first int64
	iters := slices.Sorted(func(yield func(int) bool) {
		for i := range byIter {
			if !yield(i) {
				return
			}
		}
	})
	for _, i := range iters {
		its := byIter[i]
		complete := len(its) == want
		for _, s := range its {
			complete = complete && s.completed
		}
		if !complete {
			cs.Incomplete++
			continue
		}
		start, end := its[0].sent, its[0].done
		doneAt := map[string]int64{}
		computeEnd := map[string]int64{}
		for _, s := range its {
			start, end = min(start, s.sent), max(end, s.done)
			doneAt[s.client] = max(doneAt[s.client], s.done)
			doneAt[s.server] = max(doneAt[s.server], s.done)
			if s.computeNs > 0 || s.step == 0 {
				if e, ok := computeEnd[s.client]; !ok || s.intended < e {
					computeEnd[s.client] = s.intended
				}
			}
		}
		// Each host's compute, once (an all-to-all's first sends each carry it).
		compute := map[string]int64{}
		for _, s := range its {
			compute[s.client] = max(compute[s.client], s.computeNs)
		}
		for h, e := range computeEnd {
			waitNs += max(doneAt[h]-e, 0)
			computeNs += compute[h]
		}
		if first == 0 {
			first = start
		}
		ccts = append(ccts, end-start)
		cs.Series = append(cs.Series, [2]float64{float64(start-first) / 1e9, float64(end-start) / 1e3})
	}
	cs.Iterations = len(ccts)
	if n, err := rundir.CheckCollectiveOrder(asRows(ss), func(string) string { return kind }); err != nil {
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
	// message, with a 1-byte answer.
	if ideal != nil && len(critical) > 0 {
		var ns float64
		for _, b := range critical {
			ns += ideal.at(int64(b), 1, 0)
		}
		cs.FabricIdealCCT = Ptr(ns / 1e3)
	}
	if own != nil && len(critical) > 0 {
		var ns float64
		for _, b := range critical {
			ns += own.withAnswer(int64(b), 1, ideal)
		}
		cs.IdealCCT = Ptr(ns / 1e3)
	}
	return cs
}

// asRows are the steps as the rpcs.csv rows they came from, as far as
// rundir.CheckCollectiveOrder reads them.
func asRows(ss []collStep) []rundir.RPC {
	out := make([]rundir.RPC, len(ss))
	for i, s := range ss {
		status := rundir.StatusFailed
		if s.completed {
			status = rundir.StatusCompleted
		}
		out[i] = rundir.RPC{Collective: s.phase, Client: s.client, ServerHost: s.server, Iteration: int64(s.iter), Step: int64(s.step),
			IntendedNs: s.intended, SentNs: s.sent, DoneNs: s.done, InputNs: s.input, Status: status}
	}
	return out
}

// bufferBytes is the collective's buffer as its records show it: n
// times its longest step message (an incast-barrier's release is shorter).
func bufferBytes(n int, ss []collStep) int {
	var longest int64
	for _, s := range ss {
		longest = max(longest, s.bytes)
	}
	return int(longest) * n
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
