package scenario

import (
	"errors"
	"strings"
	"testing"
)

// TestCapture reads capture blocks appended to the good scenario (whose
// last line is 19, so the block starts at line 20): good ones plan and keep
// their values, bad ones fail with the file, line and field of the mistake.
func TestCapture(t *testing.T) {
	tests := []struct {
		name, capture string
		// line, field and msg of the one error; line 0 means valid.
		line  int
		field string
		msg   string
	}{
		{name: "the issue's", capture: "capture: {hosts: [h1], switch_ports: [h1], snaplen: 128, experiments: [t-homa]}\n"},
		{name: "pattern, sizes", capture: "capture:\n  switch_ports: [h2, h1]\n  max_bytes: 1MiB\n  experiments: ['t-*']\n"},
		{name: "every experiment", capture: "capture: {hosts: [h4]}\n"},

		{"nowhere", "capture: {snaplen: 100}\n", 20, "capture", "expected hosts or switch_ports"},
		{"unknown host", "capture:\n  hosts: [h1, h9]\n", 21, "capture.hosts[1]", `expected a host (h1 to h4), got "h9"`},
		{"twice", "capture:\n  switch_ports: [h2, h2]\n", 21, "capture.switch_ports[1]", "h2 is listed twice"},
		{"snaplen small", "capture:\n  hosts: [h1]\n  snaplen: 40\n", 22, "capture.snaplen", "expected 64 to 65535 bytes"},
		{"snaplen large", "capture:\n  hosts: [h1]\n  snaplen: 70000\n", 22, "capture.snaplen", "got 70000"},
		{"file too big", "capture:\n  hosts: [h1]\n  max_bytes: 2GiB\n", 22, "capture.max_bytes", "expected 64KiB to 1GiB"},
		{"not a size", "capture:\n  hosts: [h1]\n  max_bytes: lots\n", 22, "capture.max_bytes", ""},
		{"no such experiment", "capture:\n  hosts: [h1]\n  experiments: [t-homa, incast-homa]\n", 22, "capture.experiments[1]", `names no experiment of the plan (t-homa, t-tcp), got "incast-homa"`},
		{"bad pattern", "capture:\n  hosts: [h1]\n  experiments: ['t-[']\n", 22, "capture.experiments[0]", "expected an experiment name or pattern"},
		{"unknown key", "capture:\n  hosts: [h1]\n  snap: 100\n", 22, "capture.snap", `unknown field "snap"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := parseAndPlan("c.yaml", good+tc.capture)
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("valid capture rejected: %v", err)
				}
				return
			}
			var es Errors
			if !errors.As(err, &es) || len(es) != 1 {
				t.Fatalf("want exactly one *Error, got %T: %v", err, err)
			}
			e := es[0]
			if e.File != "c.yaml" || e.Line != tc.line || e.Field != tc.field || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("got %s\nwant c.yaml:%d: %s: ...%s...", e, tc.line, tc.field, tc.msg)
			}
		})
	}
}

// TestCaptureValues checks the defaults and which experiments are captured.
func TestCaptureValues(t *testing.T) {
	src, err := Parse("v.yaml", []byte(good+"capture: {hosts: [h1], experiments: [t-homa]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{SizeSpec: func(string) (SizeStats, error) { return SizeStats{Mean: 1000, Max: 1000}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	c := plan.Base.Capture
	if c.SnapLen() != DefaultSnaplen || c.FileBytes() != DefaultCaptureBytes {
		t.Errorf("snaplen %d, file bytes %d: want the defaults", c.SnapLen(), c.FileBytes())
	}
	var captured []string
	for _, e := range plan.Experiments {
		if e.Scenario.Capture.Captures(e.Name) {
			captured = append(captured, e.Name)
		}
	}
	if strings.Join(captured, " ") != "t-homa" {
		t.Errorf("captured %v, want t-homa", captured)
	}
	var none *Capture
	if none.Captures("t-homa") {
		t.Error("no capture block captures something")
	}
}
