package scenario

import (
	"errors"
	"strings"
	"testing"
)

// fatTree is a valid emulated fat tree (k=4: 16 hosts, 20 switches) that
// the cases below break in one place.
const fatTree = `name: ft
topology:
  kind: fat-tree
  k: 4
  load_balancing: spray
link:
  rate: 100Mbit
transports:
  - name: homa
phases:
  - name: bulk
    clients: [h1-h8]
    servers: [h9-h16]
    sizes: fixed:1000
    arrivals: closed
    max_outstanding: 1
faults:
  - link: e1-a1
    down: {at: 100ms, for: 100ms}
duration: 2s
`

func TestClosScenarios(t *testing.T) {
	if err := parseAndPlan("ft.yaml", fatTree); err != nil {
		t.Fatalf("the fat tree: %v", err)
	}
	rail := strings.Replace(fatTree, "  kind: fat-tree\n  k: 4\n", "  kind: rail\n  rails: 4\n  servers: 2\n  groups: 2\n  spines: 2\n", 1)
	rail = strings.Replace(rail, "e1-a1", "l3-p2", 1)
	if err := parseAndPlan("rail.yaml", rail); err != nil {
		t.Fatalf("the rail fabric: %v", err)
	}
	if got := (Topology{Kind: KindFatTree, K: 16}).HostNames(); len(got) != 1024 || got[1023] != "h1024" {
		t.Errorf("k=16 hosts: %d, last %s", len(got), got[len(got)-1])
	}
	if ns, sw, ag := (Topology{Kind: KindFatTree, K: 4}).EmulationNeeds(); ns != 16 || sw != 20 || ag != 16 {
		t.Errorf("k=4 needs %d namespaces, %d switches, %d agents; want 16, 20, 16", ns, sw, ag)
	}
}

func TestBadClosScenarios(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		line           int
		field, msg     string
	}{
		{"odd k", "k: 4", "k: 5", 4, "topology.k", "even k from 2 to 32"},
		{"k beyond the selector", "k: 4", "k: 34", 4, "topology.k", "selector groups hold 16"},
		{"too big to emulate", "k: 4", "k: 8", 2, "topology", "needs 128 namespaces (one per host), 80 switch processes and 128 agents"},
		{"edge ports", "k: 4", "k: 4\n  hosts_per_edge: 62", 5, "topology.hosts_per_edge", "expected 1 to 61 hosts per edge"},
		{"leaf-spine key", "k: 4", "k: 4\n  leaves: 2", 3, "topology.kind", "belong to kinds star and leaf-spine"},
		{"rail key on a fat tree", "k: 4", "k: 4\n  rails: 2", 3, "topology.kind", "belong to kind rail"},
		{"no such link", "e1-a1", "e1-a3", 18, "faults[0].link", "e.g. e1-a1 (edge-aggregation) or a8-c4 (aggregation-core); e1 joins a1, a2, got"},
		{"a host beyond the fat tree", "e1-a1", "h17", 18, "faults[0].link", `(h1 to h16) or a link between two of its switches, e.g. e1-a1, got "h17"`},
		{"no such switch", "e1-a1", "e1-p1", 18, "faults[0].link", "expected a link of the fat-tree"},
		{"bad balancing", "load_balancing: spray", "load_balancing: flowlet", 5, "topology.load_balancing", `"spray"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(fatTree, tc.from, tc.to, 1)
			if text == fatTree {
				t.Fatalf("%q not in the scenario", tc.from)
			}
			wantOneError(t, text, tc.line, tc.field, tc.msg)
		})
	}
}

// TestClosSizesInTheSimulator: the simulator takes a fat tree of 8,192
// hosts (k=32), which emulation refuses.
func TestClosSizesInTheSimulator(t *testing.T) {
	text := strings.Replace(strings.Replace(fatTree, "k: 4", "k: 32", 1), "rate: 100Mbit", "rate: 100Gbit", 1)
	src, err := Parse("big.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{Simulate: true, SizeSpec: func(string) (SizeStats, error) { return SizeStats{Mean: 1000, Max: 1000}, nil }})
	if err != nil {
		t.Fatalf("k=32 simulated: %v", err)
	}
	if n := len(plan.Base.Topology.HostNames()); n != 8192 {
		t.Errorf("k=32: %d hosts, want 8192", n)
	}
	_, err = src.Plan(Options{SizeSpec: func(string) (SizeStats, error) { return SizeStats{Mean: 1000, Max: 1000}, nil }})
	var es Errors
	if !errors.As(err, &es) || !strings.Contains(err.Error(), "8192 namespaces") {
		t.Errorf("k=32 emulated: %v, want a refusal naming 8192 namespaces", err)
	}
}

// TestDescribeClos: the dry run's topology line says what emulating a fat
// tree takes, and only that it is simulated when it is.
func TestDescribeClos(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
		want string
	}{
		{"emulated", Options{}, "20 switches (8 edge, 8 aggregation, 4 core) (emulated: 16 namespaces, 20 switch processes, 16 agents)"},
		{"simulated", Options{Simulate: true}, "20 switches (8 edge, 8 aggregation, 4 core) (simulated)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := mustPlanWith(t, fatTree, tc.opt).Describe(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("dry run %q: want %q", b.String(), tc.want)
			}
		})
	}
}
