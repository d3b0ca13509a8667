package topo

import (
	"github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/testbed/scenario"
)

// Fabric describes the laid-out network: the scenario's fabric
// (Scenario.Fabric, the one place the link rate, MTU, framing and queue
// depth are read from it) with each host's switch and port.
func (n *Network) Fabric(s *scenario.Scenario) *fabric.Fabric {
	f := s.Fabric()
	for _, h := range n.Hosts {
		f.Hosts = append(f.Hosts, fabric.Host{Name: h.Name, IP: h.IP.String(), Switch: h.Switch, Port: h.Port, Pod: h.Pod})
	}
	return f
}
