package scenario

import (
	"strings"
	"testing"
)

// TestOrderWarnings: RoCE on a fabric that sprays a queue pair's packets
// over several paths warns, in its own experiment only; per-flow ECMP, a
// single path or a single spine does not.
func TestOrderWarnings(t *testing.T) {
	const base = `name: order
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
link: {rate: 50Mbit}
switch: {ecn_threshold_pkts: 20}
transports:
  - name: roce
  - name: homa
phases:
  - {name: a, clients: [h3, h4], servers: [h1], sizes: fixed:1000, load: 0.2}
duration: 1s
`
	const warn = "roce: RoCE takes a queue pair's packets in order only, and load_balancing: spray (the default) sends them over 2 paths"
	for _, tc := range []struct {
		name, from, to string
		want           string // the RoCE experiment's warning; the Homa one has none
	}{
		{"sprayed by default", "", "", warn},
		{"sprayed as written", "hosts_per_leaf: 2}", "hosts_per_leaf: 2, load_balancing: spray}", warn},
		{"per-flow ECMP", "hosts_per_leaf: 2}", "hosts_per_leaf: 2, load_balancing: ecmp}", ""},
		{"one spine", "spines: 2", "spines: 1", ""},
		{"fat tree", "{kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}", "{kind: fat-tree, k: 4}", "sends them over 4 paths"},
		{"star", "{kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}", "{kind: star, hosts: 4}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlan(t, strings.Replace(base, tc.from, tc.to, 1))
			for i := range plan.Experiments {
				e := &plan.Experiments[i]
				got := strings.Join(OrderWarnings(e), "\n")
				want := ""
				if e.Name == "order-roce" {
					want = tc.want
				}
				if want == "" && got != "" || !strings.Contains(got, want) {
					t.Errorf("%s: warnings %q, want %q", e.Name, got, want)
				}
			}
		})
	}
}
