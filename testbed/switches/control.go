// Package switches is the orchestrator's side of the switches: the
// controller programming a run's fabric (topology, DSCP policy, port
// modes, telemetry), each switch's statistics (the embedded target's admin
// socket; BMv2's counters and port shaper), what the emulated network
// needs for BMv2 (pipeline file, namespaces, port shaper, socket buffers)
// and the embedded switch's buffer flags, and BMv2's preflight checks.
package switches

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/controller/p4rtclient"
	fabdesc "github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// ControllerTopology describes the layout, with its switches' assigned
// ports, to the controller.
func ControllerTopology(n *topo.Network, f *fabdesc.Fabric, s *scenario.Scenario, bmv2JSON string) (*controller.Topology, error) {
	t := &controller.Topology{Pipeline: controller.Pipeline{BMv2JSON: bmv2JSON}}
	target := controller.TargetEmbedded
	if s.Switch.Target == scenario.TargetBMv2 {
		target = controller.TargetBMv2
	}
	for _, sw := range n.Switches {
		cs := controller.Switch{Name: sw.Name, DeviceID: sw.DeviceID, Address: sw.Address(), Ports: sw.Ports, Target: target}
		if sw.Target != "" {
			cs.Target = ExternalTarget(sw.Target)
		}
		if target == controller.TargetBMv2 {
			// BMv2 shapes queues in packets per second: the link rate in
			// MTU-sized frames.
			cs.BMv2 = controller.BMv2Queues{RatePPS: f.FramesPerSecond(), DepthPkts: f.QueueDepthPkts,
				ThriftPort: sw.ThriftPort, NetNS: sw.NetNS}
		}
		t.Switches = append(t.Switches, cs)
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
	if s.Topology.Kind == scenario.KindFatTree || s.Topology.Kind == scenario.KindRail {
		// A route per leaf (its /24, topo's addressing), not per host: a
		// fat tree of k=32 has 8,192 hosts, tor.p4's ipv4_lpm holds 1,024.
		t.RoutePrefix = 24
	}
	return t, nil
}

// Policy turns the scenario's DSCP section into the controller's policy.
func Policy(s *scenario.Scenario) (controller.Policy, error) {
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
	if e := s.Switch.ECN; e != nil {
		p.ECNRED = controller.ECNProfile{KminPkts: uint32(e.KminPkts), KmaxPkts: uint32(e.KmaxPkts), Pmax: e.Pmax}
	}
	p.LoadBalancing = s.Topology.LoadBalancing
	// A fat tree's edge and aggregation switches both pick among k/2
	// uplinks: with one hash they would pick alike and use k/2 of the
	// (k/2)² paths between pods.
	p.SwitchSeeds = s.Topology.Kind == scenario.KindFatTree
	if s.Switch.DefencesOn() {
		p.Defences = Defences(s)
	}
	return p, p.Validate()
}

// Defences are the scenario's switch defences for the controller: the
// hosts dscp.trust leaves out re-marked, anti-spoofing, the meters.
func Defences(s *scenario.Scenario) controller.Defences {
	d := controller.Defences{Untrusted: s.UntrustedHosts(), AntiSpoofing: s.Switch.AntiSpoofing}
	if u := s.DSCP.Untrusted; u != nil {
		d.RemarkDSCP = uint8(u.Remark)
	}
	for _, m := range s.Switch.Meters {
		cm := controller.Meter{RateBytes: int64(m.Rate / 8), BurstBytes: int64(m.Burst), Drop: m.Exceed == scenario.ExceedDrop}
		for _, q := range m.Priorities {
			cm.Queues = append(cm.Queues, uint8(q))
		}
		d.Meters = append(d.Meters, cm)
	}
	return d
}

// Control keeps the controller's connections for the whole run: the
// switches are programmed once and read for telemetry in every experiment.
type Control struct {
	switches *controller.Switches
	log      *slog.Logger
	// policy is the installed policy, port modes included.
	policy controller.Policy
	// defences are the scenario's, installed or not (Defences).
	defences controller.Defences

	mu          sync.Mutex
	wroteHeader bool
}

// Program dials every switch, pushes tor.p4 and installs
// forwarding, ARP proxy and the DSCP policy, verified by read-back.
func Program(ctx context.Context, n *topo.Network, fd *fabdesc.Fabric, s *scenario.Scenario, bmv2JSON string, log *slog.Logger) (*Control, error) {
	t, err := ControllerTopology(n, fd, s, bmv2JSON)
	if err != nil {
		return nil, err
	}
	pol, err := Policy(s)
	if err != nil {
		return nil, err
	}
	f, err := controller.Connect(ctx, t, p4rtclient.WithLogger(log))
	if err != nil {
		return nil, err
	}
	if err := f.Program(ctx, pol); err != nil {
		return nil, fmt.Errorf("%w (also: %v)", err, f.Close())
	}
	return &Control{switches: f, log: log, policy: pol, defences: Defences(s)}, nil
}

// portModeKey names a set of port modes, to skip a reprogramming that
// would change nothing.
func portModeKey(modes []controller.PortMode) string { return fmt.Sprint(modes) }

// SetLinkDown moves the fabric's next-hop groups off the link between
// switches a and b (down) or back onto it (controller.Switches.SetLinkDown).
func (c *Control) SetLinkDown(ctx context.Context, a, b string, down bool) error {
	if err := c.switches.SetLinkDown(ctx, a, b, down); err != nil {
		return err
	}
	c.log.Info("switch paths", "link", a+"-"+b, "down", down)
	return nil
}

// PortModes reprograms the switches' port modes, verified by read-back,
// when they differ from the installed ones.
func (c *Control) PortModes(ctx context.Context, modes []controller.PortMode) error {
	if portModeKey(modes) == portModeKey(c.policy.PortModes) {
		return nil
	}
	pol := c.policy
	pol.PortModes = modes
	return c.sync(ctx, pol, "port modes", modes)
}

// Defences installs the scenario's switch defences (on) or removes them,
// verified by read-back, when that changes what the switches hold.
func (c *Control) Defences(ctx context.Context, on bool) error {
	var want controller.Defences
	if on {
		want = c.defences
	}
	if fmt.Sprint(want) == fmt.Sprint(c.policy.Defences) {
		return nil
	}
	pol := c.policy
	pol.Defences = want
	return c.sync(ctx, pol, "defences", on)
}

// sync brings the switches to pol, which differs from the installed
// policy in what (set to v).
func (c *Control) sync(ctx context.Context, pol controller.Policy, what string, v any) error {
	if err := c.switches.Sync(ctx, pol); err != nil {
		return fmt.Errorf("switch %s %v: %w", what, v, err)
	}
	c.policy = pol
	c.log.Info("switch "+what, "value", v)
	return nil
}

// TransportPortModes are the switch modes transport t needs on every
// port, toward hosts and between switches, as the pFabric and NDP papers
// run them: pFabric's rank-ordered queue, NDP's trimming, and UET's when
// its trim threshold is set; none for the others (strict priority). On a leaf-spine fabric, a spine queue in plain
// strict priority held pFabric's short messages behind long ones (the
// shortest half's P99 slowdown 29.9 on the paper's fabric).
func TransportPortModes(t scenario.Transport) []controller.PortMode {
	switch t.Name {
	case scenario.TransportPFabric:
		return []controller.PortMode{{Mode: controller.ModeRankOrder, Ports: controller.PortsAll, BufferBytes: uint32(t.PFabric.BufferBytes)}}
	case scenario.TransportNDP:
		return []controller.PortMode{{Mode: controller.ModeTrimAbove, Ports: controller.PortsAll, ThresholdPkts: uint16(t.NDP.TrimThresholdPkts)}}
	case scenario.TransportUET:
		if n := t.UET.TrimThresholdPkts; n > 0 {
			return []controller.PortMode{{Mode: controller.ModeTrimAbove, Ports: controller.PortsAll, ThresholdPkts: uint16(n)}}
		}
	}
	return nil
}

// Telemetry samples every switch until ctx ends and appends the series to
// w as telemetry.csv rows.
func (c *Control) Telemetry(ctx context.Context, exp string, interval time.Duration, w io.Writer) error {
	p, err := c.switches.NewPoller(interval)
	if err != nil {
		return err
	}
	// Each sample goes to w as it is taken: an experiment's series grows
	// with its length.
	var writeErr error
	write := func(rows []controller.Sample) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if writeErr != nil {
			return
		}
		header := !c.wroteHeader
		c.wroteHeader = true
		writeErr = rundir.WriteTelemetry(w, exp, rows, header)
	}
	p.Stream(write)
	runErr := p.Run(ctx)
	write(nil) // the header, when no sample was taken
	if writeErr != nil {
		return writeErr
	}
	return runErr
}

// ResetQueuePeaks restarts the queue peaks telemetry reports.
func (c *Control) ResetQueuePeaks(ctx context.Context) error {
	return c.switches.ResetQueuePeaks(ctx)
}

// Close closes the connections to the switches.
func (c *Control) Close() error {
	return c.switches.Close()
}

// ExternalTarget maps an external switch's kind to the controller's: BMv2
// gets p4c's JSON as its device config; the embedded target, Stratum and
// others get tor.p4's P4Info only (they run tor.p4 already).
func ExternalTarget(kind string) string {
	if kind == scenario.ExternalBMv2 {
		return controller.TargetBMv2
	}
	return controller.TargetEmbedded
}
