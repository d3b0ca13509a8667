package scenario

import (
	"strings"
	"testing"
)

// pfcStar is the held-out profile: six RoCE senders into one host of a
// star of 8, each port allowed XOFF 60 toward a queue of 256.
const pfcStar = `name: pfc
topology: {kind: star, hosts: 8}
link: {rate: 50Mbit}
switch:
  queue_depth_pkts: 256
  pfc: {priorities: [3], xoff_pkts: 60, xon_pkts: 30}
transports:
  - name: roce
phases:
  - name: incast
    clients: [h2-h7]
    servers: [h1]
    sizes: fixed:1000000
    arrivals: closed
    max_outstanding: 1
duration: 2s
`

// pfcLeafSpine: a leaf's host port is fed by its 3 other hosts and the
// spine, 4 ports at XOFF 20 toward a queue of 64.
const pfcLeafSpine = `name: pfc-ls
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 4, uplink_rate: 200Mbit}
link: {rate: 50Mbit}
switch:
  queue_depth_pkts: 64
  pfc: {priorities: [3], xoff_pkts: 20, xon_pkts: 10}
transports:
  - name: roce
phases:
  - name: incast
    clients: [h1-h3, h5-h7]
    servers: [h4]
    sizes: fixed:1000000
    arrivals: closed
    max_outstanding: 1
duration: 2s
`

// TestPFCProfileMustFit: a profile whose feeding ports can queue more than
// the lossless queue holds before all have paused is refused at switch.pfc
// with the largest XOFF that fits; that XOFF, or enough headroom, passes.
func TestPFCProfileMustFit(t *testing.T) {
	tests := []struct {
		name, text, from, to string
		msg                  string // "" when it must pass
	}{
		{"star held-out", pfcStar, "", "", "7 ports can feed one egress port, and each may queue xoff_pkts 60 plus about 7 frames still arriving after its PAUSE: 469 packets toward a lossless queue of 256 (queue_depth_pkts 256 + headroom_pkts 0); lower xoff_pkts to at most 29, or raise headroom_pkts to 213"},
		{"star largest xoff", pfcStar, "xoff_pkts: 60, xon_pkts: 30", "xoff_pkts: 29, xon_pkts: 14", ""},
		{"star one above", pfcStar, "xoff_pkts: 60, xon_pkts: 30", "xoff_pkts: 30, xon_pkts: 15", "lower xoff_pkts to at most 29"},
		{"star headroom", pfcStar, "xon_pkts: 30}", "xon_pkts: 30, headroom_pkts: 213}", ""},
		{"star link delay", pfcStar, "duration: 2s", "duration: 2s\nsimulation: {link_delay: 1ms}", "each may queue xoff_pkts 60 plus about 16 frames"},
		// The hosts' NIC backlog (four frames by default) still arrives
		// after a PAUSE; a backlog of a fraction of a frame adds none.
		{"star small NIC backlog", pfcStar, "xoff_pkts: 60, xon_pkts: 30}\ntransports:\n  - name: roce", "xoff_pkts: 33, xon_pkts: 30}\ntransports:\n  - {name: roce, homa: {max_nic_backlog_us: 10}}", ""},
		{"leaf-spine held-out", pfcLeafSpine, "", "", "at each leaf (4 hosts, 1 spines), 4 ports can feed one egress port, and each may queue xoff_pkts 20 plus about 7 frames still arriving after its PAUSE: 108 packets toward a lossless queue of 64 (queue_depth_pkts 64 + headroom_pkts 0); lower xoff_pkts to at most 9"},
		{"leaf-spine largest xoff", pfcLeafSpine, "xoff_pkts: 20, xon_pkts: 10", "xoff_pkts: 9, xon_pkts: 4", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.text
			if tc.from != "" {
				text = strings.Replace(text, tc.from, tc.to, 1)
			}
			if tc.msg == "" {
				if err := parseAndPlan("pfc.yaml", text); err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantOneError(t, text, 6, "switch.pfc", tc.msg)
		})
	}
}

