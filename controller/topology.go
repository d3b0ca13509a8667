package controller

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"

	"github.com/homatb/homatb/controller/p4rtclient"
	"github.com/homatb/homatb/p4"

	"gopkg.in/yaml.v3"
)

// Topology is the rack the controller programs: switches, the hosts on their
// ports and the links between switches. docs/controller.md shows the YAML
// form that LoadTopology reads.
type Topology struct {
	Switches []Switch `yaml:"switches" json:"switches"`
	Hosts    []Host   `yaml:"hosts" json:"hosts"`
	Links    []Link   `yaml:"links,omitempty" json:"links,omitempty"`
	// Pipeline is what every switch runs; empty means the embedded tor.p4.
	Pipeline Pipeline `yaml:"pipeline,omitempty" json:"pipeline,omitzero"`
	// RoutePrefix, when set (8..31), routes to the hosts of another switch
	// by the prefixes of this length that hold its hosts and no other
	// switch's (one route per leaf of a fat tree instead of one per host,
	// so a switch's ipv4_lpm holds a route per edge switch); 0 routes every
	// host by its /32.
	RoutePrefix int `yaml:"route_prefix,omitempty" json:"route_prefix,omitempty"`

	// routes are the switches' next hops over every link, searched once
	// per switch after validate (programming, syncing and verifying a
	// switch each ask for them); nil searches every time.
	routes *routeCache
}

// routeCache holds nextHops's answers by switch; the maps it hands out
// are shared and read-only.
type routeCache struct {
	mu   sync.Mutex
	hops map[string]map[string][]int
}

// Pipeline names the files pushed to the switches.
type Pipeline struct {
	// P4Info is a P4Info file (text or binary); empty uses the embedded
	// tor.p4 P4Info.
	P4Info string `yaml:"p4info,omitempty" json:"p4info,omitempty"`
	// BMv2JSON is p4c's BMv2 output for tor.p4, sent as the device config to
	// switches whose target is bmv2.
	BMv2JSON string `yaml:"bmv2_json,omitempty" json:"bmv2_json,omitempty"`
}

// Target kinds of a switch.
const (
	TargetEmbedded = "embedded"
	TargetBMv2     = "bmv2"
)

// Switch is one P4 switch.
type Switch struct {
	Name     string `yaml:"name" json:"name"`
	DeviceID uint64 `yaml:"device_id" json:"device_id"`
	// Address is the P4Runtime server, host:port.
	Address string `yaml:"address" json:"address"`
	// Ports lists the switch's data ports; empty means those used by hosts
	// and links.
	Ports []int `yaml:"ports,omitempty" json:"ports,omitempty"`
	// Target is "embedded" (default) or "bmv2".
	Target string `yaml:"target,omitempty" json:"target,omitempty"`
	// BMv2 holds the simple_switch_CLI settings of a bmv2 switch.
	BMv2 BMv2Queues `yaml:"bmv2,omitempty" json:"bmv2,omitzero"`
}

// BMv2Queues is the queue configuration of a BMv2 switch, which P4Runtime
// cannot set; the controller applies it with simple_switch_CLI.
type BMv2Queues struct {
	// ThriftPort of simple_switch (default 9090).
	ThriftPort int `yaml:"thrift_port,omitempty" json:"thrift_port,omitempty"`
	// RatePPS is set on every queue of every port (0: leave unlimited).
	RatePPS int `yaml:"queue_rate_pps,omitempty" json:"queue_rate_pps,omitempty"`
	// DepthPkts is set on every queue of every port (0: leave BMv2's 64).
	DepthPkts int `yaml:"queue_depth_pkts,omitempty" json:"queue_depth_pkts,omitempty"`
	// NetNS is the network namespace the switch runs in (a path such as
	// /proc/PID/ns/net; empty: this one): its Thrift server is reached on
	// that namespace's loopback.
	NetNS string `yaml:"netns,omitempty" json:"netns,omitempty"`
}

// Host is an end host attached to one switch port.
type Host struct {
	Name   string     `yaml:"name" json:"name"`
	IP     netip.Addr `yaml:"ip" json:"ip"`
	MAC    MAC        `yaml:"mac" json:"mac"`
	Switch string     `yaml:"switch" json:"switch"`
	Port   int        `yaml:"port" json:"port"`
}

// Link joins a port of one switch to a port of another.
type Link struct {
	A     string `yaml:"a" json:"a"`
	APort int    `yaml:"a_port" json:"a_port"`
	B     string `yaml:"b" json:"b"`
	BPort int    `yaml:"b_port" json:"b_port"`
}

// MAC is a 48-bit Ethernet address that reads and writes as text
// ("02:00:00:00:00:01").
type MAC [6]byte

// ParseMAC parses a 48-bit address in any form net.ParseMAC accepts.
func ParseMAC(s string) (MAC, error) {
	hw, err := net.ParseMAC(s)
	if err != nil {
		return MAC{}, err
	}
	if len(hw) != 6 {
		return MAC{}, fmt.Errorf("mac %q: not 48 bits", s)
	}
	return MAC(hw), nil
}

