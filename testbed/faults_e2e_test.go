package testbed

import (
	"strings"
	"testing"
	"time"
)

// faultsScenario is three hosts on Homa, h2 and h3 each keeping two 50 KB
// requests outstanding to h1, echoed (so h1 sends as much back), with the
// faults given appended. The measurement lasts 3 s so that an agent killed
// at 200 ms can be restarted within it on a loaded machine (with 1 s the
// restart once ran out of measurement in CI).
const faultsScenario = `name: faults
topology: {kind: star, hosts: 3}
link: {rate: 100Mbit}
transports: [{name: homa}]
phases:
  - {name: echo, clients: [h2, h3], servers: [h1], sizes: "fixed:50000", arrivals: closed, max_outstanding: 2}
duration: 3s
drain: 2s
calibration: {skip: true}
faults:
`

// TestFaultsEndToEnd runs small Homa scenarios with faults through the
// homatb binary: with 10% loss on h1's link every RPC completes and the
// switch counts the injected drops apart; with the link down for 500 ms
// every RPC completes or fails with a reason; with h3's agent killed and
// restarted the run completes and its RPCs are accounted for.
func TestFaultsEndToEnd(t *testing.T) {
	needRunPrereqs(t)
	bin := buildHomatb(t)
	tests := []struct {
		name   string
		faults string
		check  func(t *testing.T, s summaryFile, m *Manifest)
	}{
		{"loss", "  - {link: h1, loss: 0.1}\n", func(t *testing.T, s summaryFile, _ *Manifest) {
			e := s.Experiments[0]
			if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued || e.RPCs.Failed != 0 {
				t.Errorf("with 10%% loss: issued %d, completed %d, failed %d %v; want every RPC completed",
					e.RPCs.Issued, e.RPCs.Completed, e.RPCs.Failed, e.RPCs.Failures)
			}
			if e.Switch.FaultDrops == 0 || e.Switch.FaultDropsByPort["s1/1"] != e.Switch.FaultDrops {
				t.Errorf("fault drops %d by port %v; want all on s1/1 (h1's port)", e.Switch.FaultDrops, e.Switch.FaultDropsByPort)
			}
		}},
		{"down", "  - {link: h1, down: {at: 300ms, for: 500ms}}\n", func(t *testing.T, s summaryFile, _ *Manifest) {
			e := s.Experiments[0]
			reasons := int64(0)
			for k, v := range e.RPCs.Failures {
				if k == "" || k == "unfinished" {
					t.Errorf("%d RPCs failed without a reason (%q)", v, k)
				}
				reasons += v
			}
			if e.RPCs.Issued == 0 || e.RPCs.Completed+e.RPCs.Failed != e.RPCs.Issued || reasons != e.RPCs.Failed {
				t.Errorf("link down: issued %d, completed %d, failed %d %v", e.RPCs.Issued, e.RPCs.Completed, e.RPCs.Failed, e.RPCs.Failures)
			}
			if e.Switch.FaultDrops == 0 {
				t.Error("no fault drops while the link was down")
			}
		}},
		{"kill", "  - {link: h3, kill_agent: {at: 200ms}, restart: true}\n", func(t *testing.T, s summaryFile, m *Manifest) {
			e := s.Experiments[0]
			if e.RPCs.Issued == 0 || e.RPCs.Completed+e.RPCs.Failed != e.RPCs.Issued {
				t.Errorf("agent killed: issued %d, completed %d, failed %d %v", e.RPCs.Issued, e.RPCs.Completed, e.RPCs.Failed, e.RPCs.Failures)
			}
			b := m.Experiments[0].RPCs
			if b.Issued != b.Completed+b.Failed+b.InFlight {
				t.Errorf("manifest books do not balance: %+v", b)
			}
			fid := strings.Join(m.Experiments[0].Fidelity, "\n")
			if !strings.Contains(fid, "agent h3 killed by fault injection at 200ms") || !strings.Contains(fid, "; it was restarted ") {
				t.Errorf("no fidelity warning for the killed and restarted agent: %q", m.Experiments[0].Fidelity)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			dir, out, err := runScenarioText(t, bin, faultsScenario+tc.faults, 60*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			m := readManifest(t, dir)
			t.Logf("%s: run took %v\n%s", tc.name, time.Since(start).Round(time.Millisecond), out.String())
			s := readSummary(t, dir, out)
			if len(s.Experiments) != 1 {
				t.Fatalf("summary.json: %d experiments, want 1", len(s.Experiments))
			}
			t.Logf("books %+v, fault drops %d %v", s.Experiments[0].RPCs, s.Experiments[0].Switch.FaultDrops, s.Experiments[0].Switch.FaultDropsByPort)
			tc.check(t, s, m)
		})
	}
}
