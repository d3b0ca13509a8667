package simulate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
)

const oneWayIdle = `name: oneway
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2, uplink_rate: 40Gbit}
link: {rate: 10Gbit}
simulated: true
transports:
  - name: homa
  - name: tcp
phases:
  - name: mixed
    clients: [h2]
    servers: [h3]            # across the spines; calibration is within a rack
    sizes: mix:fixed:100@2,fixed:1000@2,fixed:10000@1,fixed:100000@1
    arrivals: poisson
    rate_rps: 2000
    one_way: true
simulation: {switch_delay: 250ns, host_tx_delay: 500ns, host_rx_delay: 500ns}
warmup: 20ms
duration: 1s
drain: 10ms
`

// TestOneWayIdleSlowdownIsOne runs one-way messages (phases' one_way) on
// a nearly idle leaf-spine, on the engine and on the TCP model: every
// message ends completed with no response, the calibration timed one-way
// messages (half the round trip kept for the transports' parameters), and
// the slowdown, divided by that one-way ideal, is 1.00 +- 0.05 at the
// median of the shortest half: the ideal adds the two switches and links a
// message across the spines meets beyond the calibration's path in a rack
// (without them the 100 B messages' slowdown would be 1.3).
func TestOneWayIdleSlowdownIsOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(oneWayIdle), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := scenario.Load(path, scenario.Options{Simulate: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := runSim(t, p)
	for _, e := range readSummary(t, dir).Experiments {
		if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued {
			t.Errorf("%s: %+v, want every message completed", e.Name, e.RPCs)
		}
		h := e.ShortestHalf
		if h == nil || h.S50 == nil {
			t.Fatalf("%s: no shortest half", e.Name)
		}
		t.Logf("%s: %.3f", e.Name, *h.S50)
		if *h.S50 < 0.95 || *h.S50 > 1.05 {
			t.Errorf("%s: shortest half (up to %d B) median slowdown %.3f, want 1.00 +- 0.05", e.Name, h.MaxLength, *h.S50)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Calibration map[string]rundir.Calibration `json:"calibration"`
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	for _, tr := range []string{"homa", "tcp"} {
		cal := man.Calibration[tr]
		// The default sizes; the round trip's 100 B response echoes the
		// request, so the one-way time is half of it.
		ow, rtt := cal.OneWayUs[100], cal.RTTus[100]
		if len(cal.OneWayUs) != 5 || ow < 0.45*rtt || ow > 0.55*rtt {
			t.Errorf("%s calibration %+v: want one-way times for the 5 sizes, 100 B's half its round trip", tr, cal)
		}
	}
	rows, err := os.ReadFile(filepath.Join(dir, "rpcs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(rows)), "\n")
	col := -1
	for i, c := range strings.Split(lines[0], ",") {
		if c == "resp_bytes" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("rpcs.csv has no resp_bytes column: %s", lines[0])
	}
	for _, l := range lines[1:] {
		if f := strings.Split(l, ","); f[col] != "0" {
			t.Fatalf("a one-way message with %s response bytes: %s", f[col], l)
		}
	}
}
