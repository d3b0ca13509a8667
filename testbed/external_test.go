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
	"github.com/homatb/homatb/runfmt"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
	"github.com/homatb/homatb/testbed/topo"
)

// TestClockNote: hosts on several machines get the bound of their clocks'
// distance (largest |offset| + bound) and the anatomy's caveat; hosts on
// one machine (namespaces) are said to share its clock.
func TestClockNote(t *testing.T) {
	tests := []struct {
		name  string
		hosts map[string]runfmt.HostMachine
		want  []string
	}{
		{"namespaces of one machine", map[string]runfmt.HostMachine{
			"h1": {Hostname: "vm", Kernel: "6.1", ClockOffsetUs: 3, ClockBoundUs: 40},
			"h2": {Hostname: "vm", Kernel: "6.1", ClockOffsetUs: -5, ClockBoundUs: 50},
		}, []string{"share one machine's clock", "within 55 µs"}},
		{"two machines", map[string]runfmt.HostMachine{
			"h1": {Hostname: "node1", Kernel: "6.1", ClockOffsetUs: 3, ClockBoundUs: 40},
			"h2": {Hostname: "node2", Kernel: "6.1", ClockOffsetUs: -900, ClockBoundUs: 100},
		}, []string{"2 machines", "within 1000 µs", "largest on h2", "latency anatomy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := clockNote(tc.hosts)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("note %q lacks %q", got, w)
				}
			}
		})
	}
}

// TestMachinesNote: one line for the fidelity box, alike machines together.
func TestMachinesNote(t *testing.T) {
	got := machinesNote(map[string]runfmt.HostMachine{
		"h1": {Hostname: "node1", CPUs: 32, CPUModel: "EPYC 7543", Kernel: "6.1", NICDriver: "mlx5_core", NICSpeedMbps: 100000},
		"h2": {Hostname: "node2", CPUs: 32, CPUModel: "EPYC 7543", Kernel: "6.1", NICDriver: "mlx5_core", NICSpeedMbps: 100000},
		"h3": {Hostname: "node3", CPUs: 16, CPUModel: "Xeon", Kernel: "6.8", NICDriver: "ice"},
	})
	want := "machines (manifest.json has each): h1@node1 h2@node2: 32 x EPYC 7543, kernel 6.1, NIC mlx5_core at 100000 Mbit/s; h3@node3: 16 x Xeon, kernel 6.8, NIC ice"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

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
