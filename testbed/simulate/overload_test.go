package simulate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// overloaded is faults-heavy.yaml's Homa with overcommitment 2: three
// clients at 25% of h1's 20 Mbit/s link each, echoed W4 up to 200 KB, 10%
// loss on h1's link. Two granted senders that stall on losses leave the
// link idle, so the backlog grows through the measurement.
const overloaded = `name: overload
topology: {kind: star, hosts: 4}
link: {rate: 20Mbit}
switch: {target: embedded, queue_depth_pkts: 128}
transports:
  - {name: homa, homa: {overcommit: OC}}
phases:
  - name: echo
    clients: [h2, h3, h4]
    servers: [h1]
    sizes: w4,max=200000
    arrivals: poisson
    load: 0.25
    response_bytes: 0
warmup: 1s
duration: 10s
drain: 10s
calibration: {skip: true}
faults:
  - {link: h1, loss: 0.1}
`

// TestOverloadDetected: with overcommitment 2 the run says the
// configuration could not carry the load (summary.json's overload, its
// fidelity sentence) and counts the in-flight RPCs as the backlog; with
// the default overcommitment every RPC completes and nothing is said.
func TestOverloadDetected(t *testing.T) {
	type exp struct {
		Name string `json:"name"`
		RPCs struct {
			InFlight int64 `json:"in_flight"`
		} `json:"rpcs"`
		Overload *struct {
			SinceS      float64 `json:"since_s"`
			BacklogPeak int64   `json:"backlog_peak"`
			Unfinished  int64   `json:"unfinished"`
			OldestS     float64 `json:"oldest_s"`
		} `json:"overload"`
		Fidelity []string `json:"fidelity"`
	}
	for _, tc := range []struct {
		oc   string
		want bool
	}{{"2", true}, {"0", false}} {
		t.Run("overcommit "+tc.oc, func(t *testing.T) {
			dir := runSim(t, load(t, strings.Replace(overloaded, "OC", tc.oc, 1)))
			raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var s struct{ Experiments []exp }
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			e := s.Experiments[0]
			said := strings.Contains(strings.Join(e.Fidelity, "\n"), "could not carry the offered load")
			if !tc.want {
				if e.Overload != nil || said || e.RPCs.InFlight != 0 {
					t.Errorf("%s: overload %+v, %d in flight: want every RPC completed and no overload", e.Name, e.Overload, e.RPCs.InFlight)
				}
				return
			}
			o := e.Overload
			if o == nil || !said {
				t.Fatalf("%s: no overload reported (%d in flight)", e.Name, e.RPCs.InFlight)
			}
			if o.Unfinished != e.RPCs.InFlight || o.Unfinished == 0 || o.BacklogPeak < o.Unfinished || o.SinceS <= 0 || o.SinceS >= 10 || o.OldestS < 10 {
				t.Errorf("%s: overload %+v with %d in flight: want the in-flight RPCs as the unfinished backlog, growing from within the measurement, the oldest waiting beyond the drain", e.Name, *o, e.RPCs.InFlight)
			}
		})
	}
}