// TestPFCPriorityUnused: a lossless priority no RoCE transport sends its
// data on warns; RoCE's own (3, or its roce_priority) does not.
func TestPFCPriorityUnused(t *testing.T) {
	fits := strings.Replace(pfcStar, "xoff_pkts: 60, xon_pkts: 30", "xoff_pkts: 20, xon_pkts: 10", 1)
	tests := []struct {
		name, from, to string
		warn           string
	}{
		{"roce's priority", "", "", ""},
		{"a second priority", "priorities: [3]", "priorities: [3, 5]", "priority 5 is lossless but no transport sends on it"},
		{"roce moved", "  - name: roce\n", "  - {name: roce, homa: {roce_priority: 2}}\n", "priority 3 is lossless"},
		{"no roce", "  - name: roce\n", "  - name: homa\n", "priority 3 is lossless"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := fits
			if tc.from != "" {
				text = strings.Replace(text, tc.from, tc.to, 1)
			}
			plan := mustPlan(t, text)
			var ws []string // PFC's: RoCE here has no ECN, which MarkingWarnings says
			for _, w := range plan.Warnings() {
				if strings.HasPrefix(w, "switch.pfc:") {
					ws = append(ws, w)
				}
			}
			got := strings.Join(ws, "\n")
			if tc.warn == "" && len(ws) != 0 || tc.warn != "" && !strings.Contains(got, tc.warn) {
				t.Errorf("warnings %q, want %q", ws, tc.warn)
			}
		})
	}
}

// pfcTCP: two kernel-TCP senders into a third host with queue 0 (where
// DSCP 0, TCP's, goes) lossless.
const pfcTCP = `name: pfc-tcp
topology: {kind: star, hosts: 3}
link: {rate: 50Mbit, shaper: tbf}
switch:
  queue_depth_pkts: 512
  pfc: {priorities: [0], xoff_pkts: 64, xon_pkts: 32, headroom_pkts: 64}
transports:
  - name: tcp
phases:
  - name: bulk
    clients: [h2-h3]
    servers: [h1]
    sizes: fixed:1000000
    arrivals: closed
    max_outstanding: 1
duration: 2s
`

// TestKernelTCPObeysPause: kernel TCP on a lossless priority has its
// emulated hosts hold their tbf (no warning), needs a tbf (htb refused at
// link.shaper), adds the hosts' reaction to what arrives after a PAUSE,
// and warns in the simulator, whose TCP model obeys no PAUSE; TCP moved to
// another queue by a DSCP map is not held.
func TestKernelTCPObeysPause(t *testing.T) {
	tests := []struct {
		name, from, to string
		simulate       bool
		vector         uint8
		err, warn      string
	}{
		{"tcp on lossless queue 0", "", "", false, 1, "", ""},
		{"htb shaper", "shaper: tbf", "shaper: htb", false, 1, "link.shaper: transports[0] (tcp) sends kernel TCP on lossless priority 0 (switch.pfc.priorities): its hosts obey PAUSE by holding their link's shaper, which needs link.shaper: tbf", ""},
		{"the hosts' reaction", "xoff_pkts: 64, xon_pkts: 32, headroom_pkts: 64", "xoff_pkts: 250, xon_pkts: 32", false, 1, "each may queue xoff_pkts 250 plus about 9 frames still arriving after its PAUSE", ""},
		{"simulated", "", "", true, 0, "", "priority 0 is lossless but no transport sends on it"},
		{"tcp mapped to queue 2", "switch:", "dscp: {policy: map, map: {0: 2}}\nswitch:", false, 0, "", "priority 0 is lossless but no transport sends on it"},
		{"pias", "  - name: tcp\n", "  - name: pias\n", false, 0, "", "priority 0 is lossless but no transport sends on it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(pfcTCP, tc.from, tc.to, 1)
			if strings.Contains(tc.to, "pias") {
				text = strings.Replace(text, "switch:\n", "switch:\n  ecn_threshold_pkts: 20\n", 1)
			}
			src, err := Parse("pfc.yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := src.Plan(Options{Simulate: tc.simulate})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if v := plan.Base.KernelPause(plan.Base.Transports[0], tc.simulate); v != tc.vector {
				t.Errorf("KernelPause %#x, want %#x", v, tc.vector)
			}
			ws := strings.Join(plan.Warnings(), "\n")
			if tc.warn == "" && ws != "" || tc.warn != "" && !strings.Contains(ws, tc.warn) {
				t.Errorf("warnings %q, want %q", ws, tc.warn)
			}
		})
	}
}
