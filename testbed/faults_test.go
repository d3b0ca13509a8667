package testbed

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/faults"
	"github.com/homatb/homatb/testbed/scenario"
)

// TestLifecycleFaults runs the lifecycle scenario with faults through the
// fakes: loss is set on h1's port before the clients start and cleared
// after they stop, the link goes down in the measurement, h2's agent is
// killed (its exit does not end the run) and accounted for, and it comes
// back for the next experiment only with restart.
func TestLifecycleFaults(t *testing.T) {
	const exp1, exp2 = "lc-homa", "lc-tcp"
	for _, restart := range []bool{true, false} {
		t.Run(map[bool]string{true: "restart", false: "no restart"}[restart], func(t *testing.T) {
			// Long enough for a restarted client to get some of the
			// measurement (it starts 200 ms after its restart).
			text := strings.Replace(lifecycleScenario, "duration: 40ms", "duration: 500ms", 1) + `faults:
  - {link: h1, loss: 0.1, direction: to_host}
  - {link: h1, down: {at: 5ms, for: 10ms}}
  - {link: h2, kill_agent: {at: 20ms}, restart: ` + map[bool]string{true: "true", false: "false"}[restart] + "}\n"
			plan := mustPlan(t, text)
			j := newJournal()
			dir := runFakes(t, plan, j)
			calls := j.list()
			part := segment(calls, exp1)
			for _, o := range [][2]string{
				{"fault s1 1 drop_prob=0.1 direction=egress", "start h3 " + exp1},
				{"start h3 " + exp1, "fault s1 1 down_for=10ms"},
				{"fault s1 1 down_for=10ms", "status h2 " + exp1},
				{"status h2 " + exp1, "signal agent-h2 9"},
				{"signal agent-h2 9", "stop h3 " + exp1 + " *"},
				{"stop h3 " + exp1 + " *", "fault s1 1 drop_prob=0 direction=egress down_for=0s"},
				{"fault s1 1 drop_prob=0 direction=egress down_for=0s", "fetch h3 " + exp1},
			} {
				assertBefore(t, part, o[0], o[1])
			}
			if restart {
				// Restarted at once and given the rest of the experiment.
				after := part[find(part, "signal agent-h2 9"):]
				for _, o := range [][2]string{
					{"popen agent-h2", "dial h2"},
					{"dial h2", "configure h2 " + exp1},
					{"configure h2 " + exp1, "start h2 " + exp1},
					{"start h2 " + exp1, "stop h2 " + exp1 + " *"},
					{"stop h2 " + exp1 + " *", "fetch h2 " + exp1},
				} {
					assertBefore(t, after, o[0], o[1])
				}
				if find(calls, "configure h2 "+exp2) < 0 {
					t.Error("restarted agent not configured for the next experiment")
				}
				assertBefore(t, segment(calls, exp2), "status h2 "+exp2, "signal agent-h2 9")
			} else {
				for _, absent := range []string{"stop h2 " + exp1 + " *", "fetch h2 " + exp1} {
					if i := find(part, absent); i >= 0 {
						t.Errorf("killed agent called: %q", part[i])
					}
				}
				for _, absent := range []string{"configure h2 " + exp2, "start h2 " + exp2} {
					if i := find(calls, absent); i >= 0 {
						t.Errorf("agent killed without restart called: %q", calls[i])
					}
				}
			}

			m := readManifest(t, dir)
			if m.Incomplete || len(m.Experiments) != 2 {
				t.Fatalf("incomplete %v (%s), %d experiments", m.Incomplete, m.Error, len(m.Experiments))
			}
			for i, e := range m.Experiments {
				b := e.RPCs
				if b.Issued != b.Completed+b.Failed+b.InFlight {
					t.Errorf("%s: books do not balance: %+v", e.Name, b)
				}
				// h3 reports 10 issued, 7 completed, 2 failed, 1 in flight;
				// h2's last Status the same, with no records written.
				want := rundir.Books{Issued: 20, Completed: 7, Failed: 12, InFlight: 1}
				switch {
				case restart:
					// and the restarted h2 the same again.
					want = rundir.Books{Issued: 30, Completed: 14, Failed: 14, InFlight: 2}
				case i == 1:
					want = rundir.Books{Issued: 10, Completed: 7, Failed: 2, InFlight: 1}
				}
				if b != want {
					t.Errorf("%s: books %+v, want %+v", e.Name, b, want)
				}
				fid := strings.Join(e.Fidelity, "\n")
				for _, s := range []string{"fault injected: loss 0.1 towards the host on h1's link", "fault injected: h1's link down at 5ms"} {
					if !strings.Contains(fid, s) {
						t.Errorf("%s: fidelity lacks %q:\n%s", e.Name, s, fid)
					}
				}
				killed := `agent h2 killed by fault injection at 20ms into the measurement: rpcs.csv has the 0 RPCs it had recorded (0 completed, 0 failed) and 10 more counted failed: its last Status before the kill had issued 10 (7 completed, 2 failed, 1 in flight), so 9 had finished without a record yet (reason "agent killed by fault injection: finished, record lost") and 1 were in flight (reason "agent killed by fault injection")`
				if i == 1 && !restart {
					killed = "agent h2 is down (killed by fault injection in an earlier experiment, restart: false): it issues none of its RPCs"
				}
				if !strings.Contains(fid, killed) {
					t.Errorf("%s: fidelity lacks %q:\n%s", e.Name, killed, fid)
				}
				if restarted := strings.Contains(fid, "; it was restarted "); restarted != restart {
					t.Errorf("%s: fidelity says restarted %v, want %v:\n%s", e.Name, restarted, restart, fid)
				}
			}
			lost := killedRows(t, filepath.Join(dir, "rpcs.csv"))
			if lost[exp1] != 10 || (restart && lost[exp2] != 10) || (!restart && lost[exp2] != 0) {
				t.Errorf("rows failed as killed by experiment: %v", lost)
			}
		})
	}
}

