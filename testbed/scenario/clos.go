package scenario

import (
	"fmt"
	"strings"

	"github.com/homatb/homatb/internal/clos"
)

// Limits of the multi-tier fabrics, with the reason for each in
// docs/topologies.md.
const (
	// MaxEmulatedSwitches is the most switch processes an emulated run
	// starts on this machine: a leaf-spine's 16 leaves and 8 spines.
	MaxEmulatedSwitches = 24
	// MaxPathWidth is the most equal-cost next hops one switch spreads
	// over: tor.p4's uplink_selector holds groups of 16 members.
	MaxPathWidth = 16
	// MaxRoutes is what one switch's ipv4_lpm holds (tor.p4's size): a
	// route to each of its own hosts and one to every other edge switch.
	MaxRoutes = 1024
)

// Clos is the layout of a fat tree or rail-optimised topology (nil, nil
// for the other kinds).
func (t Topology) Clos() (*clos.Layout, error) {
	switch t.Kind {
	case KindFatTree:
		return clos.FatTree(t.K, t.edgeHosts())
	case KindRail:
		return clos.Rail(t.Rails, t.Servers, t.Groups, t.Spines)
	}
	return nil, nil
}

// edgeHosts is a fat tree's hosts per edge switch, the default applied.
func (t Topology) edgeHosts() int {
	if t.HostsPerEdge == 0 {
		return t.K / 2
	}
	return t.HostsPerEdge
}

// closHosts is how many hosts a fat tree or rail fabric has (0 when its
// shape is invalid).
func (t Topology) closHosts() int {
	switch t.Kind {
	case KindFatTree:
		return max(t.K*(t.K/2)*t.edgeHosts(), 0)
	case KindRail:
		return max(t.Rails*t.Servers*max(t.Groups, 1), 0)
	}
	return 0
}

// EmulationNeeds says what an emulated run of the topology starts: a
// namespace and an agent per host, a process per switch.
func (t Topology) EmulationNeeds() (namespaces, switches, agents int) {
	switch t.Kind {
	case KindStar:
		return t.Hosts, 1, t.Hosts
	case KindLeafSpine:
		return t.Leaves * t.HostsPerLeaf, t.Leaves + t.Spines, t.Leaves * t.HostsPerLeaf
	case KindFatTree:
		h := t.closHosts()
		return h, t.K*t.K + t.K*t.K/4, h
	case KindRail:
		h := t.closHosts()
		return h, max(t.Groups, 1)*t.Rails + t.Spines, h
	}
	return 0, 0, 0
}

// describeClos is a fat tree's or rail fabric's line in the plan, with
// what emulating it takes unless the run is simulated.
func (t Topology) describeClos(simulated bool) string {
	l, err := t.Clos()
	if err != nil {
		return t.Kind + " (invalid)"
	}
	edge, agg, core := l.Count()
	ns, sw, ag := t.EmulationNeeds()
	needs := fmt.Sprintf("emulated: %d namespaces, %d switch processes, %d agents", ns, sw, ag)
	if simulated {
		needs = "simulated"
	}
	if t.Kind == KindRail {
		return fmt.Sprintf("rail, %d groups x %d servers x %d rails = %d hosts, %d leaves, %d spines (%s)",
			max(t.Groups, 1), t.Servers, t.Rails, len(l.Hosts), edge, agg, needs)
	}
	return fmt.Sprintf("fat-tree k=%d, %d hosts (%d per edge), %d switches (%d edge, %d aggregation, %d core) (%s)",
		t.K, len(l.Hosts), t.edgeHosts(), len(l.Switches), edge, agg, core, needs)
}

