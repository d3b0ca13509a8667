package testbed

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/testbed/scenario"
)

// TestCalibrationOnePath runs the lifecycle's scenario emulated (through
// the fakes) and simulated: both calibrate on the one code path, so both
// give the engine's Homa its unscheduled bytes and the kernel's TCP none
// (the simulator once gave TCP some). A scenario of one-way messages,
// whose calibration only the simulator can time, fails clearly when
// emulated (the emulation once timed round trips instead).
func TestCalibrationOnePath(t *testing.T) {
	// run runs src emulated or simulated; its plan is always made for the
	// simulator, which accepts one-way messages.
	run := func(t *testing.T, src string, simulate bool) (*Result, error) {
		s, err := scenario.Parse("lc.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := s.Plan(scenario.Options{Simulate: true})
		if err != nil {
			t.Fatal(err)
		}
		base := t.TempDir()
		return runWith(t.Context(), plan, Options{RunDir: filepath.Join(base, "run"), Registry: filepath.Join(base, "reg"),
			NoReport: true, Binary: "/bin/false", Simulate: simulate}, fakeParts(newJournal()))
	}
	for _, simulate := range []bool{false, true} {
		res, err := run(t, lifecycleScenario, simulate)
		if err != nil {
			t.Fatalf("simulate %v: %v", simulate, err)
		}
		cal := res.Manifest.Calibration
		if h := cal["homa"]; h.UnschedBytes == 0 || len(h.RTTus) != 2 {
			t.Errorf("simulate %v: homa calibrated %+v, want two sizes and unscheduled bytes", simulate, h)
		}
		if c := cal["tcp"]; c.UnschedBytes != 0 || len(c.RTTus) != 2 {
			t.Errorf("simulate %v: tcp calibrated %+v, want two sizes and no unscheduled bytes", simulate, c)
		}
	}
	oneWay := strings.Replace(lifecycleScenario, `  - {name: bulk, clients: [h2], servers: [h1], sizes: "fixed:1000", arrivals: closed, max_outstanding: 1}
  - {name: probes, clients: [h3], servers: [h1], sizes: "fixed:100", arrivals: poisson, rate_rps: 100}`,
		`  - {name: probes, clients: [h3], servers: [h1], sizes: "fixed:100", arrivals: poisson, rate_rps: 100, one_way: true}`, 1)
	if _, err := run(t, oneWay, false); err == nil || !strings.Contains(err.Error(), "only the simulator") {
		t.Errorf("one-way scenario emulated: %v, want calibration to say only the simulator times one-way messages", err)
	}
	res, err := run(t, oneWay, true)
	if err != nil {
		t.Fatal(err)
	}
	if h := res.Manifest.Calibration["homa"]; len(h.OneWayUs) != 2 || len(h.RTTus) != 1 {
		t.Errorf("one-way scenario simulated: homa calibrated %+v, want two one-way sizes and the smallest's round trip", h)
	}
}