func (m MAC) String() string { return net.HardwareAddr(m[:]).String() }

// MarshalText writes the colon form.
func (m MAC) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses the text form.
func (m *MAC) UnmarshalText(b []byte) error {
	v, err := ParseMAC(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// value returns the address as a P4 value.
func (m MAC) value() p4rtclient.Value { return p4rtclient.Value(m[:]) }

// LoadTopology reads a YAML (or JSON) topology file; unknown keys are
// errors. The result is validated.
func LoadTopology(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var t Topology
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("topology %s: %w", path, err)
	}
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("topology %s: %w", path, err)
	}
	return &t, nil
}

// Switch returns the named switch, or nil.
func (t *Topology) findSwitch(name string) *Switch {
	for i := range t.Switches {
		if t.Switches[i].Name == name {
			return &t.Switches[i]
		}
	}
	return nil
}

// validate checks the topology: unique names, device ids, addresses, IPs and
// MACs; ports in 1..p4.MaxPort used once per switch; hosts and links attached
// to declared switches and ports; and every host reachable from every
// switch. All problems are reported together.
func (t *Topology) validate() error {
	t.routes = &routeCache{hops: map[string]map[string][]int{}} // the topology may have changed since
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(t.Switches) == 0 {
		add("no switches")
	}
	names := map[string]string{} // name -> kind, switches and hosts share a namespace
	devices := map[uint64]string{}
	addrs := map[string]string{}
	declared := map[string]map[int]bool{}
	for i, s := range t.Switches {
		where := fmt.Sprintf("switches[%d] %q", i, s.Name)
		if s.Name == "" {
			add("switches[%d]: no name", i)
		} else if k, dup := names[s.Name]; dup {
			add("%s: name already used by a %s", where, k)
		}
		names[s.Name] = "switch"
		if other, dup := devices[s.DeviceID]; dup {
			add("%s: device_id %d already used by %q", where, s.DeviceID, other)
		}
		devices[s.DeviceID] = s.Name
		if s.Address == "" {
			add("%s: no P4Runtime address", where)
		} else if _, _, err := net.SplitHostPort(s.Address); err != nil {
			add("%s: address %q: %v", where, s.Address, err)
		} else if other, dup := addrs[s.Address]; dup {
			add("%s: address %s already used by %q", where, s.Address, other)
		}
		addrs[s.Address] = s.Name
		if s.Target != "" && s.Target != TargetEmbedded && s.Target != TargetBMv2 {
			add("%s: target %q: want %q or %q", where, s.Target, TargetEmbedded, TargetBMv2)
		}
		declared[s.Name] = map[int]bool{}
		for _, p := range s.Ports {
			if p < 1 || p > p4.MaxPort {
				add("%s: port %d outside 1..%d", where, p, p4.MaxPort)
			}
			if declared[s.Name][p] {
				add("%s: port %d listed twice", where, p)
			}
			declared[s.Name][p] = true
		}
	}
	used := map[string]map[int]string{} // switch -> port -> user
	attach := func(where, sw string, port int) {
		if declared[sw] == nil {
			add("%s: switch %q is not declared", where, sw)
			return
		}
		if port < 1 || port > p4.MaxPort {
			add("%s: port %d outside 1..%d", where, port, p4.MaxPort)
			return
		}
		if len(t.findSwitch(sw).Ports) > 0 && !declared[sw][port] {
			add("%s: port %d is not in switch %q's ports", where, port, sw)
		}
		if used[sw] == nil {
			used[sw] = map[int]string{}
		}
		if other, dup := used[sw][port]; dup {
			add("%s: port %s:%d already used by %s", where, sw, port, other)
		}
		used[sw][port] = where
	}
	ips := map[netip.Addr]string{}
	macs := map[MAC]string{}
	for i, h := range t.Hosts {
		where := fmt.Sprintf("hosts[%d] %q", i, h.Name)
		if h.Name == "" {
			add("hosts[%d]: no name", i)
		} else if k, dup := names[h.Name]; dup {
			add("%s: name already used by a %s", where, k)
		}
		names[h.Name] = "host"
		if !h.IP.Is4() {
			add("%s: ip %v is not an IPv4 address", where, h.IP)
		} else if other, dup := ips[h.IP]; dup {
			add("%s: ip %v already used by %q", where, h.IP, other)
		}
		ips[h.IP] = h.Name
		if h.MAC == (MAC{}) {
			add("%s: no mac", where)
		} else if other, dup := macs[h.MAC]; dup {
			add("%s: mac %v already used by %q", where, h.MAC, other)
		}
		macs[h.MAC] = h.Name
		attach(where, h.Switch, h.Port)
	}
	for i, l := range t.Links {
		where := fmt.Sprintf("links[%d] %s:%d-%s:%d", i, l.A, l.APort, l.B, l.BPort)
		if l.A == l.B {
			add("%s: a link joins two different switches", where)
		}
		attach(where, l.A, l.APort)
		attach(where, l.B, l.BPort)
	}
	if t.RoutePrefix != 0 && (t.RoutePrefix < 8 || t.RoutePrefix > 31) {
		add("route_prefix %d: expected 8 to 31 (or 0: a route per host)", t.RoutePrefix)
	}
	if len(errs) == 0 {
		errs = append(errs, t.checkReachable()...)
	}
	return errors.Join(errs...)
}

