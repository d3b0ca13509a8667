package simulate_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/simulate"
	"github.com/homatb/homatb/testbed/topo"
)

// packetKey names one Homa DATA packet: its sender, receiver, RPC and
// offset.
type packetKey struct {
	src, dst [4]byte
	rpc      uint64
	seq      uint32
}

type hop struct {
	at int64
	sw string
}

// TestClosPathsInTheTwin runs an all-to-all among every host of a fat tree
// (k=4) and of a rail fabric in the twin, sprayed, and follows each DATA
// packet through the switches' postcards: every packet from one leaf to
// another takes one of the layout's shortest paths between them, and
// between every two leaves the packets take every such path.
func TestClosPathsInTheTwin(t *testing.T) {
	for _, tc := range []struct{ name, topology string }{
		{"fat-tree", "{kind: fat-tree, k: 4, load_balancing: spray}"},
		{"rail", "{kind: rail, rails: 2, servers: 3, groups: 2, spines: 3, load_balancing: spray}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := load(t, `name: paths
topology: `+tc.topology+`
link: {rate: 1Gbit}
switch: {records: all} # every packet's path, not the anatomy's sample
transports:
  - name: homa
phases:
  - name: a2a
    hosts: [all]
    collective: {kind: alltoall, bytes: 600000, iterations: 2}
warmup: 0s
duration: 50ms
drain: 50ms
`)
			dir := runSim(t, p)
			layout, err := topo.Layout(p.Base.Topology, simulate.Tag)
			if err != nil {
				t.Fatal(err)
			}
			edgeOf := map[[4]byte]string{}
			for _, h := range layout.Hosts {
				edgeOf[h.IP.As4()] = h.Switch
			}
			hops := map[packetKey][]hop{}
			for _, sw := range layout.Switches {
				_, err := rundir.ReadPostcards(dir, "paths-homa", sw.Name, func(pc *rundir.Postcard) error {
					if pc.HomaType == 0x10 {
						k := packetKey{pc.SrcIP, pc.DstIP, pc.RPCID, pc.Seq}
						hops[k] = append(hops[k], hop{pc.DequeueNs, sw.Name})
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			cl, err := p.Base.Topology.Clos()
			if err != nil {
				t.Fatal(err)
			}
			seen := map[[2]string]map[string]bool{}
			resent := 0
			for k, hs := range hops {
				slices.SortFunc(hs, func(a, b hop) int { return int(a.at - b.at) })
				path := make([]string, len(hs))
				for i, h := range hs {
					path[i] = h.sw
				}
				if len(slices.Compact(slices.Sorted(slices.Values(path)))) != len(path) {
					resent++ // a packet sent again crosses its switches twice
					continue
				}
				from, to := edgeOf[k.src], edgeOf[k.dst]
				want := cl.Paths(from, to)
				if !slices.ContainsFunc(want, func(w []string) bool { return slices.Equal(w, path) }) {
					t.Errorf("%v to %v (%s to %s) took %v, not a shortest path (%v)", netip.AddrFrom4(k.src), netip.AddrFrom4(k.dst), from, to, path, want)
					continue
				}
				pair := [2]string{from, to}
				if seen[pair] == nil {
					seen[pair] = map[string]bool{}
				}
				seen[pair][strings.Join(path, "-")] = true
			}
			if len(hops) == 0 || resent > len(hops)/100 {
				t.Fatalf("%d DATA packets in the postcards, %d sent again", len(hops), resent)
			}
			edges, _, _ := cl.Count()
			if len(seen) != edges*edges {
				t.Errorf("packets between %d ordered pairs of leaves, want %d", len(seen), edges*edges)
			}
			for pair, got := range seen {
				for _, w := range cl.Paths(pair[0], pair[1]) {
					if !got[strings.Join(w, "-")] {
						t.Errorf("%s to %s: no packet took %v (took %v)", pair[0], pair[1], w, fmt.Sprint(got))
					}
				}
			}
			if r := readSummary(t, dir).Experiments[0].RPCs; r.Completed != r.Issued || r.Failed != 0 {
				t.Errorf("RPCs %+v, want every one completed", r)
			}
		})
	}
}
