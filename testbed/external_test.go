package testbed

import (
	"context"
	"crypto/tls"
	fabdesc "github.com/homatb/homatb/internal/fabric"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/internal/runcerts"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
	"github.com/homatb/homatb/testbed/topo"
)

// externalLifecycle is lifecycleScenario's traffic on three machines.
func externalLifecycle(switches, certs string) string {
	return strings.Replace(lifecycleScenario, "topology: {kind: star, hosts: 3}", `topology:
  kind: external
  external:
    certs: "`+certs+`"
    hosts:
      - {name: h1, address: 10.0.0.1, mac: "02:00:00:00:00:01", agent: "192.168.1.1:7100"}
      - {name: h2, address: 10.0.0.2, mac: "02:00:00:00:00:02", agent: "192.168.1.2:7100"}
      - {name: h3, address: 10.0.0.3, mac: "02:00:00:00:00:03", agent: "192.168.1.3:7100"}
`+switches, 1)
}

// TestExternalLifecycle drives runs on an external topology through the
// lifecycle's fakes: no network is started, the switch is programmed at
// its own address (or not at all when set by hand), every agent is dialled
// at its control address with the run's credentials, and the experiments
// are run and recorded as on an emulated network.
func TestExternalLifecycle(t *testing.T) {
	certs := t.TempDir()
	if err := runcerts.Generate(certs, runcerts.Options{Hosts: []string{"192.168.1.1", "192.168.1.2", "192.168.1.3"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, switches string
		want, absent   []string
		note           string
	}{
		{"p4 switch", "    switches:\n      - {name: tor, p4runtime: \"192.168.1.9:9559\", device_id: 1, target: stratum, ports: {h1: 1, h2: 2, h3: 3}}\n",
			[]string{"program tor@192.168.1.9:9559 embedded", "dial-remote h1 192.168.1.1:7100 tls", "stop h2 lc-homa *"},
			[]string{"network start", "build *", "dial h1"}, "switch tor (stratum) is not on this machine"},
		{"set by hand", "",
			[]string{"dial-remote h3 192.168.1.3:7100 tls", "stop h2 lc-tcp *"},
			[]string{"network start", "program*"}, "configured by hand"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlan(t, externalLifecycle(tc.switches, certs))
			j := newJournal()
			p := fakeParts(j)
			p.program = func(_ context.Context, n *topo.Network, fd *fabdesc.Fabric, s *scenario.Scenario, _ string, _ *slog.Logger) (fabric, error) {
				ct, err := switches.ControllerTopology(n, fd, s, "")
				if err != nil {
					return nil, err
				}
				for _, sw := range ct.Switches {
					_ = j.add("program %s@%s %s", sw.Name, sw.Address, sw.Target)
				}
				return &fakeFabric{j: j}, nil
			}
			p.dialRemote = func(_ context.Context, host, addr string, cfg *tls.Config) (agentAPI, error) {
				mode := "plain"
				if cfg != nil && len(cfg.Certificates) == 1 {
					mode = "tls"
				}
				_ = j.add("dial-remote %s %s %s", host, addr, mode)
				return &fakeAgent{j: j, host: host}, nil
			}
			dir := filepath.Join(t.TempDir(), "run")
			if _, err := runWith(t.Context(), plan, Options{RunDir: dir, Registry: filepath.Join(t.TempDir(), "reg"), NoReport: true}, p); err != nil {
				t.Fatalf("run: %v", err)
			}
			calls := j.list()
			for _, w := range tc.want {
				if find(calls, w) < 0 {
					t.Errorf("no call %q in %v", w, calls)
				}
			}
			for _, a := range tc.absent {
				if i := find(calls, a); i >= 0 {
					t.Errorf("call %q made", calls[i])
				}
			}
			m := readManifest(t, dir)
			if m.Incomplete || len(m.Experiments) != 2 {
				t.Fatalf("run incomplete %v with %d experiments, want 2 complete", m.Incomplete, len(m.Experiments))
			}
			for _, e := range m.Experiments {
				checkBooks(t, j, e, false)
			}
			if !slices.ContainsFunc(m.Fidelity, func(s string) bool { return strings.Contains(s, tc.note) }) {
				t.Errorf("fidelity %q lacks %q", m.Fidelity, tc.note)
			}
		})
	}
}

// mustPlan parses a scenario and expands its plan, or fails the test.
func mustPlan(t *testing.T, text string) *scenario.Plan {
	t.Helper()
	src, err := scenario.Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}
