package scenario

import (
	"strings"
	"testing"
)

func TestOversubscription(t *testing.T) {
	const g = Rate(1e9)
	for _, tc := range []struct {
		name  string
		topo  Topology
		tiers []string
		ratio []float64
	}{
		{"star", Topology{Kind: KindStar, Hosts: 8}, nil, nil},
		{"leaf-spine 1:1 by uplink rate", Topology{Kind: KindLeafSpine, Leaves: 9, HostsPerLeaf: 16, Spines: 4, UplinkRate: 40 * g}, nil, nil},
		{"leaf-spine 2:1", Topology{Kind: KindLeafSpine, Leaves: 2, HostsPerLeaf: 4, Spines: 2}, []string{"leaf"}, []float64{2}},
		{"rail 2:1", Topology{Kind: KindRail, Rails: 4, Servers: 8, Groups: 2, Spines: 4}, []string{"leaf"}, []float64{2}},
		{"rail 1:1", Topology{Kind: KindRail, Rails: 4, Servers: 8, Groups: 2, Spines: 8}, nil, nil},
		{"fat tree", Topology{Kind: KindFatTree, K: 4}, nil, nil},
		{"fat tree, crowded edge", Topology{Kind: KindFatTree, K: 4, HostsPerEdge: 3}, []string{"edge"}, []float64{1.5}},
		{"fat tree, slow core", Topology{Kind: KindFatTree, K: 4, CoreRate: 5 * g}, []string{"aggregation"}, []float64{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.topo.Oversubscription(10 * g)
			if len(got) != len(tc.tiers) {
				t.Fatalf("Oversubscription = %+v, want tiers %v", got, tc.tiers)
			}
			for i, o := range got {
				if o.Tier != tc.tiers[i] || o.Ratio() != tc.ratio[i] {
					t.Errorf("tier %d: %s %.3g:1, want %s %.3g:1", i, o.Tier, o.Ratio(), tc.tiers[i], tc.ratio[i])
				}
			}
		})
	}
}

func TestFabricOverloadWarnings(t *testing.T) {
	// Four hosts a leaf, one spine: 2 leaves 4:1 oversubscribed. All to
	// all: 4/7 of each host's requests leave its leaf, 183% of the uplink.
	const base = `name: fab
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 4}
link: {rate: 1Gbit}
transports: [{name: homa}]
phases:
  - {name: a, clients: [all], servers: [all], sizes: fixed:10000, load: 0.8, response_bytes: 100}
duration: 1s
`
	const leafSpine = "{kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 4}"
	for _, tc := range []struct {
		name, from, to string
		want           string
	}{
		{"over the uplink", "", "", "the links above l1 at 185% of what they carry out of it (1 x 1Gbit per leaf switch, 4:1 oversubscribed"},
		{"within it", "load: 0.8", "load: 0.1", ""},
		{"two spines", "spines: 1", "spines: 2", ""},
		{"a leaf's own traffic", "clients: [all], servers: [all]", "clients: [h1-h4], servers: [h1-h4]", ""},
		{"fat tree core", leafSpine, "{kind: fat-tree, k: 4, core_rate: 100Mbit}", "the links above pod 1 at"},
		{"fat tree", leafSpine, "{kind: fat-tree, k: 4}", ""},
		{"rail", leafSpine, "{kind: rail, rails: 1, servers: 4, groups: 2, spines: 1}", "the links above l1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(base, tc.from, tc.to, 1)
			err := parseAndPlan("fab.yaml", src)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "phases[0].load")):
				t.Fatalf("error %v, want one on phases[0].load containing %q", err, tc.want)
			}
			s := mustPlan(t, src+"allow_overload: true\n").Base
			got := strings.Join(FabricOverloadWarnings(s), "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("FabricOverloadWarnings = %q, want one containing %q", got, tc.want)
			}
		})
	}
}