func (t *Topology) checkReachable() []error {
	var errs []error
	for _, s := range t.Switches {
		hops := t.nextHops(s.Name)
		for _, h := range t.Hosts {
			if h.Switch != s.Name && len(hops[h.Switch]) == 0 {
				errs = append(errs, fmt.Errorf("host %q (on %q) is unreachable from switch %q", h.Name, h.Switch, s.Name))
			}
		}
	}
	return errs
}

// nextHops returns, for every other switch, the ports of from that start a
// shortest path to it (several when paths tie: the ECMP set), in port order.
func (t *Topology) nextHops(from string) map[string][]int {
	c := t.routes
	if c == nil {
		return t.nextHopsWithout(from, nil)
	}
	c.mu.Lock()
	hops, ok := c.hops[from]
	c.mu.Unlock()
	if !ok {
		hops = t.nextHopsWithout(from, nil)
		c.mu.Lock()
		c.hops[from] = hops
		c.mu.Unlock()
	}
	return hops
}

// nextHopsWithout is nextHops over the links whose ends are not in down.
// It runs once per switch programmed and again per sync: switches and
// ports are numbered and each switch's first-hop ports are a bit set, so
// a search of a fabric of a thousand switches allocates a few slices, not
// a map per switch reached.
func (t *Topology) nextHopsWithout(from string, down map[linkEnd]bool) map[string][]int {
	idx := make(map[string]int32, len(t.Switches))
	var names []string
	num := func(name string) int32 {
		i, ok := idx[name]
		if !ok {
			i = int32(len(names))
			idx[name] = i
			names = append(names, name)
		}
		return i
	}
	for _, s := range t.Switches {
		num(s.Name)
	}
	// Directed hops, both ways of every link that is up, by source in a
	// compressed adjacency list (each switch's hops in link order).
	type hop struct {
		to   int32
		port int
	}
	var hops []hop
	var srcs []int32
	maxPort := 0
	for _, l := range t.Links {
		if down[linkEnd{l.A, l.APort}] || down[linkEnd{l.B, l.BPort}] || l.APort < 0 || l.BPort < 0 { // validate refuses negative ports
			continue
		}
		a, b := num(l.A), num(l.B)
		hops = append(hops, hop{b, l.APort}, hop{a, l.BPort})
		srcs = append(srcs, a, b)
		maxPort = max(maxPort, l.APort, l.BPort)
	}
	n := len(names)
	start := make([]int32, n+1)
	for _, s := range srcs {
		start[s+1]++
	}
	for i := range n {
		start[i+1] += start[i]
	}
	adj := make([]hop, len(hops))
	fill := slices.Clone(start[:n])
	for k, h := range hops {
		adj[fill[srcs[k]]] = h
		fill[srcs[k]]++
	}
	// Breadth-first search from the source, carrying the set of first-hop
	// ports with which each switch is reached at its shortest distance.
	words := maxPort/64 + 1
	first := make([]uint64, n*words)
	dist := make([]int32, n)
	for i := range dist {
		dist[i] = -1
	}
	src := num(from)
	if int(src) >= n { // a switch with no links: nothing to reach
		return map[string][]int{}
	}
	dist[src] = 0
	frontier := []int32{src}
	var next []int32
	for len(frontier) > 0 {
		next = next[:0]
		for _, sw := range frontier {
			for _, h := range adj[start[sw]:start[sw+1]] {
				if d := dist[h.to]; d >= 0 && d < dist[sw]+1 {
					continue
				}
				if dist[h.to] < 0 {
					dist[h.to] = dist[sw] + 1
					next = append(next, h.to)
				}
				to := first[int(h.to)*words : int(h.to+1)*words]
				if sw == src {
					to[h.port/64] |= 1 << (h.port % 64)
				} else {
					for w, set := range first[int(sw)*words : int(sw+1)*words] {
						to[w] |= set
					}
				}
			}
		}
		frontier, next = next, frontier
	}
	out := map[string][]int{}
	for i := range n {
		if dist[i] <= 0 {
			continue
		}
		var ports []int
		for w, set := range first[i*words : (i+1)*words] {
			for ; set != 0; set &= set - 1 {
				ports = append(ports, w*64+bits.TrailingZeros64(set))
			}
		}
		out[names[i]] = ports
	}
	return out
}

// switchPorts returns a switch's data ports: the declared list, or the ports
// its hosts and links use, sorted.
func (t *Topology) switchPorts(name string) []int {
	if s := t.findSwitch(name); s != nil && len(s.Ports) > 0 {
		return slices.Sorted(slices.Values(s.Ports))
	}
	var ports []int
	for _, h := range t.Hosts {
		if h.Switch == name {
			ports = append(ports, h.Port)
		}
	}
	for _, l := range t.Links {
		if l.A == name {
			ports = append(ports, l.APort)
		}
		if l.B == name {
			ports = append(ports, l.BPort)
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}
