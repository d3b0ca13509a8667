// Package clos lays out the multi-tier fabrics of a scenario's topology:
// a three-tier k-ary fat tree and a rail-optimised fabric. It says which
// switches exist, which ports join them and where each host hangs, by
// arithmetic alone, so that the scenario's checks (sizes, fault links,
// what an emulation needs) and the run's layout (testbed/topo) read one
// description.
package clos

import (
	"fmt"
	"slices"
	"strconv"
)

// Tiers of a switch.
const (
	TierEdge = 1 // hosts hang off it (edge, or a rail's leaf)
	TierAgg  = 2 // a fat tree's aggregation switch, or a rail fabric's spine
	TierCore = 3 // a fat tree's core switch
)

// Switch is one switch of a layout.
type Switch struct {
	Name     string
	DeviceID uint64
	Tier     int
	// Pod is the switch's pod (fat tree) or group (rail), from 1; 0 for
	// the switches above the pods (cores, spines).
	Pod int
}

// Link joins port APort of switch A (the lower tier) to port BPort of B.
type Link struct {
	A     string
	APort int
	B     string
	BPort int
	// Tier is the upper end's tier: TierAgg for edge to aggregation (or
	// leaf to spine), TierCore for aggregation to core.
	Tier int
}

// Name is the link as faults name it: "e1-a2".
func (l Link) Name() string { return l.A + "-" + l.B }

// Attach is where one host hangs: its edge switch, the edge's number from
// 1 (which addresses the host), and its port there.
type Attach struct {
	Switch string
	Edge   int
	Port   int
}

// Layout is a fabric's switches, links and hosts (host i+1 is Hosts[i]).
type Layout struct {
	Switches []Switch
	Links    []Link
	Hosts    []Attach
	// Pods is how many pods (groups) the fabric has, HostsPerPod the
	// hosts of each.
	Pods, HostsPerPod int
}

// Device id bases of the switches above the edge: a switch's id is its
// base plus its number, so every tier's ids stay apart up to 9,999
// switches each.
const (
	aggIDBase  = 10000
	coreIDBase = 20000
)

// FatTree is a three-tier k-ary fat tree (Al-Fares et al.): k pods, each
// of k/2 edge switches ("e1"...) and k/2 aggregation switches ("a1"...),
// and (k/2)² core switches ("c1"...). Edge switch i of a pod takes
// hostsPerEdge hosts on ports 1..hostsPerEdge (k/2 in the classic tree;
// more oversubscribes it) and reaches aggregation switch j of its pod on
// port hostsPerEdge+j; aggregation switch j takes edge i on port i and
// core (j-1)·k/2+x on port k/2+x; a core takes pod p on port p. Hosts are
// numbered edge by edge: h1..h<hostsPerEdge> on e1.
func FatTree(k, hostsPerEdge int) (*Layout, error) {
	if k < 2 || k%2 != 0 {
		return nil, fmt.Errorf("fat tree: expected an even k of 2 or more, got %d", k)
	}
	if hostsPerEdge < 1 {
		return nil, fmt.Errorf("fat tree: expected at least one host per edge switch, got %d", hostsPerEdge)
	}
	half := k / 2
	l := &Layout{Pods: k, HostsPerPod: half * hostsPerEdge}
	for p := 1; p <= k; p++ {
		for i := 1; i <= half; i++ {
			e := (p-1)*half + i
			l.Switches = append(l.Switches, Switch{Name: "e" + strconv.Itoa(e), DeviceID: uint64(e), Tier: TierEdge, Pod: p})
		}
		for j := 1; j <= half; j++ {
			a := (p-1)*half + j
			l.Switches = append(l.Switches, Switch{Name: "a" + strconv.Itoa(a), DeviceID: uint64(aggIDBase + a), Tier: TierAgg, Pod: p})
		}
	}
	for c := 1; c <= half*half; c++ {
		l.Switches = append(l.Switches, Switch{Name: "c" + strconv.Itoa(c), DeviceID: uint64(coreIDBase + c), Tier: TierCore})
	}
	for p := 1; p <= k; p++ {
		for i := 1; i <= half; i++ {
			e := (p-1)*half + i
			for n := 1; n <= hostsPerEdge; n++ {
				l.Hosts = append(l.Hosts, Attach{Switch: "e" + strconv.Itoa(e), Edge: e, Port: n})
			}
			for j := 1; j <= half; j++ {
				l.Links = append(l.Links, Link{A: "e" + strconv.Itoa(e), APort: hostsPerEdge + j,
					B: "a" + strconv.Itoa((p-1)*half+j), BPort: i, Tier: TierAgg})
			}
		}
		for j := 1; j <= half; j++ {
			for x := 1; x <= half; x++ {
				l.Links = append(l.Links, Link{A: "a" + strconv.Itoa((p-1)*half+j), APort: half + x,
					B: "c" + strconv.Itoa((j-1)*half+x), BPort: p, Tier: TierCore})
			}
		}
	}
	return l, nil
}

