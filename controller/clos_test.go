package controller

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/homatb/homatb/internal/clos"
	"github.com/homatb/homatb/p4/pipeline"
	"github.com/homatb/homatb/p4/target/targettest"
)

// closTopology is layout l on embedded switches, hosts addressed as
// testbed/topo addresses them (10.<leaf/256>.<leaf%256>.<port>), routed by
// each leaf's /24.
func closTopology(t *testing.T, l *clos.Layout) (*Topology, map[string]*targettest.Switch) {
	t.Helper()
	sws := map[string]*targettest.Switch{}
	topo := &Topology{RoutePrefix: 24}
	for _, s := range l.Switches {
		sw := targettest.Start(t, "127.0.0.1:0", s.DeviceID)
		sws[s.Name] = sw
		topo.Switches = append(topo.Switches, Switch{Name: s.Name, DeviceID: s.DeviceID, Address: sw.Addr()})
	}
	for i, h := range l.Hosts {
		topo.Hosts = append(topo.Hosts, Host{Name: fmt.Sprintf("h%d", i+1),
			IP:  netip.AddrFrom4([4]byte{10, byte(h.Edge >> 8), byte(h.Edge), byte(h.Port)}),
			MAC: MAC{2, 0, 0, 0, byte((i + 1) >> 8), byte(i + 1)}, Switch: h.Switch, Port: h.Port})
	}
	for _, k := range l.Links {
		topo.Links = append(topo.Links, Link{A: k.A, APort: k.APort, B: k.B, BPort: k.BPort})
	}
	return topo, sws
}

// tracePaths follows frames from host src to host dst through the
// programmed pipelines: at each switch it hands in probes frames (their
// source ports vary, and spraying varies their nonce) and follows every
// egress port they take. It returns every switch path that ends at dst's
// port with dst's MAC, and fails on a frame dropped, delivered to another
// port or looping.
func tracePaths(t *testing.T, topo *Topology, sws map[string]*targettest.Switch, src, dst Host, probes int) [][]string {
	t.Helper()
	peer := map[linkEnd]linkEnd{}
	for _, l := range topo.Links {
		peer[linkEnd{l.A, l.APort}] = linkEnd{l.B, l.BPort}
		peer[linkEnd{l.B, l.BPort}] = linkEnd{l.A, l.APort}
	}
	var out [][]string
	var walk func(at linkEnd, path []string)
	walk = func(at linkEnd, path []string) {
		path = append(path, at.sw)
		if len(path) > 8 {
			t.Fatalf("%s to %s: path %v loops", src.Name, dst.Name, path)
		}
		ports := map[uint16]bool{}
		for i := range probes {
			f := udpTo(dst.IP, uint16(1000+i))
			var v pipeline.Verdict
			sws[at.sw].Pipeline().Ingress(f, uint16(at.port), &v)
			if v.Drop {
				t.Fatalf("%s to %s: %s dropped the frame from port %d", src.Name, dst.Name, at.sw, at.port)
			}
			if !ports[v.EgressPort] && at.sw == dst.Switch && int(v.EgressPort) == dst.Port && MAC(f[0:6]) != dst.MAC {
				t.Errorf("%s to %s: delivered with MAC %v, want %v", src.Name, dst.Name, MAC(f[0:6]), dst.MAC)
			}
			ports[v.EgressPort] = true
		}
		for _, p := range slices.Sorted(maps.Keys(ports)) {
			next, isLink := peer[linkEnd{at.sw, int(p)}]
			switch {
			case isLink:
				walk(next, path)
			case at.sw == dst.Switch && int(p) == dst.Port:
				out = append(out, slices.Clone(path))
			default:
				t.Fatalf("%s to %s: %s sent the frame to port %d, which leads to neither a switch nor %s", src.Name, dst.Name, at.sw, p, dst.Name)
			}
		}
	}
	walk(linkEnd{src.Switch, src.Port}, nil)
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return slices.CompactFunc(out, slices.Equal)
}

