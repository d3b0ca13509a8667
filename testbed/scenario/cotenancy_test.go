package scenario

import (
	"strings"
	"testing"
)

// shared is a valid scenario whose phases name their transports: Homa's
// and TCP's clients on the same hosts.
const shared = `name: co
topology:
  kind: star
  hosts: 4
link:
  rate: 10Gbit
switch:
  ecn_threshold_pkts: 20
transports:
  - name: homa
  - name: tcp
    tcp: {congestion: dctcp}
phases:
  - name: rpcs
    transport: homa
    clients: [h2-h4]
    servers: [h1]
    sizes: fixed:1000
    load: 0.05
  - name: bulk
    transport: tcp-dctcp
    clients: [h2-h4]
    servers: [h1]
    sizes: fixed:100000
    load: 0.05
simulated: true
duration: 100ms
`

// TestSharedPlan: phases naming their transports make one experiment per
// sweep value, running both transports, and its parts each carry the
// phases of their transport on seeds of their own; host_qdisc sweeps
// without changing the traffic's seed.
func TestSharedPlan(t *testing.T) {
	plan := mustPlan(t, shared+"sweep:\n  - param: host_qdisc\n    values: [none, pacer]\n")
	if len(plan.Experiments) != 2 {
		t.Fatalf("got %d experiments, want 2 (one per host_qdisc value)", len(plan.Experiments))
	}
	for i, e := range plan.Experiments {
		if !e.Shared() || len(e.Transports) != 2 || e.Transport.Name != TransportHoma {
			t.Fatalf("experiment %d: transports %v, transport %q; want homa and tcp-dctcp at once", i, e.Transports, e.Transport.Name)
		}
		if !strings.Contains(e.Name, "homa+tcp") {
			t.Errorf("experiment %d is named %q; want the transports joined by +", i, e.Name)
		}
		for k, want := range []string{"rpcs", "bulk"} {
			p := e.Part(k)
			if p.Shared() || len(p.Scenario.Phases) != 1 || p.Scenario.Phases[0].Name != want {
				t.Errorf("experiment %d part %d: %d phases, shared %v; want phase %s alone", i, k, len(p.Scenario.Phases), p.Shared(), want)
			}
			if p.Seed != e.Seed+uint64(k)*partSeedStride {
				t.Errorf("part %d seed %d, experiment's %d", k, p.Seed, e.Seed)
			}
		}
	}
	if a, b := plan.Experiments[0], plan.Experiments[1]; a.Seed != b.Seed || a.Scenario.HostQdisc != HostQdiscNone || b.Scenario.HostQdisc != HostQdiscPacer {
		t.Errorf("host_qdisc sweep: seeds %d, %d (want equal), qdiscs %q, %q", a.Seed, b.Seed, a.Scenario.HostQdisc, b.Scenario.HostQdisc)
	}
}

// TestSharedTransportSwept: a sweep of a phase's transport compares
// transports beside the same co-tenant, an experiment per value, and uses
// every value's entry of the list; an entry none of the values names is
// still refused.
func TestSharedTransportSwept(t *testing.T) {
	text := strings.Replace(shared, "  - name: tcp\n", "  - name: uet\n  - name: tcp\n", 1) +
		"sweep:\n  - param: phases[rpcs].transport\n    values: [homa, uet]\n"
	plan := mustPlan(t, text)
	if len(plan.Experiments) != 2 {
		t.Fatalf("got %d experiments, want 2 (one per transport of the rpcs phase)", len(plan.Experiments))
	}
	for i, want := range []string{TransportHoma, TransportUET} {
		e := plan.Experiments[i]
		if len(e.Transports) != 2 || e.Transports[0].Name != want || e.Transports[1].Name != TransportTCP {
			t.Errorf("experiment %d (%s): transports %v, want %s beside tcp-dctcp", i, e.Name, e.Transports, want)
		}
	}
	if a, b := plan.Experiments[0], plan.Experiments[1]; a.Seed != b.Seed {
		t.Errorf("seeds %d and %d: want the transports compared on the same arrivals", a.Seed, b.Seed)
	}
	unused := strings.Replace(text, "  - name: homa\n", "  - name: homa\n  - name: phost\n", 1)
	if err := parseAndPlan("co.yaml", unused); err == nil || !strings.Contains(err.Error(), `co.yaml:11: transports[1]: transport "phost" carries no phase's traffic`) {
		t.Errorf("an entry no sweep value names: got %v, want it refused at its line", err)
	}
}

