package simulate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fewW5 is W5 at a low load for a short time: a dozen RPCs, none short both
// ways (W5's smallest message is larger than 1000 B).
const fewW5 = `name: few
topology: {kind: star, hosts: 4}
link: {rate: 20Mbit}
switch: {target: embedded, queue_depth_pkts: 128}
transports:
  - name: homa
  - name: pfabric
phases:
  - name: w5
    clients: [h2, h3, h4]
    servers: [h1]
    sizes: w5
    arrivals: poisson
    load: 0.15
warmup: 500ms
duration: 6s
drain: 5s
`

// TestFewW5RPCs: a P99 over a dozen samples gets its fidelity warning with
// the count and the duration that would give enough, and with no short
// RPC the headline falls back to the shortest half's P99 slowdown, in
// the report's headline.
func TestFewW5RPCs(t *testing.T) {
	dir := runSim(t, load(t, fewW5))
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Experiments []struct {
			Name  string
			Short struct {
				Count int64 `json:"count"`
			} `json:"short"`
			Fidelity []string `json:"fidelity"`
		}
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Experiments {
		fid := strings.Join(e.Fidelity, "\n")
		if e.Short.Count != 0 || !strings.Contains(fid, "the shortest half's slowdown P99 rests on") || !strings.Contains(fid, "a measurement of about") {
			t.Errorf("%s: %d short RPCs, fidelity %q: want none short and the shortest half's sample warning", e.Name, e.Short.Count, e.Fidelity)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shortest-half slowdown P99 was", "No RPC was short both ways"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html's headline lacks %q", want)
		}
	}
}
