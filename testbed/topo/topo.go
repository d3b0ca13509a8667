// Package topo lays out the emulated network of a scenario: node names
// carrying the run tag, interface names, addresses, MACs and switch ports.
// Everything is derived from the scenario and the tag, so the Mininet side,
// the controller and the cleaner agree without asking each other. A run
// adds the loopback ports its switch processes serve on (Switch.GRPCPort,
// Switch.ThriftPort) and then derives the Mininet build request and the
// controller's topology from this one description.
package topo

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"

	"github.com/homatb/homatb/internal/clos"
	"github.com/homatb/homatb/testbed/scenario"
)

// TagPattern matches run tags: "hb" and five hex digits.
var TagPattern = regexp.MustCompile(`^hb[0-9a-f]{5}$`)

// IntfPattern matches the root-namespace interface names a run creates:
// tag, node ("h3", "s1", "l2", "p1"; a fat tree's "e4", "a2", "c1"), "e"
// and a port.
var IntfPattern = regexp.MustCompile(`^(hb[0-9a-f]{5})[hslpeac][0-9]+e[0-9]+$`)

// Host is one end host.
type Host struct {
	Name   string // h1, h2, ...
	Node   string // Mininet node name: tag + name
	Index  int    // 1-based
	IP     netip.Addr
	Prefix int
	MAC    string
	Switch string // the ToR it hangs off
	Port   int    // its port on that ToR
	Intf   string // its NIC (inside its namespace)
	// SwitchIntf is the ToR side of its link (in the root namespace).
	SwitchIntf string
	// Pod is the host's pod in a fat tree (from 1; 0 elsewhere).
	Pod int
}

// Switch is one P4 switch.
type Switch struct {
	Name     string
	Node     string
	DeviceID uint64
	Ports    []int
	// Intfs maps each port to its root-namespace interface.
	Intfs map[int]string
	// GRPCPort is the loopback port of the switch's P4Runtime server and
	// ThriftPort BMv2's simple_switch Thrift port (0 for the embedded
	// switch). Layout leaves both 0; the run assigns free ports.
	GRPCPort   int
	ThriftPort int
	// Addr is the P4Runtime server of a switch the run did not start (an
	// external topology), and Target its kind ("": the scenario's).
	Addr   string
	Target string
	// GRPCSocket, when set, is the Unix socket of the P4Runtime server
	// instead of GRPCPort, and NetNS the switch's network namespace
	// (/proc/PID/ns/net): a BMv2 switch runs in a namespace of its own.
	GRPCSocket string
	NetNS      string
}

// Address is the switch's P4Runtime server: host:port, or unix:///path.
func (s Switch) Address() string {
	if s.Addr != "" {
		return s.Addr
	}
	if s.GRPCSocket != "" {
		return "unix://" + s.GRPCSocket
	}
	return "127.0.0.1:" + strconv.Itoa(s.GRPCPort)
}

// Link joins two switch ports.
type Link struct {
	A     string
	APort int
	B     string
	BPort int
	// Core marks a fat tree's aggregation-to-core link, which runs at the
	// fabric's core rate (fabric.Fabric.Core); other links between
	// switches run at its uplink rate.
	Core bool
}

// Network is the layout of one run's network.
type Network struct {
	Tag      string
	Hosts    []Host
	Switches []Switch
	Links    []Link
}

// Intf names a node's interface on port: tag + node + "e" + port, at most
// 15 characters for every topology the scenario checks allow.
func Intf(tag, node string, port int) string {
	return tag + node + "e" + strconv.Itoa(port)
}

// HostMAC is host index's MAC (locally administered, unique per host).
func HostMAC(index int) string {
	return fmt.Sprintf("02:00:00:00:%02x:%02x", index>>8, index&0xff)
}