// checkClos checks a fat tree's or rail fabric's shape against what tor.p4
// holds, and in emulation against what this machine can run.
func (c *checker) checkClos(s *Scenario) {
	t := s.Topology
	if t.Hosts != 0 || t.Leaves != 0 || t.HostsPerLeaf != 0 {
		c.errorf("topology.kind", "hosts, leaves and hosts_per_leaf belong to kinds star and leaf-spine, not %s", t.Kind)
	}
	ports := MaxPorts
	switch t.Kind {
	case KindFatTree:
		if t.Rails != 0 || t.Servers != 0 || t.Groups != 0 || t.Spines != 0 {
			c.errorf("topology.kind", "rails, servers, groups and spines belong to kind rail, not fat-tree")
		}
		if t.K < 2 || t.K%2 != 0 || t.K/2 > MaxPathWidth {
			c.errorf("topology.k", "expected an even k from 2 to %d (each switch spreads over k/2 uplinks; tor.p4's selector groups hold %d), got %d",
				2*MaxPathWidth, MaxPathWidth, t.K)
			return
		}
		if t.HostsPerEdge < 0 || t.edgeHosts()+t.K/2 > ports {
			c.errorf("topology.hosts_per_edge", "expected 1 to %d hosts per edge switch (ports 1..%d are shared with the %d uplinks), got %d",
				ports-t.K/2, ports, t.K/2, t.HostsPerEdge)
			return
		}
		if routes := t.edgeHosts() + t.K*t.K/2 - 1; routes > MaxRoutes {
			c.errorf("topology.k", "an edge switch would need %d routes (its %d hosts and %d other edges), tor.p4's ipv4_lpm holds %d",
				routes, t.edgeHosts(), t.K*t.K/2-1, MaxRoutes)
		}
	case KindRail:
		if t.K != 0 || t.HostsPerEdge != 0 || t.CoreRate != 0 {
			c.errorf("topology.kind", "k, hosts_per_edge and core_rate belong to kind fat-tree, not rail")
		}
		groups := max(t.Groups, 1)
		switch {
		case t.Rails < 1:
			c.errorf("topology.rails", "expected 1 or more rails (NICs per server), got %d", t.Rails)
			return
		case t.Spines < 1 || t.Spines > MaxPathWidth:
			c.errorf("topology.spines", "expected 1 to %d spines (a leaf spreads over all of them; tor.p4's selector groups hold %d), got %d", MaxPathWidth, MaxPathWidth, t.Spines)
			return
		case t.Servers < 1 || t.Servers+t.Spines > ports:
			c.errorf("topology.servers", "expected 1 to %d servers per group (a leaf's ports 1..%d are shared with the %d spine uplinks), got %d",
				ports-t.Spines, ports, t.Spines, t.Servers)
			return
		case t.Groups < 0 || groups*t.Rails > ports:
			c.errorf("topology.groups", "expected groups x rails to be at most %d leaves (a spine's ports), got %d x %d", ports, groups, t.Rails)
			return
		}
	}
	if t.CoreRate != 0 && t.Kind != KindFatTree {
		c.errorf("topology.core_rate", "only a fat tree has core links, not %s", t.Kind)
	}
	if c.simulate {
		return
	}
	ns, sw, ag := t.EmulationNeeds()
	if sw > MaxEmulatedSwitches || ns > MaxHosts {
		c.errorf("topology", "emulating this %s needs %d namespaces (one per host), %d switch processes and %d agents; this machine emulates at most %d switches and %d hosts: make it smaller or run it with --simulate",
			t.Kind, ns, sw, ag, MaxEmulatedSwitches, MaxHosts)
	}
}

// switchLinkKnown reports whether a fault's switch link a-b is a link of
// a fat tree or rail topology, and names the links expected.
func (t Topology) switchLinkKnown(a, b string) (bool, string) {
	l, err := t.Clos()
	if err != nil || l == nil {
		return false, ""
	}
	_, ok := l.Link(a, b)
	want := "a link between two switches it joins, e.g. " + l.Links[0].Name()
	if t.Kind == KindFatTree {
		want += " (edge-aggregation) or " + l.Links[len(l.Links)-1].Name() + " (aggregation-core)"
	}
	// Where one end is a switch of the fabric, say whom it joins.
	for _, end := range []string{a, b} {
		if peers := switchPeers(l, end); len(peers) > 0 {
			want += fmt.Sprintf("; %s joins %s", end, strings.Join(peers, ", "))
			break
		}
	}
	return ok, want
}

// switchLinkHint is what else a fault may name on t: its links between
// switches, with an example; none on a star.
func (t Topology) switchLinkHint() string {
	switch t.Kind {
	case KindLeafSpine:
		return " or a link between a leaf and a spine, l<leaf>-p<spine> (e.g. l1-p2)"
	case KindFatTree, KindRail:
		if l, err := t.Clos(); err == nil && l != nil && len(l.Links) > 0 {
			return " or a link between two of its switches, e.g. " + l.Links[0].Name()
		}
	}
	return ""
}

// switchPeers lists the switches sw is linked to, the first eight and a
// count of the rest.
func switchPeers(l *clos.Layout, sw string) []string {
	var peers []string
	for _, k := range l.Links {
		switch sw {
		case k.A:
			peers = append(peers, k.B)
		case k.B:
			peers = append(peers, k.A)
		}
	}
	if len(peers) > 8 {
		peers = append(peers[:8], fmt.Sprintf("and %d more", len(peers)-8))
	}
	return peers
}
