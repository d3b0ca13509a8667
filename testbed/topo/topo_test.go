package topo

import (
	"testing"

	"github.com/homatb/homatb/testbed/scenario"
)

func TestLayout(t *testing.T) {
	tests := []struct {
		name          string
		topo          scenario.Topology
		hosts, sws    int
		links         int
		maxSwitchPort int
	}{
		{"star", scenario.Topology{Kind: scenario.KindStar, Hosts: 10}, 10, 1, 0, 10},
		{"largest star", scenario.Topology{Kind: scenario.KindStar, Hosts: scenario.MaxPorts}, scenario.MaxPorts, 1, 0, scenario.MaxPorts},
		{"leaf-spine", scenario.Topology{Kind: scenario.KindLeafSpine, Leaves: 3, Spines: 2, HostsPerLeaf: 4}, 12, 5, 6, 6},
		{"wide leaf-spine", scenario.Topology{Kind: scenario.KindLeafSpine, Leaves: 16, Spines: 8, HostsPerLeaf: 15}, 240, 24, 128, 23},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Layout(tc.topo, "hb0a1b2")
			if err != nil {
				t.Fatal(err)
			}
			if len(n.Hosts) != tc.hosts || len(n.Switches) != tc.sws || len(n.Links) != tc.links {
				t.Fatalf("got %d hosts, %d switches, %d links", len(n.Hosts), len(n.Switches), len(n.Links))
			}
			seenIntf, seenIP, seenMAC := map[string]bool{}, map[string]bool{}, map[string]bool{}
			check := func(name string) {
				if len(name) > 15 || !IntfPattern.MatchString(name) {
					t.Errorf("interface %q: too long or not matched by IntfPattern", name)
				}
				if seenIntf[name] {
					t.Errorf("interface %q twice", name)
				}
				seenIntf[name] = true
			}
			for _, h := range n.Hosts {
				check(h.Intf)
				if seenIP[h.IP.String()] || seenMAC[h.MAC] {
					t.Errorf("host %s: duplicate address %s / %s", h.Name, h.IP, h.MAC)
				}
				seenIP[h.IP.String()], seenMAC[h.MAC] = true, true
				if got := n.switchByName(h.Switch).Intfs[h.Port]; got != h.SwitchIntf {
					t.Errorf("host %s: switch side %q, switch says %q", h.Name, h.SwitchIntf, got)
				}
			}
			maxPort := 0
			for _, sw := range n.Switches {
				for _, p := range sw.Ports {
					check(sw.Intfs[p])
					if sw.Name[0] != 'p' {
						maxPort = max(maxPort, p)
					}
				}
			}
			if maxPort != tc.maxSwitchPort {
				t.Errorf("highest ToR port %d, want %d", maxPort, tc.maxSwitchPort)
			}
		})
	}
	if _, err := Layout(scenario.Topology{Kind: scenario.KindStar, Hosts: 2}, "bad"); err == nil {
		t.Error("bad tag accepted")
	}
}

// TestPeers checks that every port of every switch has a peer, that a
// host's port names the host and that a link's ends name each other.
func TestPeers(t *testing.T) {
	for _, tc := range []struct {
		name string
		topo scenario.Topology
		// port of sw must face peer
		sw   string
		port int
		peer string
	}{
		{"star", scenario.Topology{Kind: scenario.KindStar, Hosts: 4}, "s1", 3, "h3"},
		{"leaf-spine host", scenario.Topology{Kind: scenario.KindLeafSpine, Leaves: 3, Spines: 2, HostsPerLeaf: 4}, "l2", 1, "h5"},
		{"leaf-spine uplink", scenario.Topology{Kind: scenario.KindLeafSpine, Leaves: 3, Spines: 2, HostsPerLeaf: 4}, "p2", 3, "l3"},
		{"fat tree", scenario.Topology{Kind: scenario.KindFatTree, K: 4}, "e1", 3, "a1"},
		{"rail", scenario.Topology{Kind: scenario.KindRail, Rails: 2, Servers: 2, Groups: 1, Spines: 2}, "l2", 1, "h2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Layout(tc.topo, "hb0a1b2")
			if err != nil {
				t.Fatal(err)
			}
			peers := n.Peers()
			for _, sw := range n.Switches {
				for _, p := range sw.Ports {
					if peers[sw.Name][p] == "" {
						t.Errorf("%s port %d: no peer", sw.Name, p)
					}
				}
			}
			if got := peers[tc.sw][tc.port]; got != tc.peer {
				t.Errorf("%s port %d faces %q, want %q", tc.sw, tc.port, got, tc.peer)
			}
		})
	}
}
