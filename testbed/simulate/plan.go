package simulate

import (
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/runfmt"
	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
	"github.com/homatb/homatb/workloads"
)

// ServerPort is the port every simulated host serves on, as every agent
// does in an emulated run.
const ServerPort = 4000

// Check refuses what the simulator cannot run: transports that are the
// kernel's TCP (a model of them is a later step), BMv2 and machines that
// exist. The error names the file's transports.
func Check(p *scenario.Plan) error {
	s := p.Base
	var kernel []string
	for _, t := range s.Transports {
		if !t.Engine() {
			kernel = append(kernel, t.Config())
		}
	}
	var errs []string
	if len(kernel) > 0 {
		errs = append(errs, fmt.Sprintf("transports %s are the kernel's TCP, which the simulator does not model yet: "+
			"--simulate runs homatb's own engine transports (homa, pfabric, phost, ndp); drop the others or run without --simulate",
			strings.Join(kernel, ", ")))
	}
	if s.Topology.Kind == scenario.KindExternal {
		errs = append(errs, "topology kind external runs on real machines: it cannot be simulated")
	}
	for i, f := range s.Faults {
		if f.Loss == nil {
			errs = append(errs, fmt.Sprintf("faults[%d] (%s on %s): the simulator models loss faults only", i, f.Kind(), f.Link))
		}
	}
	if s.Switch.Target == scenario.TargetBMv2 {
		errs = append(errs, "switch target bmv2: the simulator runs the embedded target's pipeline (set switch.target: embedded)")
	}
	if len(errs) > 0 {
		return fmt.Errorf("--simulate: %s", strings.Join(errs, "; "))
	}
	return nil
}

// fabricOf is the laid-out network as the fabric description has it.
func fabricOf(n *topo.Network, s *scenario.Scenario) *fabric.Fabric {
	f := fabric.New(uint64(s.Link.Rate), s.Link.MTU, s.Switch.QueueDepthPkts)
	if s.Topology.Kind == scenario.KindLeafSpine {
		f.InterSwitchLinks = 2
	}
	for _, h := range n.Hosts {
		f.Hosts = append(f.Hosts, fabric.Host{Name: h.Name, IP: h.IP.String(), Switch: h.Switch, Port: h.Port})
	}
	return f
}

// controllerTopology is the layout as the controller programs it; the
// switch addresses are filled in by simnet.StartSwitches.
func controllerTopology(n *topo.Network) (*controller.Topology, error) {
	t := &controller.Topology{}
	for _, sw := range n.Switches {
		t.Switches = append(t.Switches, controller.Switch{Name: sw.Name, DeviceID: sw.DeviceID, Ports: sw.Ports})
	}
	for _, h := range n.Hosts {
		mac, err := controller.ParseMAC(h.MAC)
		if err != nil {
			return nil, err
		}
		t.Hosts = append(t.Hosts, controller.Host{Name: h.Name, IP: h.IP, MAC: mac, Switch: h.Switch, Port: h.Port})
	}
	for _, l := range n.Links {
		t.Links = append(t.Links, controller.Link{A: l.A, APort: l.APort, B: l.B, BPort: l.BPort})
	}
	return t, nil
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

// client is one host's workload in one phase.
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
	meanBytes   float64
	rateRPS     float64
}

