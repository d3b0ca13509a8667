package controller

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/homatb/homatb/controller/p4rtclient"
)

// SwitchMode is how a switch port queues what it sends: tor.p4's port_mode
// actions (docs/transports.md, "Switch modes").
type SwitchMode string

// The switch modes.
const (
	// ModeStrictPriority is the default: eight strict-priority queues.
	ModeStrictPriority SwitchMode = "strict_priority"
	// ModeRankOrder is pFabric's: one queue served smallest rank first,
	// BufferBytes deep, dropping the largest ranks when full. The
	// embedded target only: BMv2 has no rank-ordered queue.
	ModeRankOrder SwitchMode = "rank_order"
	// ModeTrimAbove is NDP's: a Homa DATA frame whose queue holds at least
	// ThresholdPkts frames is trimmed to its header and sent in queue 7.
	// BMv2 trims too, but in egress and without the priority change.
	ModeTrimAbove SwitchMode = "trim_above"
)

// PortSet names the ports of each switch a PortMode applies to.
type PortSet string

// The port sets.
const (
	// PortsAll is every data port of the switch (the default).
	PortsAll PortSet = "all"
	// PortsHosts is the ports hosts attach to.
	PortsHosts PortSet = "hosts"
	// PortsUplinks is the ports that lead to other switches.
	PortsUplinks PortSet = "uplinks"
)

// PortMode puts a set of ports of every switch in one switch mode.
type PortMode struct {
	Mode SwitchMode `yaml:"mode" json:"mode"`
	// Ports is the set of ports; empty means PortsAll.
	Ports PortSet `yaml:"ports,omitempty" json:"ports,omitempty"`
	// BufferBytes is rank_order's buffer per port (bit<32>, at least 1).
	BufferBytes uint32 `yaml:"buffer_bytes,omitempty" json:"buffer_bytes,omitempty"`
	// ThresholdPkts is trim_above's queue length, in frames, from which
	// DATA frames are trimmed (bit<16>, at least 1).
	ThresholdPkts uint16 `yaml:"threshold_pkts,omitempty" json:"threshold_pkts,omitempty"`
}

// Validate checks the mode, the port set and that the mode's argument is
// set (and the other mode's is not).
func (m PortMode) Validate() error {
	switch m.Ports {
	case "", PortsAll, PortsHosts, PortsUplinks:
	default:
		return fmt.Errorf("port mode %s: ports %q: want %q, %q or %q", m.Mode, m.Ports, PortsAll, PortsHosts, PortsUplinks)
	}
	switch m.Mode {
	case ModeStrictPriority:
		if m.BufferBytes != 0 || m.ThresholdPkts != 0 {
			return fmt.Errorf("port mode %s takes no buffer_bytes or threshold_pkts", m.Mode)
		}
	case ModeRankOrder:
		if m.BufferBytes == 0 || m.ThresholdPkts != 0 {
			return fmt.Errorf("port mode %s: needs buffer_bytes > 0 and no threshold_pkts (got %d, %d)", m.Mode, m.BufferBytes, m.ThresholdPkts)
		}
	case ModeTrimAbove:
		if m.ThresholdPkts == 0 || m.BufferBytes != 0 {
			return fmt.Errorf("port mode %s: needs threshold_pkts > 0 and no buffer_bytes (got %d, %d)", m.Mode, m.ThresholdPkts, m.BufferBytes)
		}
	default:
		return fmt.Errorf("port mode %q: want %q, %q or %q", m.Mode, ModeStrictPriority, ModeRankOrder, ModeTrimAbove)
	}
	return nil
}

// ParsePortMode reads a port mode as the CLI spells it:
// "strict_priority", "rank_order:BYTES" or "trim_above:PKTS", optionally
// followed by "@all", "@hosts" or "@uplinks".
func ParsePortMode(s string) (PortMode, error) {
	spec, ports, _ := strings.Cut(strings.TrimSpace(s), "@")
	name, arg, hasArg := strings.Cut(spec, ":")
	m := PortMode{Mode: SwitchMode(name), Ports: PortSet(ports)}
	if hasArg {
		n, err := strconv.ParseUint(arg, 10, 32)
		if err != nil {
			return PortMode{}, fmt.Errorf("port mode %q: argument: %w", s, err)
		}
		switch m.Mode {
		case ModeRankOrder:
			m.BufferBytes = uint32(n)
		case ModeTrimAbove:
			if n > 1<<16-1 {
				return PortMode{}, fmt.Errorf("port mode %q: threshold %d does not fit in 16 bits", s, n)
			}
			m.ThresholdPkts = uint16(n)
		default:
			return PortMode{}, fmt.Errorf("port mode %q: %s takes no argument", s, m.Mode)
		}
	}
	if err := m.Validate(); err != nil {
		return PortMode{}, fmt.Errorf("port mode %q: %w", s, err)
	}
	return m, nil
}

// modePorts returns the ports of switch sw in set, sorted.
func (t *Topology) modePorts(sw string, set PortSet) []int {
	all := t.switchPorts(sw)
	if set == "" || set == PortsAll {
		return all
	}
	var hosts []int
	for _, h := range t.Hosts {
		if h.Switch == sw {
			hosts = append(hosts, h.Port)
		}
	}
	if set == PortsHosts {
		slices.Sort(hosts)
		return slices.Compact(hosts)
	}
	return slices.DeleteFunc(all, func(p int) bool { return slices.Contains(hosts, p) })
}

// portModeEntries lists the port_mode entries of switch sw (target target)
// for modes, by port. A port named by two modes is an error, as is
// rank_order on BMv2, which cannot order a queue by rank.
func (t *Topology) portModeEntries(sw, target string, modes []PortMode) ([]p4rtclient.Entry, error) {
	byPort := map[int]p4rtclient.Entry{}
	for _, m := range modes {
		if m.Mode == ModeRankOrder && target == TargetBMv2 {
			return nil, fmt.Errorf("switch %q: port mode %s needs the embedded target: BMv2 (v1model) has no rank-ordered queue", sw, m.Mode)
		}
		e := p4rtclient.Entry{Table: tablePortMode}
		switch m.Mode {
		case ModeStrictPriority:
			e.Action = actionStrictPriority
		case ModeRankOrder:
			e.Action = actionRankOrder
			e.Params = map[string]p4rtclient.Value{"buffer_bytes": p4rtclient.Uint(uint64(m.BufferBytes))}
		case ModeTrimAbove:
			e.Action = actionTrimAbove
			e.Params = map[string]p4rtclient.Value{"threshold_pkts": p4rtclient.Uint(uint64(m.ThresholdPkts))}
		}
		for _, port := range t.modePorts(sw, m.Ports) {
			if _, dup := byPort[port]; dup {
				return nil, fmt.Errorf("switch %q: port %d is in two port modes", sw, port)
			}
			e.Match = []p4rtclient.Match{p4rtclient.Exact(fieldEgressSpec, p4rtclient.Uint(uint64(port)))}
			byPort[port] = e
		}
	}
	out := make([]p4rtclient.Entry, 0, len(byPort))
	for _, port := range slices.Sorted(maps.Keys(byPort)) {
		out = append(out, byPort[port])
	}
	return out, nil
}
