package scenario

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
)

// KindExternal is a topology of machines that already exist: hosts whose
// agents a person started (`homatb agent --listen`) and switches reached
// over P4Runtime, or one configured by hand. No Mininet is involved
// (docs/multi-machine.md).
const KindExternal = "external"

// Target kinds of an external switch: the embedded target and BMv2 run
// tor.p4 as homatb builds it; a Stratum or other P4Runtime switch must
// already run a build of tor.p4 for its chip, and homatb pushes only the
// P4Info and the entries.
const (
	ExternalEmbedded = "embedded"
	ExternalBMv2     = "bmv2"
	ExternalStratum  = "stratum"
	ExternalOther    = "other"
)

// MaxExternalLinkRate bounds link.rate on real machines (400 Gbit/s NICs).
const MaxExternalLinkRate = 400e9

// External lists the machines of a KindExternal topology.
type External struct {
	// Certs is the directory `homatb certs` wrote; the orchestrator dials
	// the agents with its client.pem. Needed unless every agent listens on
	// loopback.
	Certs    string           `yaml:"certs"`
	Hosts    []ExternalHost   `yaml:"hosts"`
	Switches []ExternalSwitch `yaml:"switches"`
}

// ExternalHost is one machine (or namespace) running an agent.
type ExternalHost struct {
	// Name is h1, h2, ...: phases name hosts the same way on every
	// topology, so one scenario file runs emulated or on machines.
	Name string `yaml:"name"`
	// Address is the data-plane address, "10.0.0.1/24" or "10.0.0.1".
	Address string `yaml:"address"`
	// MAC is the data-plane NIC's, for the P4 switch's forwarding entries.
	MAC string `yaml:"mac"`
	// Agent is the agent's control address, host:port.
	Agent string `yaml:"agent"`
}

// ExternalSwitch is a P4Runtime switch the run programs.
type ExternalSwitch struct {
	Name string `yaml:"name"`
	// P4Runtime is its P4Runtime server, host:port.
	P4Runtime string `yaml:"p4runtime"`
	DeviceID  uint64 `yaml:"device_id"`
	Target    string `yaml:"target"`
	// Ports maps each host on the switch to its port.
	Ports map[string]int `yaml:"ports"`
	// AdminSocket is an embedded switch's admin socket when it runs on
	// the orchestrator's machine: statistics and postcards then come from
	// it, as in an emulated run.
	AdminSocket string `yaml:"admin_socket"`
}

// ManagedSwitch reports whether the external topology has a P4 switch the
// run programs; without one, the switch is configured by hand.
func (e *External) ManagedSwitch() bool { return e != nil && len(e.Switches) > 0 }

var externalHostRe = regexp.MustCompile(`^h[1-9][0-9]{0,2}$`)

// ParseHostAddress reads an external host's data-plane address: an IPv4
// address with an optional prefix length (default /24).
func ParseHostAddress(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Prefix{}, fmt.Errorf("expected an IPv4 address such as 10.0.0.1 or 10.0.0.1/24, got %q", s)
	}
	return netip.PrefixFrom(a, 24), nil
}

