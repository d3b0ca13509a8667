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
		{"star", "{kind: star, hosts: 8}", "h2-h7", "h1", 256, 33},
		{"leaf-spine", "{kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 4, uplink_rate: 200Mbit}", "h1-h3, h5-h7", "h4", 64, 13},
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