// clients works out every client of experiment e: each phase's clients
// against its servers (never themselves), with the seeds, rates and
// schedules an emulated run gives its agents.
func clients(e *scenario.Experiment, n *topo.Network, f *fabric.Fabric) ([]client, map[string]bool, error) {
	s := e.Scenario
	all := s.Topology.HostNames()
	servers := map[string]bool{}
	var out []client
	for pi, ph := range s.Phases {
		cs, err := scenario.ExpandHosts(ph.Clients, all)
		if err != nil {
			return nil, nil, err
		}
		ss, err := scenario.ExpandHosts(ph.Servers, all)
		if err != nil {
			return nil, nil, err
		}
		for _, sv := range ss {
			servers[sv] = true
		}
		mean, err := scenario.MeanSize(ph.Sizes)
		if err != nil {
			return nil, nil, err
		}
		sizes, err := workloads.ParseSizeSpec(ph.Sizes)
		if err != nil {
			return nil, nil, fmt.Errorf("phase %s: %w", ph.Name, err)
		}
		for _, c := range cs {
			h, _ := n.Host(c)
			cl := client{host: c, phase: runfmt.PhaseMeasure, sizes: sizes, outstanding: int(ph.MaxOutstanding), maxRPCs: ph.MaxRPCs,
				respBytes: ph.ResponseBytes, seed: e.Seed*7919 + uint64(pi)*131 + uint64(h.Index), meanBytes: mean, rateRPS: ph.RateRPS}
			for _, sv := range ss {
				if sv == c {
					continue
				}
				sh, _ := n.Host(sv)
				cl.targets = append(cl.targets, netip.AddrPortFrom(sh.IP, ServerPort))
				cl.targetHosts = append(cl.targetHosts, sv)
			}
			if len(cl.targets) == 0 {
				continue
			}
			if ph.Load > 0 {
				cl.rateRPS = f.RateFor(ph.Load, mean)
			}
			switch {
			case ph.Arrivals == scenario.ArrivalsClosed:
			case ph.Incast != nil:
				b, err := workloads.NewBursts(ph.Incast.Interval.D(), ph.Incast.Jitter.D())
				if err != nil {
					return nil, nil, fmt.Errorf("phase %s: %w", ph.Name, err)
				}
				cl.schedule = b
			default:
				p, err := workloads.NewPoisson(cl.rateRPS)
				if err != nil {
					return nil, nil, fmt.Errorf("phase %s: %w", ph.Name, err)
				}
				cl.schedule = p
			}
			out = append(out, cl)
		}
	}
	return out, servers, nil
}

// homaConfig is transport t's engine configuration on fabric f, with the
// calibrated unscheduled bytes and RTT when the scenario leaves them open,
// as an emulated run configures its agents.
func homaConfig(t scenario.Transport, s *scenario.Scenario, f *fabric.Fabric, cal *runfmt.Calibration) homaconf.Config {
	c := t.HomaConfig(s)
	c.LinkBps, c.MTU, c.FrameOverhead = f.RateBps, f.MTU, f.Framing
	if cal != nil {
		if c.UnschedBytes == 0 {
			c.UnschedBytes = cal.UnschedBytes
		}
		if rtt := cal.RTTus[smallestSize(cal.RTTus)]; rtt > 0 {
			c.UnloadedRTT = time.Duration(math.Ceil(rtt*1000)) * time.Nanosecond
		}
	}
	return c
}

func smallestSize(m map[uint32]float64) uint32 {
	first, best := true, uint32(0)
	for k := range m {
		if first || k < best {
			best, first = k, false
		}
	}
	return best
}

// portModes are the switch modes transport t needs on every host-facing
// port, as an emulated run sets them.
func portModes(t scenario.Transport) []controller.PortMode {
	switch t.Name {
	case scenario.TransportPFabric:
		return []controller.PortMode{{Mode: controller.ModeRankOrder, Ports: controller.PortsHosts, BufferBytes: uint32(t.PFabric.BufferBytes)}}
	case scenario.TransportNDP:
		return []controller.PortMode{{Mode: controller.ModeTrimAbove, Ports: controller.PortsHosts, ThresholdPkts: uint16(t.NDP.TrimThresholdPkts)}}
	}
	return nil
}

// policy is the scenario's DSCP policy for the controller.
func policy(s *scenario.Scenario) (controller.Policy, error) {
	p := controller.DefaultPolicy()
	switch s.DSCP.Policy {
	case scenario.DSCPSingleQueue:
		m, err := controller.CollapsedDSCPQueues(1)
		if err != nil {
			return p, err
		}
		p.DSCPQueue = m
	case scenario.DSCPMap:
		p.DSCPQueue = map[uint8]uint8{}
		for d, q := range s.DSCP.Map {
			p.DSCPQueue[uint8(d)] = uint8(q)
		}
	}
	p.ECNThresholdPkts = uint32(s.Switch.ECNThresholdPkts)
	return p, p.Validate()
}

// fixedSize is the size distribution of calibration RPCs of n bytes.
func fixedSize(n uint32) (workloads.SizeDist, error) {
	return workloads.ParseSizeSpec(fmt.Sprintf("fixed:%d", n))
}
