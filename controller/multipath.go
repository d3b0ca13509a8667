package controller

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/homatb/homatb/controller/p4rtclient"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Names of tor.p4's multipath objects.
const (
	tableNexthop      = "TorIngress.nexthop_group"
	tableLoadBalance  = "TorIngress.load_balance"
	actionECMPForward = "TorIngress.ecmp_forward"
	actionSetEgress   = "TorIngress.set_egress"
	actionFlowHash    = "TorIngress.flow_hash"
	actionSpray       = "TorIngress.spray"
	profileUplinks    = "TorIngress.uplink_selector"
	fieldNexthop      = "meta.nexthop_group"
)

// Load balancing over equal-cost paths (Policy.LoadBalancing).
const (
	// LoadBalanceSpray picks a path per packet: every packet of a flow may
	// take another uplink. The Homa paper's simulator does this (a random
	// uplink per packet at the ToR), so it is the default.
	LoadBalanceSpray = "spray"
	// LoadBalanceECMP picks a path per flow by hashing its addresses,
	// protocol and ports: the packets of a flow stay in order.
	LoadBalanceECMP = "ecmp"
)

// multipath is what one switch gets for its equal-cost paths: a member per
// uplink (id = port), a group per other switch with hosts reached over two
// or more ports (id = that switch's position in the topology + 1, members =
// the ports), and the nexthop_group entries naming them.
type multipath struct {
	members []p4rtclient.Member
	groups  []p4rtclient.Group
	entries []p4rtclient.Entry
	// groupOf is the group of each switch reached over several ports.
	groupOf map[string]uint32
}

// linkEnd is one switch port of an inter-switch link.
type linkEnd struct {
	sw   string
	port int
}

// switchMultipath computes name's multipath state. Which switches get a
// group, and the members, follow the whole topology, so routes, entries and
// members never change with link state; the members of a group are the
// ports that start a shortest path over the links that are up (down holds
// the ends of the others), among the group's ports. A group whose switch
// is reachable only over other ports is left empty: its traffic is
// dropped, as a down link would drop it.
func (t *Topology) switchMultipath(name string, down map[linkEnd]bool) multipath {
	mp := multipath{groupOf: map[string]uint32{}}
	hops := t.nextHops(name)
	up := hops
	if len(down) > 0 {
		up = t.nextHopsWithout(name, down)
	}
	ports := map[int]bool{}
	hasHosts := map[string]bool{}
	for _, h := range t.Hosts {
		hasHosts[h.Switch] = true
	}
	for i, sw := range t.Switches {
		hp := hops[sw.Name]
		if len(hp) < 2 || !hasHosts[sw.Name] {
			continue
		}
		id := uint32(i + 1)
		mp.groupOf[sw.Name] = id
		g := p4rtclient.Group{Profile: profileUplinks, ID: id}
		for _, p := range hp {
			ports[p] = true
			if slices.Contains(up[sw.Name], p) {
				g.Members = append(g.Members, uint32(p))
			}
		}
		mp.groups = append(mp.groups, g)
		mp.entries = append(mp.entries, p4rtclient.Entry{
			Table: tableNexthop,
			Match: []p4rtclient.Match{p4rtclient.Exact(fieldNexthop, p4rtclient.Uint(uint64(id)))},
			Group: id,
		})
	}
	for _, p := range slices.Sorted(maps.Keys(ports)) {
		mp.members = append(mp.members, p4rtclient.Member{Profile: profileUplinks, ID: uint32(p), Action: actionSetEgress,
			Params: map[string]p4rtclient.Value{"port": p4rtclient.Uint(uint64(p))}})
	}
	return mp
}

// loadBalanceDefault is load_balance's default entry for the policy on
// switch name.
func loadBalanceDefault(p Policy, name string) p4rtclient.Entry {
	if p.LoadBalancing != LoadBalanceECMP {
		return p4rtclient.Entry{Table: tableLoadBalance, Action: actionSpray, Default: true}
	}
	var seed uint64
	if p.SwitchSeeds {
		seed = uint64(switchSeed(name))
	}
	return p4rtclient.Entry{Table: tableLoadBalance, Action: actionFlowHash, Default: true,
		Params: map[string]p4rtclient.Value{"seed": p4rtclient.Uint(seed)}}
}

