package simulate_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
)

// TestWireOverhead runs one-way messages in a rack with Ethernet's framing
// and with simulation.wire_overhead 6 (what HomaSimulation charges a DATA
// packet): the manifest says each frame's overhead, and the calibration's
// 100 B message, one frame over two links, arrives 2 x 18 B of wire time
// sooner, so every part that times a frame (NICs, switch ports, the
// ideal) charges the setting.
func TestWireOverhead(t *testing.T) {
	const base = `name: framing
topology: {kind: star, hosts: 3}
link: {rate: 10Gbit}
simulated: true
transports: [{name: homa}]
phases:
  - {name: p, clients: [h2], servers: [h3], sizes: "fixed:100", arrivals: poisson, rate_rps: 2000, one_way: true}
duration: 10ms
drain: 10ms
`
	run := func(extra string) (frame int, oneWayUs float64) {
		dir := runSim(t, load(t, base+extra))
		b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var man struct {
			Fabric      rundir.FabricRecord           `json:"fabric"`
			Calibration map[string]rundir.Calibration `json:"calibration"`
		}
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatal(err)
		}
		for _, e := range readSummary(t, dir).Experiments {
			if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued {
				t.Errorf("%s: %+v, want every message completed", e.Name, e.RPCs)
			}
		}
		return man.Fabric.FrameOverhead, man.Calibration["homa"].OneWayUs[100]
	}
	frame0, ow0 := run("")
	frame6, ow6 := run("simulation: {wire_overhead: 6}\n")
	if frame0 != 38 || frame6 != 20 {
		t.Errorf("manifest frame overhead %d and %d B, want 38 (Ethernet) and 20 (6 beyond the header)", frame0, frame6)
	}
	const want = 2 * 18 * 8 / 10e9 * 1e6 // µs: 18 B less on each of two links
	if d := ow0 - ow6; math.Abs(d-want) > 0.002 {
		t.Errorf("100 B one way %.4f µs, with wire_overhead 6 %.4f µs: %.4f µs sooner, want %.4f", ow0, ow6, d, want)
	}
}

// TestWireOverheadRefused checks that simulation.wire_overhead is refused
// out of range, and in an emulated run, whose framing is the kernel's,
// unless it says Ethernet's 24.
func TestWireOverheadRefused(t *testing.T) {
	const base = `name: framing
topology: {kind: star, hosts: 2}
link: {rate: 1Gbit}
transports: [{name: homa}]
phases:
  - {name: p, clients: [h1], servers: [h2], sizes: "fixed:100", rate_rps: 100}
duration: 1s
`
	for _, tc := range []struct {
		name, extra string
		simulate    bool
		want        string
	}{
		{"emulated", "simulation: {wire_overhead: 6}\n", false, "or nothing in an emulated run"},
		{"negative", "simulation: {wire_overhead: -1}\n", true, "from 1 to 64"},
		{"too large", "simulation: {wire_overhead: 65}\n", true, "from 1 to 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(path, []byte(base+tc.extra), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := scenario.Load(path, scenario.Options{Simulate: tc.simulate})
			if err == nil || !strings.Contains(err.Error(), "simulation.wire_overhead") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming simulation.wire_overhead and %q", err, tc.want)
			}
		})
	}
}
