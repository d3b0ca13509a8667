package simulate_test

import (
	"strings"
	"testing"
)

// TestSwitchBufferInTheTwin checks a scenario's switch.buffer reaches the
// twin's switches (it once reached only the embedded switch's, and the
// twin ran with unbounded buffers): eight hosts send 20 kB to h1 at one
// instant, so their unscheduled bytes meet at h1's downlink. With a 40 kB
// buffer shared at alpha 1 a queue holds at most about half of it and the
// rest is dropped (and resent); without one nothing is.
func TestSwitchBufferInTheTwin(t *testing.T) {
	const base = `name: buffer
simulated: true
topology: {kind: star, hosts: 9}
link: {rate: 10Gbit}
switch:
  queue_depth_pkts: 10000
BUFFER
transports:
  - name: homa
phases:
  - name: burst
    clients: [h2-h9]
    servers: [h1]
    sizes: fixed:20000
    arrivals: poisson
    incast: {interval: 50ms, jitter: 0s}
    response_bytes: 100
    max_rpcs: 1
warmup: 0s
duration: 1ms
drain: 20ms
`
	tests := []struct {
		name, buffer string
		drops        bool
		maxPkts      int64
	}{
		{"unbounded", "", false, 10000},
		{"shared 40 kB", "  buffer: {shared_bytes: 40000, alpha: 1}", true, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := readSummary(t, runSim(t, load(t, strings.Replace(base, "BUFFER", tt.buffer, 1))))
			e := s.Experiments[0]
			if e.RPCs.Completed != 8 {
				t.Fatalf("%+v: want the 8 RPCs completed", e.RPCs)
			}
			var peak int64
			for _, p := range e.Switch.MaxQueuePkts {
				peak = max(peak, p)
			}
			if (e.Switch.Drops > 0) != tt.drops || peak > tt.maxPkts {
				t.Errorf("%d drops, largest queue %d packets; want drops %v and at most %d packets", e.Switch.Drops, peak, tt.drops, tt.maxPkts)
			}
			t.Logf("%d drops, largest queue %d packets", e.Switch.Drops, peak)
		})
	}
}
