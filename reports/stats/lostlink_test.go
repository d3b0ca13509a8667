package stats

import (
	"strings"
	"testing"
)

func TestLostLinkWarning(t *testing.T) {
	tests := []struct {
		name   string
		byPort map[string]float64
		window float64
		want   string // substring; "" for no warning
	}{
		{"none lost", map[string]float64{}, 20, ""},
		{"under 2%", map[string]float64{"s1/2": 300}, 20, ""},
		{"worst port named", map[string]float64{"s1/2": 5000, "s1/3": 600}, 20, "switch port s1/2 lost 5000 ms of link time (25% of the experiment)"},
		{"totals", map[string]float64{"s1/2": 5000, "s1/3": 600}, 20, "2 ports lost 5600 ms in all"},
		{"no window", map[string]float64{"s1/2": 5000}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := SwitchStats{LostLinkMsByPort: tc.byPort}
			for _, v := range tc.byPort {
				st.LostLinkMs += v
			}
			got := lostLinkWarning(st, tc.window)
			if tc.want == "" {
				if got != "" {
					t.Errorf("warning %q, want none", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("warning %q, want it to contain %q", got, tc.want)
			}
		})
	}
}
