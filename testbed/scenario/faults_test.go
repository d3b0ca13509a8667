package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFaults reads faults lists appended to the good scenario (whose last
// line is 19, so the list starts at line 20): good ones plan and keep their
// values, bad ones fail with the file, line and field of the mistake.
func TestFaults(t *testing.T) {
	tests := []struct {
		name   string
		faults string
		// line, field and msg of the one error; line 0 means valid.
		line  int
		field string
		msg   string
	}{
		{name: "loss", faults: "  - {link: h1, loss: 0.1}\n"},
		{name: "loss one way", faults: "  - {link: h2, loss: 0.5, direction: to_host}\n  - {link: h3, loss: 1, direction: from_host}\n"},
		{name: "down", faults: "  - link: h1\n    down: {at: 1s, for: 500ms}\n"},
		{name: "kill and restart", faults: "  - {link: h2, kill_agent: {at: 1s}, restart: true}\n  - {link: h1, loss: 0.01}\n"},
		{name: "two downs on a link", faults: "  - {link: h1, down: {at: 0s, for: 100ms}}\n  - {link: h1, down: {at: 1s, for: 100ms}}\n"},

		{"unknown host", "  - {link: h9, loss: 0.1}\n", 21, "faults[0].link", `expected a host whose link the fault is on (h1 to h4), got "h9"`},
		{"switch link on a star", "  - {link: l1-p1, loss: 0.1}\n", 21, "faults[0].link", `a link between switches ("l1-p1") needs a leaf-spine, fat-tree or rail topology, not star`},
		{"no action", "  - {link: h1}\n", 21, "faults[0]", "exactly one of loss, down or kill_agent, got none"},
		{"two actions", "  - link: h1\n    loss: 0.1\n    down: {at: 1s, for: 1s}\n", 23, "faults[0].down", "got loss and down"},
		{"loss zero", "  - {link: h1, loss: 0}\n", 21, "faults[0].loss", "above 0 and at most 1, got 0"},
		{"loss above one", "  - link: h1\n    loss: 1.5\n", 22, "faults[0].loss", "got 1.5"},
		{"loss not a number", "  - link: h1\n    loss: lots\n", 22, "faults[0].loss", "expected a number"},
		{"bad direction", "  - link: h1\n    loss: 0.1\n    direction: up\n", 23, "faults[0].direction", `"both", "to_host" or "from_host", got "up"`},
		{"direction without loss", "  - link: h1\n    down: {at: 1s, for: 1s}\n    direction: to_host\n", 23, "faults[0].direction", "loss only"},
		{"two losses on a link", "  - {link: h1, loss: 0.1}\n  - {link: h1, loss: 0.2}\n", 22, "faults[1].loss", "already has a loss fault (faults[0])"},
		{"down after the end", "  - link: h1\n    down:\n      at: 2s\n      for: 1s\n", 23, "faults[0].down.at", "below the measurement's duration (2s), got 2s"},
		{"down past the end", "  - link: h1\n    down:\n      at: 1s\n      for: 1500ms\n", 24, "faults[0].down.for", "down until 2.5s"},
		{"down for nothing", "  - link: h1\n    down: {at: 1s}\n", 22, "faults[0].down.for", "positive time"},
		{"down at a bad time", "  - link: h1\n    down:\n      at: soon\n      for: 1s\n", 23, "faults[0].down.at", "expected a duration"},
		{"unknown down key", "  - link: h1\n    down: {at: 1s, until: 2s}\n", 22, "faults[0].down.until", `unknown field "until"`},
		{"kill too late", "  - link: h2\n    kill_agent: {at: 3s}\n", 22, "faults[0].kill_agent.at", "got 3s"},
		{"kill twice", "  - {link: h2, kill_agent: {at: 1s}}\n  - {link: h2, kill_agent: {at: 1500ms}}\n", 22, "faults[1].kill_agent", "already killed by faults[0]"},
		{"restart without kill", "  - link: h2\n    loss: 0.1\n    restart: true\n", 23, "faults[0].restart", "kill_agent only"},
		{"restart not a bool", "  - link: h2\n    kill_agent: {at: 1s}\n    restart: maybe\n", 23, "faults[0].restart", "true or false"},
		{"unknown fault key", "  - link: h2\n    los: 0.1\n", 22, "faults[0].los", `unknown field "los"`},
		{"not a list", "  link: h1\n", 21, "faults", "expected a list"},
		{name: "down on bmv2", faults: "  - {link: h1, down: {at: 1s, for: 500ms}}\nswitch: {target: bmv2}\n"},
		{"loss on bmv2", "  - {link: h1, loss: 0.1}\nswitch: {target: bmv2}\n", 21, "faults[0].loss", `switch.target "bmv2" supports down only (BMv2 has no fault injector); loss needs target "embedded"`},
		{"kill on bmv2", "  - link: h2\n    kill_agent: {at: 1s}\nswitch: {target: bmv2}\n", 22, "faults[0].kill_agent", `kill_agent needs target "embedded"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := good + "faults:\n" + tc.faults
			err := parseAndPlan("f.yaml", text)
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("valid faults rejected: %v", err)
				}
				return
			}
			var es Errors
			if !errors.As(err, &es) || len(es) != 1 {
				t.Fatalf("want exactly one *Error, got %T: %v", err, err)
			}
			e := es[0]
			if e.File != "f.yaml" || e.Line != tc.line || e.Field != tc.field || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("got %s\nwant f.yaml:%d: %s: ...%s...", e, tc.line, tc.field, tc.msg)
			}
		})
	}
}

// TestFaultValues checks what a valid list decodes to, defaults included.
func TestFaultValues(t *testing.T) {
	text := good + "faults:\n  - {link: h1, loss: 0.1}\n  - {link: h2, down: {at: 1s, for: 500ms}}\n  - {link: h3, kill_agent: {at: 1500ms}, restart: true}\n  - {link: h4, kill_agent: {at: 0s}}\n"
	src, err := Parse("v.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range plan.Experiments {
		fs := e.Scenario.Faults
		if len(fs) != 4 {
			t.Fatalf("%s: %d faults, want every experiment to have all 4", e.Name, len(fs))
		}
		if fs[0].Kind() != "loss" || *fs[0].Loss != 0.1 || fs[0].LossDirection() != DirectionBoth {
			t.Errorf("faults[0] = %+v", fs[0])
		}
		if fs[1].Kind() != "down" || fs[1].Down.At.D() != time.Second || fs[1].Down.For.D() != 500*time.Millisecond {
			t.Errorf("faults[1] = %+v", fs[1])
		}
		if fs[2].Kind() != "kill_agent" || fs[2].KillAgent.At.D() != 1500*time.Millisecond || !fs[2].RestartAgent() {
			t.Errorf("faults[2] = %+v", fs[2])
		}
		if fs[3].RestartAgent() {
			t.Error("faults[3] restarts without restart: true")
		}
	}
}

// TestSwitchLinkFaults: on a leaf-spine, faults take a leaf-spine link by
// its switches, either order, for loss and down only.
func TestSwitchLinkFaults(t *testing.T) {
	base := strings.NewReplacer("KIND", "leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2", ", UPLINK", "").Replace(topologyScenario) + "faults:\n"
	for _, tc := range []struct {
		name, faults, wantErr string
	}{
		{"down", "  - {link: l1-p1, down: {at: 200ms, for: 500ms}}\n", ""},
		{"spine first, loss", "  - {link: p2-l2, loss: 0.1}\n", ""},
		{"no such spine", "  - {link: l1-p3, loss: 0.1}\n", `f.yaml:10: faults[0].link: expected a leaf-spine link l1..l2-p1..p2 (leaf, spine), got "l1-p3"`},
		{"two leaves", "  - {link: l1-l2, loss: 0.1}\n", `faults[0].link: expected a leaf-spine link`},
		{"kill a link", "  - {link: l1-p1, kill_agent: {at: 1s}}\n", `f.yaml:10: faults[0].kill_agent: kill_agent kills a host's agent; "l1-p1" is a link between switches`},
		{"loss both ways", "  - {link: l1-p1, loss: 0.1, direction: both}\n", ""},
		{"loss toward a host", "  - {link: l1-p1, loss: 0.1, direction: to_host}\n", `f.yaml:10: faults[0].direction: l1-p1 is a link between switches, with no host for "to_host" to mean`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parseAndPlan("f.yaml", base+tc.faults)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}
