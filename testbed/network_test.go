package testbed

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
	"github.com/homatb/homatb/testbed/topo"
)

// TestMininetSpecAndControllerAgree: the runner's build request and the
// controller's topology are both derived from one topo.Network, so the
// switches serve where the controller dials and the links join the ports
// the controller programs.
func TestMininetSpecAndControllerAgree(t *testing.T) {
	tests := []struct {
		name   string
		topo   scenario.Topology
		target string
		links  int // host links + switch links
	}{
		{"star", scenario.Topology{Kind: scenario.KindStar, Hosts: 4}, scenario.TargetEmbedded, 4},
		{"leaf-spine bmv2", scenario.Topology{Kind: scenario.KindLeafSpine, Leaves: 2, Spines: 2, HostsPerLeaf: 3}, scenario.TargetBMv2, 6 + 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := topo.Layout(tc.topo, "hb0c0de")
			if err != nil {
				t.Fatal(err)
			}
			bmv2 := tc.target == scenario.TargetBMv2
			if err := assignPorts(n, bmv2); err != nil {
				t.Fatal(err)
			}
			s := &scenario.Scenario{Link: scenario.Link{Rate: 100e6, MTU: 1500, Shaper: "htb"},
				Switch: scenario.Switch{Target: tc.target, QueueDepthPkts: 64, Pcap: true}}
			files := switchFiles{binary: "/bin/homatb", runDir: "/r", sockDir: "/r/agents", pcap: true}
			if bmv2 {
				files.bmv2JSON = "/abs/tor.json"
			}
			if bmv2 {
				switches.PlaceBMv2(n, files.sockDir)
			}
			spec, err := mininetSpec(n, n.Fabric(s), s, files)
			if err != nil {
				t.Fatal(err)
			}
			ct, err := switches.ControllerTopology(n, n.Fabric(s), s, files.bmv2JSON)
			if err != nil {
				t.Fatal(err)
			}
			if len(spec.Hosts) != len(ct.Hosts) || len(spec.Switches) != len(ct.Switches) || len(spec.Links) != tc.links {
				t.Fatalf("spec %d hosts %d switches %d links, controller %d hosts %d switches",
					len(spec.Hosts), len(spec.Switches), len(spec.Links), len(ct.Hosts), len(ct.Switches))
			}
			for i, sw := range spec.Switches {
				c := ct.Switches[i]
				want := "127.0.0.1:" + strconv.Itoa(sw.GRPCPort)
				if bmv2 {
					want = "unix:///r/agents/" + sw.Name + "-p4rt.sock"
					if sw.GRPCSocket != "/r/agents/"+sw.Name+"-p4rt.sock" || sw.PortShaper == nil || sw.PortShaper.RateBps != 100e6 ||
						sw.PortShaper.LimitPkts != 64 || len(sw.PortShaper.DSCPQueue) != 8 || sw.PortShaper.DSCPQueue["56"] != 7 {
						t.Errorf("switch %s: BMv2 socket %q shaper %+v", sw.Name, sw.GRPCSocket, sw.PortShaper)
					}
				} else if sw.GRPCSocket != "" || sw.PortShaper != nil || sw.Notifications != "" {
					t.Errorf("embedded switch %s has BMv2 settings: %+v", sw.Name, sw)
				}
				if c.Name != sw.Name || c.Address != want || sw.GRPCPort == 0 {
					t.Errorf("switch %s serves on %d, controller dials %s %s", sw.Name, sw.GRPCPort, c.Name, c.Address)
				}
				if bmv2 != (sw.Kind == "bmv2") || sw.ThriftPort != c.BMv2.ThriftPort || bmv2 != (sw.ThriftPort != 0) {
					t.Errorf("switch %s: kind %s thrift %d, controller thrift %d", sw.Name, sw.Kind, sw.ThriftPort, c.BMv2.ThriftPort)
				}
				if sw.AdminSocket != "/r/agents/"+sw.Name+"-admin.sock" || sw.PcapDir != "/r/pcap" || sw.BMv2JSON != files.bmv2JSON {
					t.Errorf("switch %s files: %+v", sw.Name, sw)
				}
			}
			for i, h := range spec.Hosts {
				c := ct.Hosts[i]
				l := spec.Links[i]
				if h.IP != c.IP.String()+"/16" || h.MAC != c.MAC.String() {
					t.Errorf("host %s: spec %s %s, controller %s %s", h.Name, h.IP, h.MAC, c.IP, c.MAC)
				}
				if l.A != h.Name || !l.ShapeA || l.B != c.Switch || l.BPort != c.Port {
					t.Errorf("host %s link %+v, controller has it on %s port %d", h.Name, l, c.Switch, c.Port)
				}
			}
			for i, l := range spec.Links[len(spec.Hosts):] {
				c := ct.Links[i]
				if l.ShapeA || l.A != c.A || l.APort != c.APort || l.B != c.B || l.BPort != c.BPort || l.AIntf == "" || l.BIntf == "" {
					t.Errorf("switch link %+v, controller %+v", l, c)
				}
			}
		})
	}
}

func TestSchedFlags(t *testing.T) {
	tests := []struct {
		opt  Options
		want []string
	}{
		{Options{}, nil},
		{Options{Realtime: true}, []string{"--rt-priority", "7"}},
		{Options{Slice: 300 * time.Microsecond}, []string{"--slice", "300µs"}},
		{Options{Realtime: true, Slice: time.Millisecond}, []string{"--rt-priority", "7", "--slice", "1ms"}},
	}
	for _, tc := range tests {
		if got := schedFlags(tc.opt, 7); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.opt, got, tc.want)
		}
	}
}

// TestUplinkArgs: with topology.uplink_rate every switch shapes its ports
// toward other switches at that rate, and only those.
func TestUplinkArgs(t *testing.T) {
	n, err := topo.Layout(scenario.Topology{Kind: scenario.KindLeafSpine, Leaves: 2, Spines: 2, HostsPerLeaf: 3}, "hb0c0de")
	if err != nil {
		t.Fatal(err)
	}
	s := &scenario.Scenario{Topology: scenario.Topology{Kind: scenario.KindLeafSpine}, Link: scenario.Link{Rate: 100e6, MTU: 1500}}
	if got := uplinkArgs(n, n.Fabric(s), "s1"); got != nil {
		t.Errorf("without uplink_rate: %v, want none", got)
	}
	s.Topology.UplinkRate = 400e6
	f := n.Fabric(s)
	for _, sw := range n.Switches {
		args := uplinkArgs(n, f, sw.Name)
		var links int
		for _, l := range n.Links {
			if l.A == sw.Name || l.B == sw.Name {
				links++
			}
		}
		if len(args) != 2*links || links == 0 {
			t.Errorf("%s: %v for %d links to other switches", sw.Name, args, links)
		}
		for i := 1; i < len(args); i += 2 {
			if !strings.HasSuffix(args[i], ":400000000") {
				t.Errorf("%s: %s, want PORT:400000000", sw.Name, args[i])
			}
		}
	}
}
