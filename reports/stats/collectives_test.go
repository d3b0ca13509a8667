package stats

import (
	"math"
	"testing"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// stepsOf keeps rows as the report reads them.
func stepsOf(t *testing.T, rows []rundir.RPC) *rundir.Steps {
	t.Helper()
	var s rundir.Steps
	for i := range rows {
		if err := s.Add(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	return &s
}

// TestCollectiveStats builds the step records of a 3-host ring all-reduce
// by hand (every step 1 ms, answered at once, 0.5 ms of compute before
// each iteration) and checks the CCT, step times and exposed fraction.
func TestCollectiveStats(t *testing.T) {
	const ms = int64(1e6)
	hosts := []string{"h1", "h2", "h3"}
	var rows []rundir.RPC
	begin := int64(1e12)
	for it := range 2 {
		computeEnd := begin + ms/2
		for k := range 4 { // 2(N-1) steps
			for r, h := range hosts {
				sent := computeEnd + int64(k)*ms
				s := rundir.RPC{Collective: "train", Iteration: int64(it), Step: int64(k), Client: h, ServerHost: hosts[(r+1)%3], ReqBytes: 1000,
					IntendedNs: sent, SentNs: sent, DoneNs: sent + ms, Status: rundir.StatusCompleted}
				if k == 0 {
					s.ComputeNs = ms / 2
				} else {
					s.InputNs = sent
				}
				rows = append(rows, s)
			}
		}
		begin = computeEnd + 4*ms
	}
	// A third iteration that lost a step: counted as incomplete.
	rows = append(rows, rundir.RPC{Collective: "train", Iteration: 2, Step: 0, Client: "h1", ServerHost: "h2", ReqBytes: 1000, IntendedNs: begin, SentNs: begin, Status: rundir.StatusFailed})
	got := collectiveStats(stepsOf(t, rows), []string{"train"}, map[string]scenarioCollective{"train": {kind: workloads.KindRingAllReduce}}, nil, nil, nil, 0.95)
	if len(got) != 1 {
		t.Fatalf("%d collectives, want 1", len(got))
	}
	c := got[0]
	if c.Iterations != 2 || c.Incomplete != 1 || len(c.Series) != 2 {
		t.Fatalf("iterations %d, incomplete %d, series %v: want 2, 1, 2 points", c.Iterations, c.Incomplete, c.Series)
	}
	if *c.CCT.P50 != 4000 || *c.CCT.Max != 4000 || *c.Step.P50 != 1000 {
		t.Errorf("CCT P50 %v max %v, step P50 %v µs: want 4000, 4000, 1000", *c.CCT.P50, *c.CCT.Max, *c.Step.P50)
	}
	// Each host waits 4 ms per iteration after 0.5 ms of compute.
	if want := 4.0 / 4.5; math.Abs(*c.ExposedFraction-want) > 1e-9 {
		t.Errorf("exposed fraction %v, want %v", *c.ExposedFraction, want)
	}
	if c.IdealCCT != nil || c.Kind != workloads.KindRingAllReduce || len(c.Hosts) != 3 {
		t.Errorf("ideal %v kind %q hosts %v: want no ideal without calibration, the kind, 3 hosts", c.IdealCCT, c.Kind, c.Hosts)
	}
	// Every step after the first of the two complete iterations waited for its input.
	if c.OrderChecked != 2*3*3 || c.OrderError != "" {
		t.Errorf("order checked %d, error %q: want 18 steps, none out of order", c.OrderChecked, c.OrderError)
	}
}

// ringOf3 is one iteration of a ring all-reduce among h1, h2 and h3: 4
// steps of 1000 B, each answered 1 ns after it was sent.
func ringOf3() []rundir.RPC {
	hosts := []string{"h1", "h2", "h3"}
	var rows []rundir.RPC
	for k := range 4 {
		for r, h := range hosts {
			rows = append(rows, rundir.RPC{Collective: "train", Step: int64(k), Client: h, ServerHost: hosts[(r+1)%3], ReqBytes: 1000,
				IntendedNs: int64(k), SentNs: int64(k), DoneNs: int64(k) + 1, Status: rundir.StatusCompleted})
		}
	}
	return rows
}

// TestOwnIdealCCT: the ideal CCT is the steps on the critical path times
// the transport's own calibrated RTT of a step message with its 1-byte
// answer, less one answer's return for every step but the last (a step
// waits for its input's arrival, not its answer); calibrated with echoed
// responses, the response's wire time is replaced by the answer's.
func TestOwnIdealCCT(t *testing.T) {
	rows := ringOf3()
	steps := stepsOf(t, rows)
	kinds := map[string]scenarioCollective{"train": {kind: workloads.KindRingAllReduce}}
	// 100 µs at 100 B and 1000 µs at 10,000 B: 181.8 µs at a step's 1000 B;
	// without a fabric an answer's return is half the smallest RPC's RTT.
	own := &ownBaseline{lengths: []int64{100, 10_000}, rtts: []float64{100e3, 1000e3}, resps: []int64{1, 1}}
	c := collectiveStats(steps, []string{"train"}, kinds, nil, own, nil, 0.95)[0]
	if want := 4*(100+900.0/9900*900) - 3*50; c.IdealCCT == nil || math.Abs(*c.IdealCCT-want) > 1e-6 {
		t.Errorf("ideal CCT %v µs, want %v", deref(c.IdealCCT), want)
	}
	id := &idealRTT{baseNs: 50e3, baseReq: 100, baseResp: 1, baseLinks: 2, rateBps: 1e9, mtu: 1500}
	echo := &ownBaseline{lengths: []int64{100, 10_000}, rtts: []float64{100e3, 1000e3}, resps: []int64{100, 10_000}}
	c = collectiveStats(steps, []string{"train"}, kinds, id, echo, nil, 0.95)[0]
	step := 100e3 + 900.0/9900*900e3 + id.transfer(1, 2) - id.transfer(1000, 2)
	// The smallest RPC with a 1-byte answer, less both messages' transfers,
	// is the round trip's fixed part: half of it and the answer's transfer
	// come back.
	small := 100e3 + id.transfer(1, 2) - id.transfer(100, 2)
	back := (small-id.transfer(100, 2)-id.transfer(1, 2))/2 + id.transfer(1, 2)
	if want := (4*step - 3*back) / 1e3; c.IdealCCT == nil || math.Abs(*c.IdealCCT-want) > 1e-6 {
		t.Errorf("ideal CCT from echoed calibration %v µs, want %v", deref(c.IdealCCT), want)
	}
	fabricBack := (id.at(1, 1, 0)-2*id.transfer(1, 2))/2 + id.transfer(1, 2)
	if want := (4*id.at(1000, 1, 0) - 3*fabricBack) / 1e3; c.FabricIdealCCT == nil || math.Abs(*c.FabricIdealCCT-want) > 1e-6 {
		t.Errorf("fabric ideal CCT %v µs, want %v", deref(c.FabricIdealCCT), want)
	}
	// An all-to-all is one step: nothing to give back.
	c = collectiveStats(stepsOf(t, rows[:3]), []string{"train"}, map[string]scenarioCollective{"train": {kind: workloads.KindAllToAll}}, nil, own, nil, 0.95)[0]
	if want := 100 + 900.0/9900*(2*1000-100); c.IdealCCT == nil || math.Abs(*c.IdealCCT-want) > 1e-6 {
		t.Errorf("all-to-all ideal CCT %v µs, want %v", deref(c.IdealCCT), want)
	}
}

// deref is *p, or NaN for nil, for messages.
func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestScenarioMembers: a collective's members are the hosts its phase
// names, resolved against the fabric, not only those its records show. A
// run cut short before h4 took part gives the 4-member ring's ideal (6
// steps) and leaves its iteration incomplete, where the records' 3 hosts
// would make it a complete 3-member ring of 4 steps.
func TestScenarioMembers(t *testing.T) {
	m := &Manifest{}
	m.Scenario = map[string]any{"phases": []any{
		map[string]any{"name": "train", "hosts": []any{"all"}, "collective": map[string]any{"kind": "ring-allreduce", "iterations": 2.0}},
		map[string]any{"name": "few", "hosts": []any{"h2-h3"}, "collective": map[string]any{"kind": "alltoall"}},
		map[string]any{"name": "gone", "hosts": []any{"h9"}, "collective": map[string]any{"kind": "alltoall"}},
	}}
	m.Fabric = &rundir.FabricRecord{Hosts: []rundir.FabricHost{{Name: "h1"}, {Name: "h2"}, {Name: "h3"}, {Name: "h4"}}}
	order, phases := collectivePhases(m)
	if len(order) != 3 || phases["train"].members != 4 || phases["few"].members != 2 || phases["gone"].members != 0 || phases["train"].iterations != 2 {
		t.Fatalf("phases %v %+v: want train of 4 members and 2 iterations, few of 2, gone unresolved (0)", order, phases)
	}
	rows := ringOf3()
	own := &ownBaseline{lengths: []int64{100, 10_000}, rtts: []float64{100e3, 1000e3}, resps: []int64{1, 1}}
	c := collectiveStats(stepsOf(t, rows), order[:1], phases, nil, own, nil, 0.95)[0]
	if want := 6*(100+900.0/9900*900) - 5*50; c.IdealCCT == nil || math.Abs(*c.IdealCCT-want) > 1e-6 {
		t.Errorf("ideal CCT %v µs, want %v (6 steps of a 4-member ring)", deref(c.IdealCCT), want)
	}
	if c.Iterations != 0 || c.Incomplete != 1 || c.Requested != 2 {
		t.Errorf("iterations %d, incomplete %d, requested %d: want 0, 1, 2", c.Iterations, c.Incomplete, c.Requested)
	}
}