// TestClosRoutesEveryShortestPath programs a fat tree (k=4) and a rail
// fabric on embedded switches and traces frames between every pair of
// hosts: each pair's frames take exactly the layout's shortest paths
// (clos.Layout.Paths, a search of its own), all of them, with both ECMP
// and spraying; the edges hold a route per leaf, not per host.
func TestClosRoutesEveryShortestPath(t *testing.T) {
	ft, err := clos.FatTree(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	rail, err := clos.Rail(2, 3, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		layout *clos.Layout
		lb     string
	}{{"fat-tree/spray", ft, LoadBalanceSpray}, {"fat-tree/ecmp", ft, LoadBalanceECMP}, {"rail/spray", rail, LoadBalanceSpray}} {
		t.Run(tc.name, func(t *testing.T) {
			topo, sws := closTopology(t, tc.layout)
			pol := Policy{LoadBalancing: tc.lb}
			programmed(t, topo, pol)
			pairs := 0
			for _, src := range topo.Hosts {
				for _, dst := range topo.Hosts {
					if src.Name == dst.Name {
						continue
					}
					got := tracePaths(t, topo, sws, src, dst, 48)
					want := tc.layout.Paths(src.Switch, dst.Switch)
					if !slices.EqualFunc(got, want, slices.Equal) {
						t.Errorf("%s (%s) to %s (%s): paths %v, want %v", src.Name, src.Switch, dst.Name, dst.Switch, got, want)
					}
					pairs++
				}
			}
			if n := len(topo.Hosts); pairs != n*(n-1) {
				t.Errorf("traced %d pairs, want %d", pairs, n*(n-1))
			}
			entries, err := topo.switchEntries(tc.layout.Switches[0].Name, pol)
			if err != nil {
				t.Fatal(err)
			}
			routes := 0
			for _, e := range entries {
				if e.Table == tableIPv4LPM {
					routes++
				}
			}
			edges, _, _ := tc.layout.Count()
			perEdge := len(tc.layout.Hosts) / edges
			if want := perEdge + edges - 1; routes != want {
				t.Errorf("%s holds %d routes, want %d (its %d hosts and a /24 per other leaf)", tc.layout.Switches[0].Name, routes, want, perEdge)
			}
		})
	}
}

// TestClosLinkDownKeepsOtherPaths takes an aggregation-core link of a fat
// tree down: no pair's frames cross it any more, every pair still arrives,
// and it comes back when the link does.
func TestClosLinkDownKeepsOtherPaths(t *testing.T) {
	ft, err := clos.FatTree(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	topo, sws := closTopology(t, ft)
	pol := Policy{LoadBalancing: LoadBalanceSpray}
	f := programmed(t, topo, pol)
	ctx := testContext(t)
	crosses := func(paths [][]string, a, b string) bool {
		for _, p := range paths {
			if i := slices.Index(p, a); i >= 0 && ((i+1 < len(p) && p[i+1] == b) || (i > 0 && p[i-1] == b)) {
				return true
			}
		}
		return false
	}
	h1, h16 := topo.Hosts[0], topo.Hosts[15] // pods 1 and 4
	if !crosses(tracePaths(t, topo, sws, h1, h16, 48), "a7", "c1") {
		t.Fatal("h1 to h16 never crosses a7-c1 with every link up")
	}
	if err := f.SetLinkDown(ctx, "a7", "c1", true); err != nil {
		t.Fatal(err)
	}
	for _, src := range topo.Hosts {
		if src.Switch == h16.Switch {
			continue
		}
		if ps := tracePaths(t, topo, sws, src, h16, 48); crosses(ps, "a7", "c1") || len(ps) == 0 {
			t.Errorf("a7-c1 down: %s to h16 takes %v", src.Name, ps)
		}
	}
	if err := f.Verify(ctx, pol); err != nil {
		t.Errorf("Verify with the link down: %v", err)
	}
	if err := f.SetLinkDown(ctx, "a7", "c1", false); err != nil {
		t.Fatal(err)
	}
	if ps := tracePaths(t, topo, sws, h1, h16, 48); !crosses(ps, "a7", "c1") {
		t.Errorf("a7-c1 up again: h1 to h16 takes %v", ps)
	}
}

// flowPath follows one frame from host src to host dst with UDP source
// port sport through the programmed pipelines and returns the switches it
// crosses.
func flowPath(t *testing.T, topo *Topology, sws map[string]*targettest.Switch, src, dst Host, sport uint16) []string {
	t.Helper()
	peer := map[linkEnd]linkEnd{}
	for _, l := range topo.Links {
		peer[linkEnd{l.A, l.APort}] = linkEnd{l.B, l.BPort}
		peer[linkEnd{l.B, l.BPort}] = linkEnd{l.A, l.APort}
	}
	at := linkEnd{src.Switch, src.Port}
	var path []string
	for len(path) <= 8 {
		path = append(path, at.sw)
		var v pipeline.Verdict
		sws[at.sw].Pipeline().Ingress(udpTo(dst.IP, sport), uint16(at.port), &v)
		if v.Drop {
			t.Fatalf("%s to %s, port %d: %s dropped the frame", src.Name, dst.Name, sport, at.sw)
		}
		if at.sw == dst.Switch && int(v.EgressPort) == dst.Port {
			return path
		}
		next, ok := peer[linkEnd{at.sw, int(v.EgressPort)}]
		if !ok {
			t.Fatalf("%s to %s, port %d: %s sent it to port %d, no link", src.Name, dst.Name, sport, at.sw, v.EgressPort)
		}
		at = next
	}
	t.Fatalf("%s to %s, port %d: path %v loops", src.Name, dst.Name, sport, path)
	return nil
}

// TestClosECMPSeedsUseEveryCore follows flows (UDP source ports, as UET's
// entropies are) between two pods of a fat tree (k=4) under ECMP: with
// one hash at every switch (SwitchSeeds off) the aggregation switch
// repeats its edge switch's choice and the flows reach only 2 of the 4
// cores; with a seed per switch they reach all 4, each with its share.
func TestClosECMPSeedsUseEveryCore(t *testing.T) {
	ft, err := clos.FatTree(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		seeds bool
		cores int
	}{{false, 2}, {true, 4}} {
		t.Run(fmt.Sprintf("seeds=%v", tc.seeds), func(t *testing.T) {
			topo, sws := closTopology(t, ft)
			pol := Policy{LoadBalancing: LoadBalanceECMP, SwitchSeeds: tc.seeds}
			f := programmed(t, topo, pol)
			if err := f.Verify(testContext(t), pol); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			h1, h16 := topo.Hosts[0], topo.Hosts[15] // pods 1 and 4
			const flows = 256
			perCore := map[string]int{}
			for i := range flows {
				p := flowPath(t, topo, sws, h1, h16, uint16(0xc000+i))
				if len(p) != 5 {
					t.Fatalf("port %d: path %v, want 5 switches (edge, aggregation, core, aggregation, edge)", 0xc000+i, p)
				}
				perCore[p[2]]++
			}
			if len(perCore) != tc.cores {
				t.Errorf("flows per core %v: want %d cores", perCore, tc.cores)
			}
			for c, n := range perCore {
				if share := flows / tc.cores; n < share/2 || n > share*3/2 {
					t.Errorf("core %s carries %d of %d flows, want near %d: %v", c, n, flows, share, perCore)
				}
			}
		})
	}
}
