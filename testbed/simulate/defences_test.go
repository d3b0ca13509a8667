package simulate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestDefencesInTheTwin: the switch's defences run in the simulator too,
// with their meters on virtual time. h2 is untrusted, so each of its Homa
// packets with a DSCP above 0 is re-marked; h3 is trusted but its top two
// queues are metered at 2 Mbit/s with a 3 kB burst, so some of its
// unscheduled bursts (10 kB messages at 20 per second) come out red and
// are re-marked. With switch.defences false the switches count nothing
// (the pipelines outlive each experiment's network; their counters are
// taken per experiment), and every RPC completes either way.
func TestDefencesInTheTwin(t *testing.T) {
	dir := runSim(t, load(t, `name: def
topology: {kind: star, hosts: 3}
link: {rate: 50Mbit}
switch:
  anti_spoofing: true
  meters:
    - {priorities: [6, 7], rate: 2Mbit, burst: 3KB}
dscp:
  trust: [h1, h3]
transports:
  - name: homa
phases:
  - {name: p, clients: [h2, h3], servers: [h1], sizes: fixed:10000, arrivals: poisson, rate_rps: 20}
warmup: 100ms
duration: 2s
sweep:
  - param: switch.defences
    values: [true, false]
`))
	s := readSummary(t, dir)
	for _, e := range s.Experiments {
		if e.RPCs.Failed != 0 || e.RPCs.InFlight != 0 {
			t.Errorf("%s: %+v", e.Name, e.RPCs)
		}
	}
	byPort := func(exp string) map[uint16][3]uint64 {
		b, err := os.ReadFile(filepath.Join(dir, "switch", exp, "s1.json"))
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Ports []struct {
				Port uint16
				R    uint64 `json:"remarked_pkts"`
				M    uint64 `json:"metered_pkts"`
				S    uint64 `json:"spoof_drops"`
			} `json:"ports"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		m := map[uint16][3]uint64{}
		for _, p := range st.Ports {
			m[p.Port] = [3]uint64{p.R, p.M, p.S}
		}
		return m
	}
	on, off := byPort("def-homa-defencestrue"), byPort("def-homa-defencesfalse")
	t.Logf("defences on, by port (re-marked, metered, spoofed): %v", on)
	if on[2][0] == 0 || on[2][1] != 0 {
		t.Errorf("h2 (untrusted, port 2): %v, want re-marked packets and none metered (re-marked to 0 first)", on[2])
	}
	if on[3][0] != 0 || on[3][1] == 0 {
		t.Errorf("h3 (trusted, metered, port 3): %v, want metered packets and none re-marked", on[3])
	}
	for port, c := range on {
		if c[2] != 0 {
			t.Errorf("port %d: %d spoofed, want none from honest hosts", port, c[2])
		}
	}
	for port, c := range off {
		if c != [3]uint64{} {
			t.Errorf("defences off, port %d counted %v", port, c)
		}
	}
}