// checkExternal checks topology.external: named, unique hosts with
// addresses, MACs and agent addresses; credentials for agents off
// loopback; at most one switch with a port for every host.
func (c *checker) checkExternal(s *Scenario) {
	t := s.Topology
	if t.Hosts != 0 || t.Leaves != 0 || t.Spines != 0 || t.HostsPerLeaf != 0 {
		c.errorf("topology.kind", "an external topology lists its machines under external, not hosts, leaves, spines or hosts_per_leaf")
	}
	e := t.External
	if e == nil {
		c.errorf("topology.external", "kind external needs an external section listing the hosts (and switches)")
		return
	}
	if len(e.Hosts) < 2 || len(e.Hosts) > MaxHosts {
		c.errorf("topology.external.hosts", "expected 2 to %d hosts, got %d", MaxHosts, len(e.Hosts))
	}
	names, addrs, macs, agents := map[string]bool{}, map[netip.Addr]string{}, map[string]string{}, map[string]string{}
	needCerts := false
	for i, h := range e.Hosts {
		p := fmt.Sprintf("topology.external.hosts[%d]", i)
		if !externalHostRe.MatchString(h.Name) {
			c.errorf(p+".name", "expected h1, h2, ... (phases name hosts the same way on every topology), got %q", h.Name)
		} else if names[h.Name] {
			c.errorf(p+".name", "host %s listed twice", h.Name)
		}
		names[h.Name] = true
		if a, err := ParseHostAddress(h.Address); err != nil {
			c.errorf(p+".address", "%v", err)
		} else if other, dup := addrs[a.Addr()]; dup {
			c.errorf(p+".address", "address %s already belongs to %s", a.Addr(), other)
		} else {
			addrs[a.Addr()] = h.Name
		}
		if e.ManagedSwitch() || h.MAC != "" {
			if hw, err := net.ParseMAC(h.MAC); err != nil || len(hw) != 6 {
				c.errorf(p+".mac", "expected the data-plane NIC's MAC such as 02:00:00:00:00:01 (the P4 switch forwards by it), got %q", h.MAC)
			} else if other, dup := macs[hw.String()]; dup {
				c.errorf(p+".mac", "MAC %s already belongs to %s", hw, other)
			} else {
				macs[hw.String()] = h.Name
			}
		}
		host, port, err := net.SplitHostPort(h.Agent)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || host == "" {
			c.errorf(p+".agent", "expected the agent's control address host:port (homatb agent --listen), got %q", h.Agent)
			continue
		}
		if other, dup := agents[h.Agent]; dup {
			c.errorf(p+".agent", "agent address %s already belongs to %s", h.Agent, other)
		}
		agents[h.Agent] = h.Name
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			needCerts = true
		}
	}
	if needCerts && e.Certs == "" {
		c.errorf("topology.external.certs", "agents off loopback take only the run's orchestrator: name the directory `homatb certs` wrote")
	}
	c.checkExternalSwitches(s, names)
}

func (c *checker) checkExternalSwitches(s *Scenario, hosts map[string]bool) {
	e := s.Topology.External
	if len(e.Switches) > 1 {
		c.errorf("topology.external.switches", "expected at most one switch (the hosts' ToR; links between switches are not supported yet), got %d", len(e.Switches))
	}
	if len(e.Switches) == 0 {
		// A switch set by hand: nothing can change its queues per transport.
		for i, t := range s.Transports {
			if t.Name == TransportPFabric || t.Name == TransportNDP || t.UET.TrimThresholdPkts > 0 {
				c.errorf(fmt.Sprintf("transports[%d].name", i), "%s needs a P4 switch's port modes; an external topology without switches has none", t.Name)
			}
		}
		return
	}
	for i, sw := range e.Switches {
		p := fmt.Sprintf("topology.external.switches[%d]", i)
		if !nameRe.MatchString(sw.Name) {
			c.errorf(p+".name", "expected a name of lower-case letters, digits, '-' and '_', got %q", sw.Name)
		}
		if _, _, err := net.SplitHostPort(sw.P4Runtime); err != nil {
			c.errorf(p+".p4runtime", "expected the switch's P4Runtime address host:port, got %q", sw.P4Runtime)
		}
		switch sw.Target {
		case ExternalEmbedded, ExternalBMv2, ExternalStratum, ExternalOther:
		default:
			c.errorf(p+".target", "expected %q, %q, %q or %q, got %q", ExternalEmbedded, ExternalBMv2, ExternalStratum, ExternalOther, sw.Target)
		}
		if sw.AdminSocket != "" && sw.Target != ExternalEmbedded {
			c.errorf(p+".admin_socket", "only the embedded target has an admin socket, not %q", sw.Target)
		}
		used := map[int]string{}
		for _, h := range slices.Sorted(maps.Keys(sw.Ports)) {
			port := sw.Ports[h]
			if !hosts[h] {
				c.errorf(p+".ports."+h, "no host %s in topology.external.hosts", h)
			}
			if port < 1 || port > MaxPorts {
				c.errorf(p+".ports."+h, "expected a port from 1 to %d, got %d", MaxPorts, port)
			}
			if other, dup := used[port]; dup {
				c.errorf(p+".ports."+h, "port %d already belongs to %s", port, other)
			}
			used[port] = h
		}
		for _, h := range s.Topology.External.Hosts {
			if _, ok := sw.Ports[h.Name]; !ok && hosts[h.Name] {
				c.errorf(p+".ports", "host %s has no port on switch %s", h.Name, sw.Name)
			}
		}
	}
}
