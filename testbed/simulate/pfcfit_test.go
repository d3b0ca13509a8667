package simulate_test

import (
	"fmt"
	"testing"
)

// TestPFCProfileThatFitsIsLossless: the largest XOFF validation accepts
// (switch.pfc: the feeding ports' XOFF and frames in flight within the
// queue) keeps an incast of RoCE senders without DCQCN lossless with no
// headroom at all, on a star and on a leaf-spine where the spine's port
// feeds the receiver's too.
func TestPFCProfileThatFitsIsLossless(t *testing.T) {
	tests := []struct {
		name, topology, clients, server string
		depth, xoff                     int
	}{
		{"star", "{kind: star, hosts: 8}", "h2-h7", "h1", 256, 29},
		{"leaf-spine", "{kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 4, uplink_rate: 200Mbit}", "h1-h3, h5-h7", "h4", 64, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf(`name: pfc-fit
topology: %s
link: {rate: 50Mbit}
switch:
  queue_depth_pkts: %d
  pfc: {priorities: [3], xoff_pkts: %d, xon_pkts: %d, headroom_pkts: 0}
transports:
  - {name: roce, homa: {roce_dcqcn: false}}
phases:
  - name: incast
    clients: [%s]
    servers: [%s]
    sizes: fixed:200000
    arrivals: closed
    max_outstanding: 1
    response_bytes: 100
warmup: 200ms
duration: 1s
drain: 2s
calibration: {skip: true}
`, tc.topology, tc.depth, tc.xoff, tc.xoff/2, tc.clients, tc.server)
			s := readSummary(t, runSim(t, load(t, src)))
			for _, e := range s.Experiments {
				var pauses int64
				for _, p := range e.Switch.PFC {
					pauses += p.PausesSent
				}
				if e.Switch.Drops != 0 || pauses == 0 {
					t.Errorf("%s: %d switch drops, %d PAUSE frames: want none dropped, some paused", e.Name, e.Switch.Drops, pauses)
				}
				if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued {
					t.Errorf("%s: rpcs %+v: want every one completed", e.Name, e.RPCs)
				}
			}
		})
	}
}

// TestPFCPausesAcrossTheSpine: the PFC victim of scenarios/pfc-victim.yaml
// with no headroom, the simulated clock's latencies and NIC backlog given
// as a simulated run fills them. Leaf 2's queue toward the incast's
// receiver pauses the spine, the spine pauses leaf 1's uplink, leaf 1
// pauses its hosts, and each resume lets the paused port or host send
// again at once: nothing is dropped, every RPC completes and the
// receivers' links stay busy. A switch port that waited for a PAUSE to run
// out after its resume dropped thousands of packets on the lossless
// priority, and a host whose pacer did the same left the links idle with
// RPCs in flight at the end.
func TestPFCPausesAcrossTheSpine(t *testing.T) {
	const src = `name: pfc-victim
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 5, uplink_rate: 200Mbit, load_balancing: ecmp}
link: {rate: 50Mbit, mtu: 1500}
switch:
  queue_depth_pkts: 256
  ecn: {kmin_pkts: 10, kmax_pkts: 60, pmax: 0.2}
  pfc: {priorities: [3], xoff_pkts: 16, xon_pkts: 8, headroom_pkts: 0}
dscp: {policy: class-selector}
transports:
  - {name: roce, label: pfc, homa: {roce_dcqcn: false, max_nic_backlog_us: 0.001}}
phases:
  - {name: incast, clients: [h1-h4], servers: [h6], sizes: "fixed:1000000", arrivals: closed, max_outstanding: 1, response_bytes: 100}
  - {name: victim, clients: [h5], servers: [h10], sizes: "fixed:1000000", arrivals: closed, max_outstanding: 1, response_bytes: 100}
warmup: 200ms
duration: 6s
drain: 2s
seed: 1
calibration: {skip: true}
simulation: {switch_delay: 250ns, host_tx_delay: 1us, host_rx_delay: 500ns}
`
	var s struct {
		Experiments []struct {
			Name string `json:"name"`
			RPCs struct {
				Issued, Completed uint64
			} `json:"rpcs"`
			Switch struct {
				Drops int64 `json:"drops"`
				PFC   []struct {
					Switch     string `json:"switch"`
					PausesSent int64  `json:"pauses_sent"`
				} `json:"pfc"`
			} `json:"switch"`
		} `json:"experiments"`
	}
	decodeSummary(t, runSim(t, load(t, src)), &s)
	if len(s.Experiments) != 1 {
		t.Fatalf("%d experiments, want 1", len(s.Experiments))
	}
	e := s.Experiments[0]
	pauses := map[string]int64{}
	for _, p := range e.Switch.PFC {
		pauses[p.Switch] += p.PausesSent
	}
	t.Logf("%s: rpcs %+v, drops %d, PAUSE frames sent by switch %v", e.Name, e.RPCs, e.Switch.Drops, pauses)
	if e.Switch.Drops != 0 {
		t.Errorf("%d packets dropped on a lossless fabric", e.Switch.Drops)
	}
	for _, sw := range []string{"l2", "p1", "l1"} {
		if pauses[sw] == 0 {
			t.Errorf("switch %s sent no PAUSE: the backpressure did not reach the senders' leaf (%v)", sw, pauses)
		}
	}
	if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued {
		t.Errorf("rpcs %+v: want every one completed", e.RPCs)
	}
	// h6's 50 Mbit/s carries 37 of the incast's 1 MB messages in 6 s;
	// the victim's add to them.
	if e.RPCs.Completed < 30 {
		t.Errorf("%d RPCs completed in 6 s: the receivers' links stood idle", e.RPCs.Completed)
	}
}
