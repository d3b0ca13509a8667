package simulate

import (
	"slices"
	"testing"

	"github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
)

// TestWorkloadCutoffsOncePerQuestion: a transport's cutoffs from its
// workload are computed once a run for each configuration that asks (a
// graduated rule's answer costs a second; every calibration size and
// experiment asks), each caller gets its own copy, and a configuration
// that differs (here the calibration's unscheduled bytes) gets its own
// answer.
func TestWorkloadCutoffsOncePerQuestion(t *testing.T) {
	r := &Network{fab: fabric.New(10_000_000_000, 1500, 512)}
	tr := scenario.Transport{Name: scenario.TransportHoma, CutoffsFrom: "w4,max=1000000", CutoffLevels: 4}
	tr.Homa.Config.Priorities, tr.Homa.Config.Graduated = 8, true
	first := r.homaConfig(tr)
	if len(first.UnschedCutoffs) == 0 || !first.SharedCutoffs {
		t.Fatalf("no cutoffs from the workload: %v", first.UnschedCutoffs)
	}
	first.UnschedCutoffs[1] = 0 // an engine's own copy to change
	again := r.homaConfig(tr)
	if len(r.cutoffs) != 1 {
		t.Errorf("%d answers kept for one question, want 1", len(r.cutoffs))
	}
	if again.UnschedCutoffs[1] == 0 {
		t.Errorf("the second caller got the first caller's changed copy: %v", again.UnschedCutoffs)
	}
	r.calib = map[string]rundir.Calibration{tr.Name: {UnschedBytes: 20_000}}
	other := r.homaConfig(tr)
	if len(r.cutoffs) != 2 {
		t.Errorf("%d answers kept for two questions, want 2", len(r.cutoffs))
	}
	if slices.Equal(other.UnschedCutoffs, again.UnschedCutoffs) {
		t.Errorf("20,000 unscheduled bytes gave the cutoffs of the default: %v", other.UnschedCutoffs)
	}
}
