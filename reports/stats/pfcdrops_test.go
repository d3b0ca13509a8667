package stats

import (
	"strings"
	"testing"
)

// TestLosslessDropWarnings: a drop on a lossless priority is a fidelity
// warning naming the port, the count and the headroom the run needed; a
// drop on a lossy queue, or any drop without PFC, is not.
func TestLosslessDropWarnings(t *testing.T) {
	pfc := map[string]any{"switch": map[string]any{"queue_depth_pkts": 256.0,
		"pfc": map[string]any{"priorities": []any{3.0}, "xoff_pkts": 60.0, "xon_pkts": 30.0, "headroom_pkts": 16.0}}}
	st := SwitchStats{queueDrops: []queueDrop{
		{port: "s1/1 (h1)", queue: 3, drops: 183, peak: 272},
		{port: "s1/2 (h2)", queue: 2, drops: 50, peak: 256},
	}}
	tests := []struct {
		name     string
		scenario any
		want     []string
	}{
		{"lossless drop", pfc, []string{"switch port s1/1 (h1) dropped 183 packets of lossless priority 3 (peak 272 packets)", "headroom_pkts 16", "up to about 199 packets of headroom"}},
		{"no pfc", map[string]any{"switch": map[string]any{"queue_depth_pkts": 256.0}}, nil},
		{"no scenario", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := losslessDropWarnings(st, tc.scenario)
			if tc.want == nil {
				if len(ws) != 0 {
					t.Errorf("warnings %q, want none", ws)
				}
				return
			}
			if len(ws) != 1 {
				t.Fatalf("warnings %q, want one (queue 2 is lossy)", ws)
			}
			for _, w := range tc.want {
				if !strings.Contains(ws[0], w) {
					t.Errorf("warning %q lacks %q", ws[0], w)
				}
			}
		})
	}
}
