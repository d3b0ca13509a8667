package simulate

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/simnet/tcpmodel"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// ServerPort is the port every simulated host serves on, as every agent
// does in an emulated run.
const ServerPort = agents.ServerPort

// Check refuses what the simulator cannot run: kernel-TCP congestion
// controls its TCP model lacks (nv, bbr), BMv2 and machines that exist.
// The error names the file's transports.
func Check(p *scenario.Plan) error {
	s := p.Base
	var errs []string
	for _, t := range s.Transports {
		if t.Engine() {
			continue
		}
		if _, err := tcpmodel.LawOf(t.TCP.Congestion); err != nil {
			errs = append(errs, fmt.Sprintf("transport %s: %v; %s stays emulation-only (run without --simulate)", t.Config(), err, t.TCP.Congestion))
		}
	}
	if s.Topology.Kind == scenario.KindExternal {
		errs = append(errs, "topology kind external runs on real machines: it cannot be simulated")
	}
	for i, f := range s.Faults {
		if f.KillAgent != nil {
			errs = append(errs, fmt.Sprintf("faults[%d] (kill_agent on %s): the simulator has no agent processes to kill (loss and down it models)", i, f.Link))
		}
	}
	for i, a := range s.Adversaries {
		if a.Kind != "none" {
			errs = append(errs, fmt.Sprintf("adversaries[%d] (%s on %s): the simulator has no processes to send an adversary's traffic", i, a.Kind, a.Host))
		}
	}
	if s.Capture != nil {
		errs = append(errs, "capture: the simulator has no interfaces to capture packets on (drop capture: or run without --simulate)")
	}
	if s.Switch.Target == scenario.TargetBMv2 {
		errs = append(errs, "switch target bmv2: the simulator runs the embedded target's pipeline (set switch.target: embedded)")
	}
	if len(errs) > 0 {
		return fmt.Errorf("--simulate: %s", strings.Join(errs, "; "))
	}
	return nil
}

// simHosts and simLinks are the layout as simnet takes it.
func simHosts(n *topo.Network) ([]simnet.Host, error) {
	var out []simnet.Host
	for _, h := range n.Hosts {
		mac, err := controller.ParseMAC(h.MAC)
		if err != nil {
			return nil, err
		}
		var m uint64
		for _, b := range mac {
			m = m<<8 | uint64(b)
		}
		out = append(out, simnet.Host{Name: h.Name, IP: h.IP, MAC: m, Switch: h.Switch, Port: uint16(h.Port)})
	}
	return out, nil
}

func simLinks(n *topo.Network, f *fabric.Fabric) []simnet.Link {
	var out []simnet.Link
	for _, l := range n.Links {
		var rate uint64 // the uplink rate
		if l.Core {
			rate = f.Core()
		}
		out = append(out, simnet.Link{A: l.A, APort: uint16(l.APort), B: l.B, BPort: uint16(l.BPort), RateBps: rate})
	}
	return out
}

// byIP are the network's nodes by address.
func byIP(n *simnet.Network) map[netip.Addr]*simnet.Node {
	m := map[netip.Addr]*simnet.Node{}
	for _, h := range n.Nodes() {
		m[h.IP] = h
	}
	return m
}
