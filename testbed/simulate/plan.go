package simulate

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/simnet/tcpmodel"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
	"github.com/homatb/homatb/workloads"
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
		if _, _, sw := f.SwitchLink(); sw && f.Loss != nil {
			errs = append(errs, fmt.Sprintf("faults[%d] (loss on %s): the simulator models loss on hosts' links only; down windows on links between switches it models", i, f.Link))
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

func simLinks(n *topo.Network) []simnet.Link {
	var out []simnet.Link
	for _, l := range n.Links {
		out = append(out, simnet.Link{A: l.A, APort: uint16(l.APort), B: l.B, BPort: uint16(l.BPort)})
	}
	return out
}

// client is one host's workload, as its agent would run it.
type client struct {
	host, phase string
	targets     []netip.AddrPort
	targetHosts []string
	sizes       workloads.SizeDist
	schedule    workloads.Schedule // nil: closed loop
	outstanding int
	maxRPCs     uint64
	respBytes   uint32
	seed        uint64
}

// fixedSize is the size distribution of calibration RPCs of n bytes.
func fixedSize(n uint32) (workloads.SizeDist, error) {
	return workloads.ParseSizeSpec(fmt.Sprintf("fixed:%d", n))
}

// clientsOf are the clients of an experiment's roles, as the simulator
// runs them: each host's workload as its agent would get it.
func clientsOf(ro agents.Roles, n *topo.Network) ([]client, error) {
	byIP := map[netip.Addr]string{}
	for _, h := range n.Hosts {
		byIP[h.IP] = h.Name
	}
	var out []client
	for _, host := range ro.Used {
		w := ro.Clients[host]
		if w == nil {
			continue
		}
		sizes, err := workloads.ParseSizeSpec(w.GetSizes())
		if err != nil {
			return nil, fmt.Errorf("%s: sizes: %w", host, err)
		}
		c := client{host: host, phase: rundir.PhaseMeasure, sizes: sizes, outstanding: int(w.GetMaxOutstanding()),
			maxRPCs: w.GetMaxRpcs(), respBytes: w.GetResponseBytes(), seed: w.GetSeed()}
		for _, t := range w.GetTargets() {
			ap, err := netip.ParseAddrPort(t)
			if err != nil {
				return nil, fmt.Errorf("%s: target %q: %w", host, t, err)
			}
			c.targets, c.targetHosts = append(c.targets, ap), append(c.targetHosts, byIP[ap.Addr()])
		}
		switch {
		case w.GetArrivals() == scenario.ArrivalsClosed:
		case w.GetBurstIntervalUs() > 0:
			us := time.Microsecond
			if c.schedule, err = workloads.NewBursts(time.Duration(w.GetBurstIntervalUs())*us, time.Duration(w.GetBurstJitterUs())*us); err != nil {
				return nil, fmt.Errorf("%s: %w", host, err)
			}
		default:
			if c.schedule, err = workloads.NewPoisson(w.GetRateRps()); err != nil {
				return nil, fmt.Errorf("%s: %w", host, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}
