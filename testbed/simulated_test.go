package testbed

import (
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/faults"
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

// bodyScenario: a ring collective on h1-h3 beside h4's probes to h1, with
// loss on h2's link.
const bodyScenario = `
name: body
topology: {kind: star, hosts: 4}
link: {rate: 100Mbit}
switch: {target: embedded, queue_depth_pkts: 64}
transports: [{name: homa}]
phases:
  - {name: train, hosts: [h1-h3], collective: {kind: ring-allreduce, bytes: 12KB, iterations: 3, compute: 1ms}}
  - {name: probes, clients: [h4], servers: [h1], sizes: "fixed:100", arrivals: poisson, rate_rps: 200}
faults:
  - {link: h2, loss: 0.01}
warmup: 10ms
duration: 40ms
drain: 20ms
calibration: {sizes: [100], samples: 3}
`

// TestExperimentBodyBothClocks runs one scenario emulated (through the
// fakes) and simulated: one experiment body writes both entries, so they
// name the same hosts in the same roles (the twin once called a
// collective's members servers, the emulation clients) and the same
// injected faults (the twin once wrote none), and the twin's books are
// its records.
func TestExperimentBodyBothClocks(t *testing.T) {
	s, err := scenario.Parse("body.yaml", []byte(bodyScenario))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Plan(scenario.Options{Simulate: true})
	if err != nil {
		t.Fatal(err)
	}
	entries := map[bool]rundir.Experiment{}
	for _, simulate := range []bool{false, true} {
		base := t.TempDir()
		res, err := runWith(t.Context(), plan, Options{RunDir: filepath.Join(base, "run"), Registry: filepath.Join(base, "reg"),
			NoReport: true, Binary: "/bin/false", Simulate: simulate}, fakeParts(newJournal()))
		if err != nil {
			t.Fatalf("simulate %v: %v", simulate, err)
		}
		if len(res.Manifest.Experiments) != 1 {
			t.Fatalf("simulate %v: %d experiments, want 1", simulate, len(res.Manifest.Experiments))
		}
		e := res.Manifest.Experiments[0]
		entries[simulate] = e
		if b := e.RPCs; b.Issued == 0 || b.Issued != b.Completed+b.Failed+b.InFlight {
			t.Errorf("simulate %v: books %+v do not balance", simulate, b)
		}
		want := "fault injected: " + faults.Describe(plan.Base.Faults[0])
		if !slices.Contains(e.Fidelity, want) {
			t.Errorf("simulate %v: fidelity %q lacks %q", simulate, e.Fidelity, want)
		}
		if !simulate {
			continue
		}
		rows := readRPCs(t, filepath.Join(res.RunDir, rundir.RPCs().File), e.Name)
		var got rundir.Books
		for _, r := range rows {
			got.Issued++
			switch r.Status {
			case rundir.StatusCompleted:
				got.Completed++
			case rundir.StatusFailed:
				got.Failed++
			default:
				got.InFlight++
			}
		}
		if got != e.RPCs {
			t.Errorf("simulated books %+v, but rpcs.csv has %+v", e.RPCs, got)
		}
	}
	roles := func(e rundir.Experiment) map[string]string {
		m := map[string]string{}
		for _, h := range e.Hosts {
			m[h.Host] = h.Role
		}
		return m
	}
	emu, sim := roles(entries[false]), roles(entries[true])
	if len(emu) != 4 || !maps.Equal(emu, sim) {
		t.Errorf("hosts' roles emulated %v, simulated %v: want the same four", emu, sim)
	}
}

// readRPCs reads the rows of experiment exp ("": every one) from an
// rpcs.csv.
func readRPCs(t *testing.T, path, exp string) []rundir.RPC {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := rundir.RPCs().NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []rundir.RPC
	for {
		var r rundir.RPC
		if err := rd.Read(&r); errors.Is(err, io.EOF) {
			return rows
		} else if err != nil {
			t.Fatal(err)
		}
		if exp == "" || r.Experiment == exp {
			rows = append(rows, r)
		}
	}
}