// TestSharedErrors: each mistake is reported at its file and line.
func TestSharedErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"unknown label", strings.Replace(shared, "transport: tcp-dctcp", "transport: tcp-cubic", 1),
			`co.yaml:21: phases[1].transport: expected a label of the transports list (homa, tcp-dctcp), got "tcp-cubic"`},
		{"mixed", strings.Replace(shared, "    transport: tcp-dctcp\n", "", 1),
			"co.yaml:20: phases[1]: expected transport: one of homa, tcp-dctcp, as phases[0] names its transport"},
		{"unused entry", strings.Replace(shared, "  - name: tcp\n", "  - name: pias\n  - name: tcp\n", 1),
			`co.yaml:11: transports[1]: transport "pias" carries no phase's traffic`},
		{"two engines", strings.Replace(strings.Replace(shared, "  - name: homa\n", "  - name: homa\n  - name: roce\n", 1), "transport: tcp-dctcp", "transport: roce", 1),
			`co.yaml:22: phases[1].transport: "roce" and "homa" (phases[0]) cannot share a host`},
		{"roce and tcp", strings.Replace(strings.Replace(shared, "  - name: homa\n", "  - name: roce\n", 1), "transport: homa", "transport: roce", 1),
			`co.yaml:21: phases[1].transport: "roce" and "tcp-dctcp" cannot share a host`},
		{"pfabric", strings.Replace(strings.Replace(shared, "  - name: homa\n", "  - name: pfabric\n", 1), "transport: homa", "transport: pfabric", 1),
			"co.yaml:15: phases[0].transport: pfabric cannot share the hosts"},
		{"qdisc and nic priorities", strings.Replace(shared, "tcp: {congestion: dctcp}", "tcp: {congestion: dctcp, nic_priorities: true}", 1) + "host_qdisc: pacer\n",
			"co.yaml:12: transports[1].tcp.nic_priorities: host_qdisc \"pacer\" stands in front of a NIC with one queue"},
		{"bad qdisc", shared + "host_qdisc: fq\n",
			`co.yaml:28: host_qdisc: expected one of none, pacer, got "fq"`},
		{"emulated pacer on tbf", emulated(shared) + "host_qdisc: pacer\n",
			`co.yaml:7: link.shaper: host_qdisc "pacer" in emulation divides the host link's htb shaper into classes for Homa and TCP: use link.shaper: htb (got "tbf")`},
	} {
		// Every mistake is one in emulation too, at the same line.
		for _, mode := range []struct {
			name string
			text func(string) string
		}{{"simulated", func(s string) string { return s }}, {"emulated", emulated}} {
			if strings.HasPrefix(tc.name, "emulated") && mode.name == "simulated" {
				continue
			}
			if tc.name == "qdisc and nic priorities" && mode.name == "emulated" {
				continue // nic_priorities is the simulator's alone: another error
			}
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				text := mode.text(tc.text)
				if tc.name == "emulated pacer on tbf" {
					text = strings.Replace(text, "  rate: 100Mbit\n", "  rate: 100Mbit\n  shaper: tbf\n", 1)
				}
				err := parseAndPlan("co.yaml", text)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v\nwant an error containing %q", err, tc.want)
				}
			})
		}
	}
}

// emulated is scenario text s run in emulation: not simulated, at a rate
// the emulation shapes, on the same lines.
func emulated(s string) string {
	s = strings.Replace(s, "simulated: true\n", "simulated: false\n", 1)
	return strings.Replace(s, "  rate: 10Gbit\n", "  rate: 100Mbit\n", 1)
}

// TestSharedEmulated: the shared scenario and host_qdisc pacer are valid
// in emulation on the htb shaper.
func TestSharedEmulated(t *testing.T) {
	for _, text := range []string{emulated(shared), emulated(shared) + "host_qdisc: pacer\n"} {
		if err := parseAndPlan("co.yaml", text); err != nil {
			t.Errorf("%v\n%s", err, text)
		}
	}
}

// TestSharedClients: a host may be a client once per transport, not
// twice on one.
func TestSharedClients(t *testing.T) {
	if err := parseAndPlan("co.yaml", shared); err != nil {
		t.Fatalf("one client workload per transport on each host: %v", err)
	}
	two := strings.Replace(shared, "transport: tcp-dctcp", "transport: homa", 1)
	two = strings.Replace(two, "  - name: tcp\n    tcp: {congestion: dctcp}\n", "", 1)
	if err := parseAndPlan("co.yaml", two); err == nil || !strings.Contains(err.Error(), "already a client") {
		t.Fatalf("two homa phases on the same clients: got %v, want already a client", err)
	}
}

// TestSharedOnly: --only one transport of a shared scenario runs its part
// of each experiment alone, with the phases, seed and parameters it has
// beside the other, named after it.
func TestSharedOnly(t *testing.T) {
	text := shared + "sweep:\n  - param: host_qdisc\n    values: [none, pacer]\n"
	whole := mustPlan(t, text)
	for k, name := range []string{"homa", "tcp-dctcp"} {
		t.Run(name, func(t *testing.T) {
			plan := mustPlan(t, text)
			if err := plan.Only([]string{name}); err != nil {
				t.Fatal(err)
			}
			if len(plan.Experiments) != 2 {
				t.Fatalf("got %d experiments, want 2", len(plan.Experiments))
			}
			for i, e := range plan.Experiments {
				w := whole.Experiments[i].Part(k)
				if e.Shared() || e.Transport.Config() != name || e.Seed != w.Seed || len(e.Scenario.Phases) != 1 ||
					e.Scenario.Phases[0].Name != w.Scenario.Phases[0].Name || e.Scenario.HostQdisc != w.Scenario.HostQdisc {
					t.Errorf("experiment %d: transport %s, seed %d, phases %d, qdisc %s; want %s alone with part %d's seed %d and phase %s",
						i, e.Transport.Config(), e.Seed, len(e.Scenario.Phases), e.Scenario.HostQdisc, name, k, w.Seed, w.Scenario.Phases[0].Name)
				}
				if want := "co-" + e.Transport.ID() + "-host_qdisc" + e.Scenario.HostQdisc; e.Name != want {
					t.Errorf("experiment %d named %q, want %q", i, e.Name, want)
				}
			}
			if len(plan.Base.Transports) != 1 || len(plan.Base.Phases) != 1 {
				t.Errorf("base: %d transports, %d phases; want one of each", len(plan.Base.Transports), len(plan.Base.Phases))
			}
		})
	}
}
