package topo

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/homatb/homatb/testbed/scenario"
)

// External describes the machines of an external topology as a Network:
// hosts at their own addresses and MACs on the ports the switch's port map
// gives (no port without a P4 switch), switches at their P4Runtime
// addresses. Nothing is named after the tag: the run creates no node.
func External(e *scenario.External, tag string) (*Network, error) {
	if e == nil {
		return nil, fmt.Errorf("topology: kind external without an external section")
	}
	n := &Network{Tag: tag}
	for _, sw := range e.Switches {
		s := Switch{Name: sw.Name, DeviceID: sw.DeviceID, Addr: sw.P4Runtime, Target: sw.Target, Intfs: map[int]string{}}
		s.Ports = slices.Sorted(maps.Values(sw.Ports))
		n.Switches = append(n.Switches, s)
	}
	for _, h := range e.Hosts {
		pfx, err := scenario.ParseHostAddress(h.Address)
		if err != nil {
			return nil, fmt.Errorf("topology: host %s: %w", h.Name, err)
		}
		idx, err := strconv.Atoi(strings.TrimPrefix(h.Name, "h"))
		if err != nil {
			return nil, fmt.Errorf("topology: host name %q: expected h1, h2, ...", h.Name)
		}
		host := Host{Name: h.Name, Index: idx, IP: pfx.Addr(), Prefix: pfx.Bits(), MAC: h.MAC}
		for _, sw := range e.Switches {
			if p, ok := sw.Ports[h.Name]; ok {
				host.Switch, host.Port = sw.Name, p
			}
		}
		n.Hosts = append(n.Hosts, host)
	}
	return n, nil
}