// Layout builds the network of a topology for the given run tag.
func Layout(t scenario.Topology, tag string) (*Network, error) {
	if !TagPattern.MatchString(tag) {
		return nil, fmt.Errorf("topology: bad run tag %q", tag)
	}
	n := &Network{Tag: tag}
	switch t.Kind {
	case scenario.KindStar:
		sw := n.addSwitch("s1", 1)
		for i := 1; i <= t.Hosts; i++ {
			n.addHost(sw, i, 0, i)
		}
	case scenario.KindLeafSpine:
		spines := make([]*Switch, t.Spines)
		for s := range t.Spines {
			spines[s] = n.addSwitch("p"+strconv.Itoa(s+1), uint64(100+s+1))
		}
		for l := 1; l <= t.Leaves; l++ {
			leaf := n.addSwitch("l"+strconv.Itoa(l), uint64(l))
			for j := 1; j <= t.HostsPerLeaf; j++ {
				n.addHost(leaf, (l-1)*t.HostsPerLeaf+j, l, j)
			}
			for s := 1; s <= t.Spines; s++ {
				port := t.HostsPerLeaf + s
				n.addPort(leaf, port)
				n.addPort(n.switchByName("p"+strconv.Itoa(s)), l)
				n.Links = append(n.Links, Link{A: leaf.Name, APort: port, B: "p" + strconv.Itoa(s), BPort: l})
			}
		}
	case scenario.KindFatTree, scenario.KindRail:
		if err := n.layClos(t); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("topology: unknown kind %q", t.Kind)
	}
	for _, h := range n.Hosts {
		if len(h.Intf) > 15 {
			return nil, fmt.Errorf("topology: interface name %q longer than 15 characters", h.Intf)
		}
	}
	return n, nil
}

func (n *Network) addSwitch(name string, id uint64) *Switch {
	n.Switches = append(n.Switches, Switch{Name: name, Node: n.Tag + name, DeviceID: id, Intfs: map[int]string{}})
	return &n.Switches[len(n.Switches)-1]
}

func (n *Network) switchByName(name string) *Switch {
	for i := range n.Switches {
		if n.Switches[i].Name == name {
			return &n.Switches[i]
		}
	}
	return nil
}

// Switch returns the named switch.
func (n *Network) Switch(name string) (Switch, bool) {
	if sw := n.switchByName(name); sw != nil {
		return *sw, true
	}
	return Switch{}, false
}

func (n *Network) addPort(sw *Switch, port int) {
	sw.Ports = append(sw.Ports, port)
	sw.Intfs[port] = Intf(n.Tag, sw.Name, port)
}

// layClos lays out a fat tree or rail fabric as package clos describes it.
func (n *Network) layClos(t scenario.Topology) error {
	l, err := t.Clos()
	if err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	byName := map[string]int{}
	for _, s := range l.Switches {
		n.addSwitch(s.Name, s.DeviceID)
		byName[s.Name] = len(n.Switches) - 1
	}
	edges, _, _ := l.Count()
	for i, h := range l.Hosts {
		n.addHost(&n.Switches[byName[h.Switch]], i+1, h.Edge, h.Port)
		if t.Kind == scenario.KindFatTree {
			n.Hosts[i].Pod = i/l.HostsPerPod + 1
		}
		if edges > 255 {
			n.Hosts[i].Prefix = 8 // 10.1.0.0/24 and up are leaves 256 and up
		}
	}
	for _, k := range l.Links {
		n.addPort(&n.Switches[byName[k.A]], k.APort)
		n.addPort(&n.Switches[byName[k.B]], k.BPort)
		n.Links = append(n.Links, Link{A: k.A, APort: k.APort, B: k.B, BPort: k.BPort, Core: k.Tier == clos.TierCore})
	}
	return nil
}

// addHost adds host index on port of sw; hosts are 10.<leaf/256>.<leaf%256>.<j>,
// a /24 per leaf, /16 (one subnet, so hosts reach each other on-link with
// static ARP) while there are fewer than 256 leaves, /8 beyond; the
// switches route by host, or by the /24 of a leaf (controller.Topology's
// RoutePrefix).
func (n *Network) addHost(sw *Switch, index, leaf, j int) {
	name := "h" + strconv.Itoa(index)
	n.addPort(sw, j)
	n.Hosts = append(n.Hosts, Host{
		Name: name, Node: n.Tag + name, Index: index,
		IP: netip.AddrFrom4([4]byte{10, byte(leaf >> 8), byte(leaf), byte(j)}), Prefix: 16,
		MAC: HostMAC(index), Switch: sw.Name, Port: j,
		Intf: Intf(n.Tag, name, 0), SwitchIntf: Intf(n.Tag, sw.Name, j),
	})
}

// Peers maps each switch port of the network to the node at its other
// end: a host's name or another switch's.
func (n *Network) Peers() map[string]map[int]string {
	out := make(map[string]map[int]string, len(n.Switches))
	set := func(sw string, port int, peer string) {
		if out[sw] == nil {
			out[sw] = map[int]string{}
		}
		out[sw][port] = peer
	}
	for _, h := range n.Hosts {
		set(h.Switch, h.Port, h.Name)
	}
	for _, l := range n.Links {
		set(l.A, l.APort, l.B)
		set(l.B, l.BPort, l.A)
	}
	return out
}

// Host returns the named host.
func (n *Network) Host(name string) (Host, bool) {
	for _, h := range n.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}
