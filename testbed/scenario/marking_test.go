package scenario

import (
	"strings"
	"testing"
)

// TestMarkingWarnings: DCQCN and NSCC without a switch that marks ECN
// warn, each only in its own experiment; with marking, or with the
// control off, nothing.
func TestMarkingWarnings(t *testing.T) {
	const base = `name: marks
topology: {kind: star, hosts: 3}
link: {rate: 50Mbit}
transports:
  - name: roce
  - name: uet
  - name: homa
phases:
  - {name: a, clients: [h2, h3], servers: [h1], sizes: fixed:1000, load: 0.2}
duration: 1s
`
	tests := []struct {
		name, from, to string
		want           map[string]string // experiment: warning (absent: none)
	}{
		{"no marking", "", "", map[string]string{"marks-roce": "roce: DCQCN slows a sender only on ECN marks", "marks-uet": "uet: NSCC cuts its window only on ECN marks"}},
		{"threshold marking", "duration: 1s", "duration: 1s\nswitch: {ecn_threshold_pkts: 20}", nil},
		{"red marking", "duration: 1s", "duration: 1s\nswitch: {ecn: {kmin_pkts: 10, kmax_pkts: 60, pmax: 0.2}}", nil},
		{"controls off", "  - name: roce\n  - name: uet\n", "  - {name: roce, homa: {roce_dcqcn: false}}\n  - {name: uet, homa: {uet_nscc: false}}\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlan(t, strings.Replace(base, tc.from, tc.to, 1))
			for i := range plan.Experiments {
				e := &plan.Experiments[i]
				got := strings.Join(MarkingWarnings(e), "\n")
				if want := tc.want[e.Name]; want == "" && got != "" || !strings.Contains(got, want) {
					t.Errorf("%s: warnings %q, want %q", e.Name, got, want)
				}
			}
		})
	}
}