// Rail is a rail-optimised fabric: groups of servers with rails NICs
// each; NIC r of every server of group g hangs off that group's rail-r
// leaf ("l<(g-1)·rails+r>", port = the server's place in its group), and
// every leaf reaches every spine ("p1"...) on port servers+x, the spine
// taking leaf n on port n. Each NIC is a host: host ((g-1)·servers +
// s-1)·rails + r is NIC r of server s of group g, so a server's NICs are
// consecutive hosts on different leaves, and the same NIC of every server
// of a group shares a leaf. A spine's device id is 100 plus its number,
// as a leaf-spine's.
func Rail(rails, servers, groups, spines int) (*Layout, error) {
	switch {
	case rails < 1:
		return nil, fmt.Errorf("rail fabric: expected at least one rail, got %d", rails)
	case servers < 1:
		return nil, fmt.Errorf("rail fabric: expected at least one server per group, got %d", servers)
	case groups < 1:
		return nil, fmt.Errorf("rail fabric: expected at least one group, got %d", groups)
	case spines < 1:
		return nil, fmt.Errorf("rail fabric: expected at least one spine, got %d", spines)
	}
	l := &Layout{Pods: groups, HostsPerPod: rails * servers}
	leaves := groups * rails
	for n := 1; n <= leaves; n++ {
		l.Switches = append(l.Switches, Switch{Name: "l" + strconv.Itoa(n), DeviceID: uint64(n), Tier: TierEdge, Pod: (n-1)/rails + 1})
	}
	for x := 1; x <= spines; x++ {
		l.Switches = append(l.Switches, Switch{Name: "p" + strconv.Itoa(x), DeviceID: uint64(100 + x), Tier: TierAgg})
	}
	for g := 1; g <= groups; g++ {
		for s := 1; s <= servers; s++ {
			for r := 1; r <= rails; r++ {
				n := (g-1)*rails + r
				l.Hosts = append(l.Hosts, Attach{Switch: "l" + strconv.Itoa(n), Edge: n, Port: s})
			}
		}
	}
	for n := 1; n <= leaves; n++ {
		for x := 1; x <= spines; x++ {
			l.Links = append(l.Links, Link{A: "l" + strconv.Itoa(n), APort: servers + x, B: "p" + strconv.Itoa(x), BPort: n, Tier: TierAgg})
		}
	}
	return l, nil
}

// Count is how many switches of each tier a layout has.
func (l *Layout) Count() (edge, agg, core int) {
	for _, s := range l.Switches {
		switch s.Tier {
		case TierEdge:
			edge++
		case TierAgg:
			agg++
		case TierCore:
			core++
		}
	}
	return edge, agg, core
}

// MaxPorts is the most ports any switch of the layout uses.
func (l *Layout) MaxPorts() int {
	n := map[string]int{}
	for _, h := range l.Hosts {
		n[h.Switch]++
	}
	for _, k := range l.Links {
		n[k.A]++
		n[k.B]++
	}
	most := 0
	for _, v := range n {
		most = max(most, v)
	}
	return most
}

// Link returns the link between switches a and b, in either order.
func (l *Layout) Link(a, b string) (Link, bool) {
	for _, k := range l.Links {
		if (k.A == a && k.B == b) || (k.A == b && k.B == a) {
			return k, true
		}
	}
	return Link{}, false
}

// Paths lists every shortest path from switch from to switch to, each as
// the switches it visits in order (from and to included), sorted. It is
// the layout's own answer, by search over its links, that the routing
// tests hold the controller's routes to.
func (l *Layout) Paths(from, to string) [][]string {
	adj := map[string][]string{}
	for _, k := range l.Links {
		adj[k.A] = append(adj[k.A], k.B)
		adj[k.B] = append(adj[k.B], k.A)
	}
	// Distances to to, then every walk from from that gets one closer at
	// each step.
	dist := map[string]int{to: 0}
	for frontier := []string{to}; len(frontier) > 0; {
		var next []string
		for _, s := range frontier {
			for _, n := range adj[s] {
				if _, seen := dist[n]; !seen {
					dist[n] = dist[s] + 1
					next = append(next, n)
				}
			}
		}
		frontier = next
	}
	if _, ok := dist[from]; !ok {
		return nil
	}
	var out [][]string
	var walk func(path []string)
	walk = func(path []string) {
		at := path[len(path)-1]
		if at == to {
			out = append(out, slices.Clone(path))
			return
		}
		for _, n := range adj[at] {
			if d, ok := dist[n]; ok && d == dist[at]-1 {
				walk(append(path, n))
			}
		}
	}
	walk([]string{from})
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return out
}
