package simulate_test

import (
	"context"
	"encoding/json"
	"github.com/homatb/homatb/testbed"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/homatb/homatb/testbed/scenario"
)

// BenchmarkPaperFabric simulates scenarios/homa2018-sim.yaml's Homa on W4
// at 80% load on the paper's 144-host fabric for 1 ms of warm-up and 4 ms
// measured (about 10,000 messages), one calibration sample per size, and
// reports the simulator's speed: events per wall second and simulated
// milliseconds per wall second (the whole run, calibration included), and
// events per second of this process's CPU time, which a machine shared
// with other jobs changes less than wall time.
func BenchmarkPaperFabric(b *testing.B) {
	src, err := os.ReadFile("../../scenarios/homa2018-sim.yaml")
	if err != nil {
		b.Fatal(err)
	}
	yaml := string(src)
	for _, r := range [][2]string{
		{"warmup: 2ms", "warmup: 1ms"}, {"duration: 10ms", "duration: 4ms"}, {"drain: 5ms", "drain: 2ms"},
		{"samples: 5", "samples: 1"},
	} {
		if !strings.Contains(yaml, r[0]) {
			b.Fatalf("homa2018-sim.yaml has no %q to replace", r[0])
		}
		yaml = strings.Replace(yaml, r[0], r[1], 1)
	}
	// The workload sweep goes: the phase's own sizes are W4's.
	sweep := strings.Index(yaml, "\nsweep:\n")
	if sweep < 0 || !strings.Contains(yaml, "sizes: w4,max=1000000\n") {
		b.Fatal("homa2018-sim.yaml has no sweep to cut, or its phase's sizes are not W4")
	}
	yaml = yaml[:sweep+1]
	path := filepath.Join(b.TempDir(), "paper.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	var events, simNs, wallNs float64
	cpu0 := cpuSeconds(b)
	for b.Loop() {
		p, err := scenario.Load(path, scenario.Options{Simulate: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Only([]string{"homa"}); err != nil {
			b.Fatal(err)
		}
		dir := filepath.Join(b.TempDir(), "run")
		res, err := testbed.Run(context.Background(), p, testbed.Options{RunDir: dir, ScenarioFile: path, Simulate: true})
		if err != nil {
			b.Fatal(err)
		}
		if res.Incomplete {
			b.Fatalf("run %s incomplete", dir)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			b.Fatal(err)
		}
		var m struct {
			Simulation struct {
				Events           float64 `json:"events"`
				SimulatedSeconds float64 `json:"simulated_seconds"`
				WallSeconds      float64 `json:"wall_seconds"`
			} `json:"simulation"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			b.Fatal(err)
		}
		events += m.Simulation.Events
		simNs += m.Simulation.SimulatedSeconds * 1e9
		wallNs += m.Simulation.WallSeconds * 1e9
	}
	b.ReportMetric(events/(cpuSeconds(b)-cpu0), "events/cpu-s")
	b.ReportMetric(events/wallNs*1e9, "events/s")
	b.ReportMetric(simNs/1e6/(wallNs/1e9), "sim-ms/s")
}

// cpuSeconds is the user and system CPU time this process has used.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