// killedRows counts rpcs.csv's rows of RPCs lost with the killed agent h2.
func killedRows(t *testing.T, path string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, rec := range readRPCs(t, path, "") {
		killed := rec.Error == faults.AgentKilledReason || rec.Error == faults.AgentKilledUnrecordedReason
		if killed && rec.Status == rundir.StatusFailed && rec.Client == "h2" {
			out[rec.Experiment]++
		}
	}
	return out
}

// TestLifecycleAbandonedRestart: the killed agent's restart within the
// experiment does not answer; the orchestrator kills the process it gave up
// on, so that the restart before the next experiment can start it again
// (the runner refuses to start a name still running).
func TestLifecycleAbandonedRestart(t *testing.T) {
	const exp1, exp2 = "lc-homa", "lc-tcp"
	text := strings.Replace(lifecycleScenario, "duration: 40ms", "duration: 500ms", 1) + `faults:
  - {link: h2, kill_agent: {at: 20ms}, restart: true}
`
	plan := mustPlan(t, text)
	j := newJournal()
	var dials int
	j.fault = func(call string) error {
		if call == "dial h2" {
			dials++
			if dials == 2 { // the first restart, within exp1
				return errors.New("agent did not answer")
			}
		}
		return nil
	}
	dir := runFakes(t, plan, j)
	calls := j.list()
	part := segment(calls, exp1)
	kill := find(part, "signal agent-h2 9")
	if kill < 0 {
		t.Fatalf("h2 not killed in %s: %v", exp1, part)
	}
	// Restarted, not answering, and stopped: popen, dial, signal in turn.
	after := part[kill+1:]
	i := find(after, "popen agent-h2")
	if i < 0 || find(after[i:], "dial h2") < 0 || find(after[i+find(after[i:], "dial h2"):], "signal agent-h2 9") < 0 {
		t.Errorf("the abandoned restart was not stopped after its dial failed:\n%s", strings.Join(after, "\n"))
	}
	if find(calls, "configure h2 "+exp2) < 0 {
		t.Errorf("h2 not started again for %s: %v", exp2, calls)
	}
	m := readManifest(t, dir)
	if m.Incomplete || len(m.Experiments) != 2 {
		t.Fatalf("incomplete %v (%s), %d experiments", m.Incomplete, m.Error, len(m.Experiments))
	}
	fid := strings.Join(m.Experiments[0].Fidelity, "\n")
	if !strings.Contains(fid, "it could not be restarted (agent did not answer") {
		t.Errorf("%s: fidelity lacks the failed restart:\n%s", exp1, fid)
	}
	if strings.Contains(fid, "already running") {
		t.Errorf("%s: restart found the abandoned agent running:\n%s", exp1, fid)
	}
}

// runFakes runs plan through the fakes, which note their calls in j, and
// returns the run directory; the run must succeed.
func runFakes(t *testing.T, plan *scenario.Plan, j *journal) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	if _, err := runWith(t.Context(), plan, Options{RunDir: dir, Registry: filepath.Join(base, "reg"), NoReport: true, Binary: "/bin/false"}, fakeParts(j)); err != nil {
		t.Fatalf("run: %v", err)
	}
	return dir
}