// switchSeed is switch name's flow-hash seed: FNV-1a of the name, so a
// switch keeps its seed from run to run (simulations repeat).
func switchSeed(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// programMultipath writes a switch's members and groups (before the
// entries that name them) and load_balance's default.
func (f *Switches) programMultipath(ctx context.Context, name string, p Policy) error {
	c := f.clients[name]
	mp := f.topo.switchMultipath(name, f.downEnds())
	if err := c.WriteProfiles(ctx, p4v1.Update_INSERT, mp.members, mp.groups); err != nil {
		return fmt.Errorf("action profile: %w", err)
	}
	return c.SetDefault(ctx, loadBalanceDefault(p, name))
}

// verifyMultipath reads back a switch's members, groups and load_balance
// default and compares them with what it should hold.
func (f *Switches) verifyMultipath(ctx context.Context, name string, p Policy) error {
	c := f.clients[name]
	mp := f.topo.switchMultipath(name, f.downEnds())
	members, groups, err := c.ReadProfiles(ctx)
	if err != nil {
		return fmt.Errorf("read back action profile: %w", err)
	}
	var errs []error
	if a, b := fmt.Sprint(members), fmt.Sprint(mp.members); a != b {
		errs = append(errs, fmt.Errorf("verify %s: members %s, want %s", name, a, b))
	}
	if a, b := fmt.Sprint(groups), fmt.Sprint(mp.groups); a != b {
		errs = append(errs, fmt.Errorf("verify %s: groups %s, want %s", name, a, b))
	}
	def, err := c.ReadDefault(ctx, tableLoadBalance)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("read back %s default: %w", tableLoadBalance, err))...)
	}
	if want := loadBalanceDefault(p, name); def.Action != want.Action || fmt.Sprint(def.Params) != fmt.Sprint(want.Params) {
		errs = append(errs, fmt.Errorf("verify %s: %s default %s %v, want %s %v", name, tableLoadBalance, def.Action, def.Params, want.Action, want.Params))
	}
	return errors.Join(errs...)
}

// downEnds is the set of switch ports whose links SetLinkDown took down.
func (f *Switches) downEnds() map[linkEnd]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.down)
}

// SetLinkDown records that the link between switches a and b is down (or up
// again, down false) and rewrites the next-hop groups of every switch to
// the shortest paths over the links that are up: a leaf stops spreading
// over a spine whose link to the destination leaf is down, and takes it
// back when the link returns. Routes and members stay; only groups change
// (one MODIFY per group). The data plane itself does not notice link
// state: tor.p4's selector hashes over the members the controller left.
func (f *Switches) SetLinkDown(ctx context.Context, a, b string, down bool) error {
	var ends []linkEnd
	for _, l := range f.topo.Links {
		if (l.A == a && l.B == b) || (l.A == b && l.B == a) {
			ends = append(ends, linkEnd{l.A, l.APort}, linkEnd{l.B, l.BPort})
		}
	}
	if len(ends) == 0 {
		return fmt.Errorf("set link %s-%s down: no link joins them", a, b)
	}
	f.mu.Lock()
	for _, e := range ends {
		if down {
			f.down[e] = true
		} else {
			delete(f.down, e)
		}
	}
	f.mu.Unlock()
	dn := f.downEnds()
	var errs []error
	for _, sw := range f.topo.Switches {
		mp := f.topo.switchMultipath(sw.Name, dn)
		if len(mp.groups) == 0 {
			continue
		}
		if err := f.clients[sw.Name].WriteProfiles(ctx, p4v1.Update_MODIFY, nil, mp.groups); err != nil {
			errs = append(errs, fmt.Errorf("switch %q: %w", sw.Name, err))
		}
	}
	f.log.Info("link state", "a", a, "b", b, "down", down, "errors", len(errs))
	return errors.Join(errs...)
}
