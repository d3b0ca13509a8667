package scenario

import (
	"errors"
	"fmt"
	"github.com/homatb/homatb/internal/fabric"
	"math/bits"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/internal/hostset"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/wire"
)

// Limits the checks enforce, with the reason for each in docs/scenarios.md.
const (
	MaxPorts        = 63   // switch ports 1..63 (counter index port*8+queue < 512)
	MaxHosts        = 250  // one /24 of host addresses per leaf, and two vCPUs
	MaxLinkRate     = 1e9  // Mininet's TCLink shapes up to 1000 Mbit/s
	MinLinkRate     = 1e6  // below this the shapers' burst dominates
	MaxExperiments  = 1000 // a sweep beyond this is almost surely a mistake
	MaxMessageBytes = 10e6 // agents' message limit
	// MaxSimMessageBytes is the twin's message limit: its hosts carry
	// only each message's first bytes (simnet's HeadBytes), so the Homa
	// paper's workloads can run whole (W5 reaches 29.4 MB).
	MaxSimMessageBytes = MaxTCPMessageBytes
	MaxDuration        = time.Hour
)

var nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// checker collects errors with the line of each field, honouring lines of
// swept values (which come from the sweep section, not the field itself).
type checker struct {
	file      string
	idx       lineIndex
	overrides map[string]int
	errs      Errors
	// SizeSpec validates a size spec and returns its mean and longest
	// length.
	sizeSpec func(string) (SizeStats, error)
	// simulate: the scenario is for the simulator (Options.Simulate).
	simulate bool
}

// maxMessage is the longest message an engine transport may be set to
// carry: the agents' limit in emulation, the twin's in simulation.
func (c *checker) maxMessage() int {
	if c.simulate {
		return MaxSimMessageBytes
	}
	return MaxMessageBytes
}

// maxMessageWhy says where maxMessage's limit comes from, for errors.
func (c *checker) maxMessageWhy() string {
	if c.simulate {
		return " (the twin's limit)"
	}
	return fmt.Sprintf(" (the agents' limit in emulation; homatb run --simulate takes up to %d)", MaxSimMessageBytes)
}

func (c *checker) errorf(path, format string, args ...any) {
	line := c.idx.lineOf(path)
	for p, l := range c.overrides {
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			line = l
		}
	}
	c.errs = append(c.errs, &Error{File: c.file, Line: line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

// Defaults applyDefaults gives settings a file leaves out, named once for
// it and for the errors that refuse them written as 0 (explicitZeros).
const (
	defaultMTU                  = 1500
	defaultQueueDepthPkts       = 512
	defaultDuration             = 10 * time.Second
	defaultCalibrationSamples   = 20
	defaultTelemetryInterval    = 100 * time.Millisecond
	defaultPFabricBufferBytes   = 36_000
	defaultNDPTrimThresholdPkts = 8
)

// zeroMeansDefault is a setting whose zero value applyDefaults replaces:
// written as 0 in a file, it would silently become the default, so Plan
// refuses it.
type zeroMeansDefault struct {
	path, want string
}

// explicitZeros lists the settings of s, before its defaults are applied,
// that the file sets to a zero applyDefaults would replace.
func explicitZeros(s *Scenario, given func(string) bool) []zeroMeansDefault {
	var out []zeroMeansDefault
	add := func(zero bool, path, want string) {
		if zero && given(path) {
			out = append(out, zeroMeansDefault{path, want})
		}
	}
	add(s.Topology.Kind == KindLeafSpine && s.Topology.Spines == 0, "topology.spines", "1 or more spines (left out: 1)")
	add(s.Link.MTU == 0, "link.mtu", fmt.Sprintf("an MTU in bytes (left out: %d)", defaultMTU))
	add(s.Switch.QueueDepthPkts == 0, "switch.queue_depth_pkts", fmt.Sprintf("1 or more packets (left out: %d)", defaultQueueDepthPkts))
	add(s.Duration == 0, "duration", fmt.Sprintf("a measurement longer than 0 (left out: %v)", defaultDuration))
	add(s.Repetitions == 0, "repetitions", "1 or more runs (left out: 1)")
	add(s.Calibration.Samples == 0, "calibration.samples", fmt.Sprintf("1 or more samples a size (left out: %d; calibration: {skip: true} measures none)", defaultCalibrationSamples))
	add(s.Telemetry.Interval == 0, "telemetry.interval", fmt.Sprintf("a sampling interval longer than 0 (left out: %v)", defaultTelemetryInterval))
	for i, t := range s.Transports {
		p := fmt.Sprintf("transports[%d]", i)
		add(t.TCP.ConnectionsPerPeer == 0, p+".tcp.connections_per_peer", "1 or more connections (left out: 1)")
		add(t.PFabric.BufferBytes == 0, p+".pfabric.buffer_bytes", fmt.Sprintf("a buffer in bytes (left out: %d)", defaultPFabricBufferBytes))
		add(t.NDP.TrimThresholdPkts == 0, p+".ndp.trim_threshold_pkts", fmt.Sprintf("1 or more packets (left out: %d)", defaultNDPTrimThresholdPkts))
	}
	return out
}

// applyDefaults fills what an author may leave out.
func applyDefaults(s *Scenario) {
	if s.Topology.Kind == "" {
		s.Topology.Kind = KindStar
	}
	if s.Topology.Kind == KindLeafSpine {
		if s.Topology.Spines == 0 {
			s.Topology.Spines = 1
		}
	}
	if s.Link.Rate == 0 {
		s.Link.Rate = 100e6
	}
	if s.Link.MTU == 0 {
		s.Link.MTU = defaultMTU
	}
	if s.Link.Shaper == "" {
		s.Link.Shaper = "htb"
	}
	if s.Switch.Target == "" {
		s.Switch.Target = TargetEmbedded
	}
	if s.Switch.QueueDepthPkts == 0 {
		s.Switch.QueueDepthPkts = defaultQueueDepthPkts
	}
	if s.Switch.Postcards == nil {
		on := s.Switch.Target == TargetEmbedded && s.Switch.Records != rundir.RecordsNone
		s.Switch.Postcards = &on
	}
	if s.Switch.Records == "" {
		s.Switch.Records = rundir.RecordsNone
		if s.Switch.PostcardsOn() {
			s.Switch.Records = rundir.RecordsSampled
		}
	}
	if s.DSCP.Policy == "" {
		s.DSCP.Policy = DSCPClassSelector
	}
	for i := range s.Transports {
		t := &s.Transports[i]
		if t.Name == TransportTCP && t.TCP.Congestion == "" {
			t.TCP.Congestion = "cubic"
		}
		if t.Name == TransportPIAS && t.TCP.Congestion == "" {
			t.TCP.Congestion = "dctcp" // PIAS runs over DCTCP (Bai et al. §4)
		}
		if !t.Engine() && t.TCP.ConnectionsPerPeer == 0 {
			t.TCP.ConnectionsPerPeer = 1
		}
		if t.Name == TransportPFabric && t.PFabric.BufferBytes == 0 {
			t.PFabric.BufferBytes = defaultPFabricBufferBytes
		}
		if t.Name == TransportNDP && t.NDP.TrimThresholdPkts == 0 {
			t.NDP.TrimThresholdPkts = defaultNDPTrimThresholdPkts
		}
	}
	for i := range s.Phases {
		p := &s.Phases[i]
		if p.Collective != nil {
			p.Collective.applyDefaults()
			continue
		}
		if p.ConnectionMatrix != "" {
			continue
		}
		if p.Arrivals == "" {
			p.Arrivals = ArrivalsPoisson
		}
	}
	if s.Duration == 0 {
		s.Duration = Duration(defaultDuration)
	}
	if s.Drain == nil {
		d := Duration(time.Second)
		s.Drain = &d
	}
	if s.Repetitions == 0 {
		s.Repetitions = 1
	}
	if s.HostQdisc == "" {
		s.HostQdisc = HostQdiscNone
	}
	if s.Seed == nil {
		one := uint64(1)
		s.Seed = &one
	}
	if len(s.Calibration.Sizes) == 0 {
		s.Calibration.Sizes = []uint32{100, 1000, 10000, 100000, 1000000}
	}
	if s.Calibration.Samples == 0 {
		s.Calibration.Samples = defaultCalibrationSamples
	}
	if s.Telemetry.Interval == 0 {
		s.Telemetry.Interval = Duration(defaultTelemetryInterval)
	}
}

// check runs every named check over a defaulted scenario.
func (c *checker) check(s *Scenario) {
	for _, f := range []func(*Scenario){
		c.checkName, c.checkTopology, c.checkLink, c.checkSwitch, c.checkDSCP,
		c.checkTransports, c.checkPhases, c.checkTimes, c.checkCalibration, c.checkFaults, c.checkAdversaries, c.checkDefences, c.checkReport, c.checkCapture,
		c.checkSimulation, c.checkCotenancy,
		c.checkMessageLimits, c.checkCalibrationLimits, c.checkOverload,
	} {
		f(s)
	}
}

func (c *checker) checkName(s *Scenario) {
	if !nameRe.MatchString(s.Name) {
		c.errorf("name", "expected a name of lower-case letters, digits, '-' and '_' (at most 40), got %q", s.Name)
	}
}

func (c *checker) checkTopology(s *Scenario) {
	t := s.Topology
	switch t.Kind {
	case KindStar:
		if t.Hosts < 2 || t.Hosts > MaxPorts {
			c.errorf("topology.hosts", "expected 2 to %d hosts on a star (one switch port each), got %d", MaxPorts, t.Hosts)
		}
		if t.Leaves != 0 || t.Spines != 0 || t.HostsPerLeaf != 0 {
			c.errorf("topology.kind", "leaves, spines and hosts_per_leaf belong to kind leaf-spine, not star")
		}
	case KindLeafSpine:
		if t.Hosts != 0 {
			c.errorf("topology.hosts", "a leaf-spine topology takes hosts_per_leaf, not hosts")
		}
		if t.Leaves < 1 || t.Leaves > 16 {
			c.errorf("topology.leaves", "expected 1 to 16 leaves, got %d", t.Leaves)
		}
		if t.Spines < 1 || t.Spines > 8 {
			c.errorf("topology.spines", "expected 1 to 8 spines, got %d", t.Spines)
		}
		if t.HostsPerLeaf < 1 || t.HostsPerLeaf+t.Spines > MaxPorts {
			c.errorf("topology.hosts_per_leaf", "expected 1 to %d hosts per leaf (ports 1..%d are shared with the %d spine uplinks), got %d",
				MaxPorts-t.Spines, MaxPorts, t.Spines, t.HostsPerLeaf)
		}
		if t.Leaves*t.HostsPerLeaf > MaxHosts {
			c.errorf("topology", "expected at most %d hosts in all, got %d", MaxHosts, t.Leaves*t.HostsPerLeaf)
		}
	case KindFatTree, KindRail:
		c.checkClos(s)
	case KindExternal:
		c.checkExternal(s)
		if len(s.Faults) > 0 {
			c.errorf("faults", "fault injection needs the emulated network (it kills agents and drops at the embedded switch); an external topology has none")
		}
	default:
		c.errorf("topology.kind", "expected %q, %q, %q, %q or %q, got %q", KindStar, KindLeafSpine, KindFatTree, KindRail, KindExternal, t.Kind)
	}
	if t.UplinkRate != 0 {
		max, why := Rate(MaxLinkRate), "1Gbit (the embedded switch's shaper in this emulation)"
		if c.simulate {
			max, why = MaxExternalLinkRate, "400Gbit"
		}
		switch {
		case !t.MultiTier():
			c.errorf("topology.uplink_rate", "only a leaf-spine, fat-tree or rail topology has uplinks, not %s", t.Kind)
		case s.Switch.Target == TargetBMv2:
			c.errorf("topology.uplink_rate", "BMv2's port shaper has one rate for every port: leave uplink_rate out or use switch.target embedded")
		case t.UplinkRate < MinLinkRate || t.UplinkRate > max:
			c.errorf("topology.uplink_rate", "expected a rate from 1Mbit to %s, got %s", why, t.UplinkRate)
		}
	}
	if t.LoadBalancing != "" {
		switch {
		case !t.MultiTier():
			c.errorf("topology.load_balancing", "only a leaf-spine, fat-tree or rail topology has several paths to balance, not %s", t.Kind)
		case t.LoadBalancing != LoadBalanceSpray && t.LoadBalancing != LoadBalanceECMP:
			c.errorf("topology.load_balancing", "expected %q (per packet, the default) or %q (per flow), got %q", LoadBalanceSpray, LoadBalanceECMP, t.LoadBalancing)
		}
	}
	if t.CoreRate != 0 {
		max := Rate(MaxLinkRate)
		if c.simulate {
			max = MaxExternalLinkRate
		}
		switch {
		case s.Switch.Target == TargetBMv2:
			c.errorf("topology.core_rate", "BMv2's port shaper has one rate for every port: leave core_rate out or use switch.target embedded")
		case t.CoreRate < MinLinkRate || t.CoreRate > max:
			c.errorf("topology.core_rate", "expected a rate from 1Mbit to %s, got %s", max, t.CoreRate)
		}
	}
	if t.External != nil && t.Kind != KindExternal {
		c.errorf("topology.external", "the external section belongs to kind external, not %s", t.Kind)
	}
}

func (c *checker) checkLink(s *Scenario) {
	if s.Topology.Kind == KindExternal {
		// Real NICs: the rate is theirs, for loads and Homa's RTTbytes;
		// nothing shapes it.
		if s.Link.Rate < MinLinkRate || s.Link.Rate > MaxExternalLinkRate {
			c.errorf("link.rate", "expected the hosts' NIC rate, from 1Mbit to 400Gbit, got %s", s.Link.Rate)
		}
	} else if c.simulate {
		if s.Link.Rate < MinLinkRate || s.Link.Rate > MaxExternalLinkRate {
			c.errorf("link.rate", "expected a rate from 1Mbit to 400Gbit, got %s", s.Link.Rate)
		}
	} else if s.Link.Rate < MinLinkRate || s.Link.Rate > MaxLinkRate {
		c.errorf("link.rate", "expected a rate from 1Mbit to 1Gbit (Mininet's TCLink shapes hosts up to 1000 Mbit/s; homatb run --simulate takes up to 400Gbit), got %s", s.Link.Rate)
	}
	if s.Link.MTU < 576 || s.Link.MTU > 9000 {
		c.errorf("link.mtu", "expected an MTU from 576 to 9000 bytes, got %d", s.Link.MTU)
	}
	if s.Link.Shaper != "htb" && s.Link.Shaper != "tbf" {
		c.errorf("link.shaper", "expected \"htb\" or \"tbf\" (no other shaper is in this kernel), got %q", s.Link.Shaper)
	}
}

func (c *checker) checkSwitch(s *Scenario) {
	if s.Switch.Target != TargetEmbedded && s.Switch.Target != TargetBMv2 {
		c.errorf("switch.target", "expected %q or %q, got %q", TargetEmbedded, TargetBMv2, s.Switch.Target)
	}
	if s.Switch.QueueDepthPkts < 1 || s.Switch.QueueDepthPkts > 100000 {
		c.errorf("switch.queue_depth_pkts", "expected 1 to 100000 packets per queue, got %d", s.Switch.QueueDepthPkts)
	}
	if s.Switch.ECNThresholdPkts < 0 || s.Switch.ECNThresholdPkts >= 1<<19 {
		c.errorf("switch.ecn_threshold_pkts", "expected 0 (off) to %d packets, got %d", 1<<19-1, s.Switch.ECNThresholdPkts)
	}
	if e := s.Switch.ECN; e != nil {
		if s.Switch.ECNThresholdPkts > 0 {
			c.errorf("switch.ecn", "expected either ecn (a RED profile) or ecn_threshold_pkts (a step, Kmin = Kmax), not both")
		}
		if e.KminPkts < 1 || e.KminPkts >= 1<<19-1 {
			c.errorf("switch.ecn.kmin_pkts", "expected 1 to %d packets, got %d", 1<<19-2, e.KminPkts)
		}
		if e.KmaxPkts <= e.KminPkts || e.KmaxPkts >= 1<<19 {
			c.errorf("switch.ecn.kmax_pkts", "expected more than kmin_pkts (%d) and below %d packets (for a step, set kmax_pkts to kmin_pkts + 1 with pmax 1, or use ecn_threshold_pkts), got %d", e.KminPkts, 1<<19, e.KmaxPkts)
		}
		if !(e.Pmax > 0 && e.Pmax <= 1) {
			c.errorf("switch.ecn.pmax", "expected a marking probability at Kmax above 0 and at most 1, got %v", e.Pmax)
		}
	}
	if d := s.Switch.QueueDepthBytes; d != 0 && int(d) < s.Link.MTU {
		c.errorf("switch.queue_depth_bytes", "expected 0 (packets only) or at least one MTU (%d bytes), got %d", s.Link.MTU, d)
	}
	if s.Switch.QueueDepthBytes != 0 && s.Switch.Target == TargetBMv2 {
		c.errorf("switch.queue_depth_bytes", "BMv2's simple_switch limits queues in packets only (queue_depth_pkts); queue_depth_bytes needs target %q", TargetEmbedded)
	}
	switch r := s.Switch.Records; {
	case r != rundir.RecordsAll && r != rundir.RecordsSampled && r != rundir.RecordsNone:
		c.errorf("switch.records", "%q: expected %s, %s or %s", r, rundir.RecordsAll, rundir.RecordsSampled, rundir.RecordsNone)
	case s.Switch.PostcardsOn() && r == rundir.RecordsNone:
		c.errorf("switch.records", "none keeps no postcards, but switch.postcards is on")
	case !s.Switch.PostcardsOn() && r != rundir.RecordsNone:
		c.errorf("switch.records", "%q keeps postcards, but switch.postcards is off", r)
	}
	if s.Switch.PostcardsOn() && s.Switch.Target == TargetBMv2 {
		c.errorf("switch.postcards", "BMv2 keeps no per-packet records; postcards needs target %q", TargetEmbedded)
	}
	c.checkBuffer(s)
	c.checkPFC(s)
}

// checkPFC checks switch.pfc: only the embedded target (and the
// simulator's switches, which run its code) send and obey PAUSE frames.
func (c *checker) checkPFC(s *Scenario) {
	p := s.Switch.PFC
	if p == nil {
		return
	}
	switch {
	case s.Switch.Target == TargetBMv2:
		c.errorf("switch.pfc", "BMv2's simple_switch has no priority flow control (no PAUSE frames, no per-ingress accounting); pfc needs target %q", TargetEmbedded)
		return
	}
	if len(p.Priorities) == 0 {
		c.errorf("switch.pfc.priorities", "expected at least one lossless priority (0..7; RoCE's data uses 3)")
	}
	seen := map[int]bool{}
	for i, q := range p.Priorities {
		if q < 0 || q > 7 || seen[q] {
			c.errorf(fmt.Sprintf("switch.pfc.priorities[%d]", i), "expected a priority (egress queue) 0..7, each once, got %d", q)
		}
		seen[q] = true
	}
	for i, t := range s.Transports {
		// pFabric's rank-ordered queue (queue 0) drops frames it already
		// holds, which PFC's per-port count would never see leave.
		if t.Name == TransportPFabric && seen[0] {
			c.errorf(fmt.Sprintf("transports[%d].name", i), "pfabric drops queued frames by rank, which a lossless queue 0 cannot: leave priority 0 out of switch.pfc.priorities")
		}
	}
	if p.XoffPkts < 1 || p.XoffPkts >= s.Switch.QueueDepthPkts {
		c.errorf("switch.pfc.xoff_pkts", "expected 1 to queue_depth_pkts - 1 (%d) packets, so the switch pauses before a queue drops, got %d", s.Switch.QueueDepthPkts-1, p.XoffPkts)
	}
	if p.XonPkts < 0 || p.XonPkts >= p.XoffPkts {
		c.errorf("switch.pfc.xon_pkts", "expected 0 to xoff_pkts - 1 packets, got %d", p.XonPkts)
	}
	if p.HeadroomPkts < 0 || p.HeadroomPkts > 100000 {
		c.errorf("switch.pfc.headroom_pkts", "expected 0 to 100000 packets beyond queue_depth_pkts, got %d", p.HeadroomPkts)
		return
	}
	if p.XoffPkts >= 1 && p.XoffPkts < s.Switch.QueueDepthPkts {
		c.checkPFCFit(s)
	}
	for i, t := range s.Transports {
		if v := s.KernelPause(t, c.simulate); v != 0 && s.Link.Shaper != "tbf" {
			c.errorf("link.shaper", "transports[%d] (%s) sends kernel TCP on lossless priority %d (switch.pfc.priorities): its hosts obey PAUSE by holding their link's shaper, which needs link.shaper: tbf (an htb held at a low rate stays shut for up to a minute after the resume)", i, t.ID(), bits.TrailingZeros8(v))
			break
		}
	}
}

// checkBuffer checks switch.buffer: each limit holds at least one packet,
// alpha goes with a shared buffer, and only the embedded target has one.
func (c *checker) checkBuffer(s *Scenario) {
	b := s.Switch.Buffer
	if b == (Buffer{}) {
		return
	}
	if s.Switch.Target == TargetBMv2 {
		c.errorf("switch.buffer", "BMv2's simple_switch has per-queue depths only (queue_depth_pkts); buffer needs target %q", TargetEmbedded)
		return
	}
	mtu := ByteSize(s.Link.MTU)
	if b.SharedBytes != 0 && b.SharedBytes < mtu {
		c.errorf("switch.buffer.shared_bytes", "expected 0 (no shared buffer) or at least one MTU (%d bytes), got %d", mtu, b.SharedBytes)
	}
	if b.PortBytes != 0 && b.PortBytes < mtu {
		c.errorf("switch.buffer.port_bytes", "expected 0 (no port limit) or at least one MTU (%d bytes), got %d", mtu, b.PortBytes)
	}
	if b.PortPkts < 0 {
		c.errorf("switch.buffer.port_pkts", "expected 0 (no port limit) or a positive number of packets, got %d", b.PortPkts)
	}
	switch {
	case b.Alpha != 0 && b.SharedBytes == 0:
		c.errorf("switch.buffer.alpha", "alpha sets the dynamic thresholds of a shared buffer: give shared_bytes too")
	case b.Alpha < 0 || b.Alpha > 64 || (b.Alpha != 0 && b.Alpha < 1.0/64):
		c.errorf("switch.buffer.alpha", "expected a dynamic-threshold alpha from 1/64 to 64 (1 is usual), got %g", b.Alpha)
	}
}

func (c *checker) checkDSCP(s *Scenario) {
	switch s.DSCP.Policy {
	case DSCPClassSelector, DSCPSingleQueue:
		if len(s.DSCP.Map) > 0 {
			c.errorf("dscp.map", "a map is used only with policy %q", DSCPMap)
		}
	case DSCPMap:
		if len(s.DSCP.Map) == 0 {
			c.errorf("dscp.map", "policy %q needs at least one DSCP: queue entry", DSCPMap)
		}
		for d, q := range s.DSCP.Map {
			if d < 0 || d > 63 {
				c.errorf("dscp.map."+strconv.Itoa(d), "expected a DSCP value from 0 to 63, got %d", d)
			}
			if q < 0 || q > 7 {
				c.errorf("dscp.map."+strconv.Itoa(d), "expected a queue from 0 (lowest) to 7 (highest), got %d", q)
			}
		}
	default:
		c.errorf("dscp.policy", "expected %q, %q or %q, got %q", DSCPClassSelector, DSCPSingleQueue, DSCPMap, s.DSCP.Policy)
	}
}

func (c *checker) checkTransports(s *Scenario) {
	if len(s.Transports) == 0 {
		c.errorf("transports", "expected at least one transport (%s)", strings.Join(TransportNames, ", "))
	}
	seen, configs := map[string]int{}, map[string]int{}
	for i, t := range s.Transports {
		p := fmt.Sprintf("transports[%d]", i)
		if j, dup := seen[t.ID()]; dup {
			c.errorf(p+".name", "transport %q is listed twice (also transports[%d]); give one a label", t.ID(), j)
		} else if j, dup := configs[t.Config()]; dup {
			c.errorf(p+".label", "configuration %q is listed twice (also transports[%d]); give one another label", t.Config(), j)
		}
		seen[t.ID()] = i
		configs[t.Config()] = i
		if t.Label != "" && !nameRe.MatchString(t.Label) {
			c.errorf(p+".label", "expected lower-case letters, digits, '-' and '_', got %q", t.Label)
		}
		if !slices.Contains(TransportNames, t.Name) {
			c.errorf(p+".name", "expected one of %s, got %q%s", strings.Join(TransportNames, ", "), t.Name, transportHint(t.Name))
			continue
		}
		if t.Engine() {
			c.checkHoma(p+".homa", t, s)
			if t.TCP != (TCPParams{}) {
				c.errorf(p+".tcp", "tcp parameters on %s, which runs on the Homa engine (its parameters are under homa)", t.Name)
			}
		} else {
			c.checkTCP(p, t, s)
			if !reflect.DeepEqual(t.Homa, HomaParams{}) {
				c.errorf(p+".homa", "homa parameters on %s, which is kernel TCP (its parameters are under tcp)", t.Name)
			}
		}
		if t.Name != TransportPFabric && t.PFabric != (PFabricParams{}) {
			c.errorf(p+".pfabric", "pfabric parameters on %s", t.Name)
		}
		if t.Name != TransportNDP && t.NDP != (NDPParams{}) {
			c.errorf(p+".ndp", "ndp parameters on %s", t.Name)
		}
		if t.Name != TransportUET && t.UET != (UETParams{}) {
			c.errorf(p+".uet", "uet parameters on %s", t.Name)
		}
		if keys := t.Homa.RoCEKeys(); t.Name != TransportRoCE && len(keys) > 0 {
			c.errorf(p+".homa."+keys[0], "%s is the roce transport's setting, not %s's", keys[0], t.Name)
		}
		if t.Name != TransportPIAS && (len(t.PIAS.Thresholds) > 0 || t.PIAS.IdleReset != 0) {
			c.errorf(p+".pias", "pias parameters on %s", t.Name)
		}
		switch t.Name {
		case TransportPFabric:
			if s.Switch.Target == TargetBMv2 {
				c.errorf(p+".name", "pfabric needs the switch to serve each port in rank order and drop the largest rank, which BMv2's FIFO queues cannot; it needs target %q", TargetEmbedded)
			}
			if frame := fabric.FrameBytes(s.Link.MTU); t.PFabric.BufferBytes < ByteSize(frame) || t.PFabric.BufferBytes > 1<<31 {
				c.errorf(p+".pfabric.buffer_bytes", "expected at least one frame (%d B) and at most 2 GB, got %d", frame, t.PFabric.BufferBytes)
			}
		case TransportNDP:
			if s.Switch.Target == TargetBMv2 {
				c.errorf(p+".name", "ndp needs the switch to trim packets into its highest-priority queue, which tor.p4 on BMv2 cannot (it sees the queue only in egress); it needs target %q", TargetEmbedded)
			}
			if t.NDP.TrimThresholdPkts < 1 || t.NDP.TrimThresholdPkts > s.Switch.QueueDepthPkts {
				c.errorf(p+".ndp.trim_threshold_pkts", "expected 1 to the queue depth %d, got %d", s.Switch.QueueDepthPkts, t.NDP.TrimThresholdPkts)
			}
		case TransportUET:
			if n := t.UET.TrimThresholdPkts; n != 0 && s.Switch.Target == TargetBMv2 {
				c.errorf(p+".uet.trim_threshold_pkts", "trimming needs the switch to move the trimmed packet into its highest-priority queue, which tor.p4 on BMv2 cannot (it sees the queue only in egress); it needs target %q, or 0 for no trimming", TargetEmbedded)
			} else if n < 0 || n > s.Switch.QueueDepthPkts {
				c.errorf(p+".uet.trim_threshold_pkts", "expected 0 (no trimming) to the queue depth %d, got %d", s.Switch.QueueDepthPkts, n)
			}
			if port := t.Homa.UETPort; port != 0 && port != wire.UETPort && t.UET.TrimThresholdPkts != 0 {
				c.errorf(p+".homa.uet_udp_port", "trimming (uet.trim_threshold_pkts) needs UET on UDP port %d, the one tor.p4 parses as UET; got %d", wire.UETPort, port)
			}
		case TransportPIAS:
			th := t.PIAS.Thresholds
			if len(th) > 7 {
				c.errorf(p+".pias.thresholds", "expected at most 7 thresholds (8 priority levels), got %d", len(th))
			}
			for i := range th {
				if th[i] <= 0 || (i > 0 && th[i] <= th[i-1]) {
					c.errorf(fmt.Sprintf("%s.pias.thresholds[%d]", p, i), "expected ascending byte counts above 0, got %d", th[i])
					break
				}
			}
			if t.PIAS.IdleReset < 0 {
				c.errorf(p+".pias.idle_reset", "expected a duration of at least 0, got %s", t.PIAS.IdleReset.D())
			}
		}
	}
}

// checkReport checks that report.baseline names one of the transports'
// configurations and report.headline_phase one of the phases.
func (c *checker) checkReport(s *Scenario) {
	if h := s.Report.HeadlinePhase; h != "" {
		var names []string
		for _, ph := range s.Phases {
			names = append(names, ph.Name)
		}
		if !slices.Contains(names, h) {
			c.errorf("report.headline_phase", "expected the name of one of the phases (%s), got %q", strings.Join(names, ", "), h)
		}
	}
	b := s.Report.Baseline
	if b == "" {
		return
	}
	var labels []string
	for _, t := range s.Transports {
		if t.Config() == b || t.ID() == b {
			return
		}
		labels = append(labels, t.Config())
	}
	c.errorf("report.baseline", "expected the label of one of the transports (%s), got %q", strings.Join(labels, ", "), b)
}

// checkTCP checks a kernel-TCP transport's tcp block (TCP, PIAS).
func (c *checker) checkTCP(p string, t Transport, s *Scenario) {
	switch t.TCP.Congestion {
	case "bbr":
		if c.simulate {
			// The laws simnet/tcpmodel.LawOf knows.
			c.errorf(p+".tcp.congestion", "%s is emulation-only: the simulator's TCP model has reno (also standing in for cubic), dctcp, bic and nv; run without --simulate or choose one of those", t.TCP.Congestion)
		}
	case "bic":
		if !c.simulate {
			c.errorf(p+".tcp.congestion", "bic is simulation-only (the simulator's TCP model): this kernel has no tcp_bic; run with --simulate, or use cubic, BIC's successor")
		}
	case "reno", "cubic", "nv":
	case "dctcp":
		// DCTCP reacts only to CE marks, which only the switch sets.
		if !s.Switch.Marks() {
			c.errorf(p+".tcp.congestion", "dctcp needs the switch to mark ECN: set switch.ecn_threshold_pkts > 0 (e.g. 20) or switch.ecn")
		}
	default:
		c.errorf(p+".tcp.congestion", "expected reno, cubic, bbr (the kernel's), bic (simulated only), dctcp or nv (homatb's BPF DCTCP and TCP-NV), got %q", t.TCP.Congestion)
	}
	if t.TCP.ConnectionsPerPeer > 64 {
		c.errorf(p+".tcp.connections_per_peer", "expected 1 to 64, got %d", t.TCP.ConnectionsPerPeer)
	}
	if t.TCP.OpenWhenBusy && !c.simulate {
		c.errorf(p+".tcp.open_when_busy", "a connection opened per busy pair is the simulator's TCP model's (homatb run --simulate); the emulated hosts' tcprpc keeps connections_per_peer connections, used in turn: drop open_when_busy or raise connections_per_peer")
	}
	switch {
	case t.TCP.MinRTO < 0:
		c.errorf(p+".tcp.min_rto", "expected a duration of at least 0, got %s", t.TCP.MinRTO.D())
	case t.TCP.MinRTO != 0 && !c.simulate:
		c.errorf(p+".tcp.min_rto", "a retransmission timeout floor is the simulator's TCP model's (homatb run --simulate); the emulated hosts' kernel keeps its own (200 ms): drop min_rto")
	}
	if t.TCP.NICPriorities && !c.simulate {
		c.errorf(p+".tcp.nic_priorities", "a NIC with priority queues is the simulator's (homatb run --simulate); the emulated hosts send through one shaper queue: drop nic_priorities")
	}
}

// checkHoma checks an engine transport's homa block with homaconf's own
// validation (Config.WithDefaults, which the agent runs on the same
// value), naming the line of the key it refuses, and the limit the
// testbed puts on messages.
func (c *checker) checkHoma(p string, t Transport, s *Scenario) {
	h := t.Homa
	if h.Variant != "" && string(h.Variant) != t.Name {
		c.errorf(c.homaPath(p, "variant"), "the variant is the transport's name (%s); expected it or nothing, got %q", t.Name, h.Variant)
		return
	}
	if _, err := t.HomaConfig(s.Fabric()).WithDefaults(); err != nil {
		var he *homaconf.Error
		if !errors.As(err, &he) {
			c.errorf(p, "%v", err)
			return
		}
		// A link setting the engine refuses has its own error already.
		if f := homaField(p, t, he.Key); !strings.HasPrefix(f, "link.") || !c.reported("link") {
			c.errorf(c.homaPath(f, ""), "%s", he.Msg)
		}
	}
	if limit := c.maxMessage(); int(h.MaxMessageBytes) > limit {
		c.errorf(c.homaPath(p, "max_message_bytes"), "expected at most %d bytes%s, got %d", limit, c.maxMessageWhy(), h.MaxMessageBytes)
	}
}

// homaPath is the path of homa key under block p ("" : p itself), under
// extra when an older file set it there.
func (c *checker) homaPath(p, key string) string {
	if key == "" {
		p, key = p[:max(0, strings.LastIndex(p, "."))], p[strings.LastIndex(p, ".")+1:]
	}
	path := p + "." + key
	if _, ok := c.idx[path]; !ok {
		if _, ok := c.idx[p+".extra."+key]; ok {
			return p + ".extra." + key
		}
	}
	return path
}

func (c *checker) checkPhases(s *Scenario) {
	if len(s.Phases) == 0 {
		c.errorf("phases", "expected at least one workload phase")
	}
	hosts := s.Topology.HostNames()
	names := map[string]bool{}
	clientOf := map[string]string{}
	oneWay := -1 // the first client phase's one_way (0/1), -1 before it
	for i, ph := range s.Phases {
		p := fmt.Sprintf("phases[%d]", i)
		if !nameRe.MatchString(ph.Name) {
			c.errorf(p+".name", "expected a phase name of lower-case letters, digits, '-' and '_', got %q", ph.Name)
		} else if names[ph.Name] {
			c.errorf(p+".name", "phase %q is defined twice", ph.Name)
		}
		names[ph.Name] = true
		if ph.ConnectionMatrix != "" {
			s.Phases[i].Matrix = c.checkMatrix(s, p, ph)
			continue
		}
		if ph.Collective != nil || len(ph.Hosts) > 0 {
			c.checkCollective(s, p, ph)
			continue
		}
		clients, err := hostset.Expand(ph.Clients, hosts)
		if err != nil {
			c.errorf(p+".clients", "%v", err)
		} else if len(clients) == 0 {
			c.errorf(p+".clients", "expected at least one client host")
		}
		for _, h := range clients {
			// A host runs one client workload per transport.
			if other, dup := clientOf[h+" "+ph.Transport]; dup {
				c.errorf(p+".clients", "host %s is already a client in phase %q; an agent runs one client workload at a time", h, other)
				break
			}
			clientOf[h+" "+ph.Transport] = ph.Name
		}
		servers, err := hostset.Expand(ph.Servers, hosts)
		if err != nil {
			c.errorf(p+".servers", "%v", err)
		} else if len(servers) == 0 {
			c.errorf(p+".servers", "expected at least one server host")
		} else if len(servers) == 1 && len(clients) == 1 && servers[0] == clients[0] {
			c.errorf(p+".servers", "the only server is the only client (%s); a host does not send to itself", servers[0])
		}
		c.checkArrivals(p, ph)
		c.checkOneWay(s, p, ph, &oneWay)
		if ph.Sizes == "" {
			c.errorf(p+".sizes", "expected a size spec such as fixed:1000000, w4 or uniform:100:1000")
		} else if c.sizeSpec != nil {
			if _, err := c.sizeSpec(ph.Sizes); err != nil {
				c.errorf(p+".sizes", "%v", err)
			}
		}
		if ph.Incast != nil && ph.Incast.Interval <= 0 {
			c.errorf(p+".incast.interval", "expected a positive burst interval such as 50ms")
		}
	}
}

// checkOneWay checks a client phase's load_of and one_way: one-way
// messages need the simulator (their latency ends at another host) and
// no response, and every client phase agrees on them (calibration times
// one kind of message). first is the first client phase's one_way.
func (c *checker) checkOneWay(s *Scenario, p string, ph Phase, first *int) {
	switch ph.LoadOf {
	case "", LoadOfMessages:
	case LoadOfWire:
		if ph.Load == 0 {
			c.errorf(p+".load_of", "load_of says what load counts, but the phase has no load: give a load or drop load_of")
		}
	default:
		c.errorf(p+".load_of", "expected %q (message bytes, the default) or %q (DATA frames with headers and framing, as the Homa paper's simulator counts load), got %q", LoadOfMessages, LoadOfWire, ph.LoadOf)
	}
	this := 0
	if ph.OneWay {
		this = 1
	}
	switch {
	case *first < 0:
		*first = this
	case *first != this:
		c.errorf(p+".one_way", "every client phase must agree on one_way (calibration times one kind of message); an earlier phase has one_way: %v", *first == 1)
	}
	if !ph.OneWay {
		return
	}
	if !c.simulate {
		c.errorf(p+".one_way", "one-way messages are timed from the sender's send to the last byte's arrival at the receiver, which only the simulator sees on one clock (two hosts' clocks and records cannot place it); run with homatb run --simulate, or drop one_way")
	}
	if ph.ResponseBytes != 0 {
		c.errorf(p+".response_bytes", "a one-way message has no response: drop response_bytes (got %d) or one_way", ph.ResponseBytes)
	}
}

func (c *checker) checkArrivals(p string, ph Phase) {
	switch ph.Arrivals {
	case ArrivalsPoisson:
		switch {
		case ph.Load > 0 && ph.RateRPS > 0:
			c.errorf(p+".rate_rps", "give load or rate_rps, not both")
		case ph.Load == 0 && ph.RateRPS == 0 && ph.Incast == nil:
			c.errorf(p+".load", "Poisson arrivals need a load (fraction of the link rate, e.g. 0.5) or a rate_rps")
		case ph.Load < 0 || ph.Load > 1:
			c.errorf(p+".load", "expected a load between 0 and 1 (a fraction of the link rate), got %g", ph.Load)
		case ph.RateRPS < 0:
			c.errorf(p+".rate_rps", "expected a positive rate, got %g", ph.RateRPS)
		}
	case ArrivalsClosed:
		if ph.MaxOutstanding == 0 {
			c.errorf(p+".max_outstanding", "closed-loop arrivals need max_outstanding of at least 1")
		}
		if ph.Load != 0 || ph.RateRPS != 0 {
			c.errorf(p+".arrivals", "closed-loop arrivals take max_outstanding, not load or rate_rps")
		}
	default:
		c.errorf(p+".arrivals", "expected %q or %q, got %q", ArrivalsPoisson, ArrivalsClosed, ph.Arrivals)
	}
}

func (c *checker) checkTimes(s *Scenario) {
	if s.Duration <= 0 || s.Duration.D() > MaxDuration {
		c.errorf("duration", "expected a measurement duration from 1ms to 1h, got %s", s.Duration.D())
	}
	if s.Warmup < 0 || s.Warmup.D() > MaxDuration {
		c.errorf("warmup", "expected a warm-up from 0 to 1h, got %s", s.Warmup.D())
	}
	if *s.Drain < 0 || s.Drain.D() > time.Minute {
		c.errorf("drain", "expected a drain time from 0 to 1m, got %s", s.Drain.D())
	}
	if s.Repetitions < 1 || s.Repetitions > 100 {
		c.errorf("repetitions", "expected 1 to 100 repetitions, got %d", s.Repetitions)
	}
	if s.Telemetry.Interval.D() < 10*time.Millisecond {
		c.errorf("telemetry.interval", "expected a sampling interval of at least 10ms, got %s", s.Telemetry.Interval.D())
	}
}

func (c *checker) checkCalibration(s *Scenario) {
	for i, sz := range s.Calibration.Sizes {
		if sz == 0 || sz > MaxMessageBytes {
			c.errorf(fmt.Sprintf("calibration.sizes[%d]", i), "expected a message size from 1 to %d bytes, got %d", int(MaxMessageBytes), sz)
		}
	}
	if s.Calibration.Samples > 10000 {
		c.errorf("calibration.samples", "expected at most 10000 samples per size, got %d", s.Calibration.Samples)
	}
}

// MultiTier reports whether the topology has links between switches and
// several paths over them: leaf-spine, fat tree, rail.
func (t Topology) MultiTier() bool {
	return t.Kind == KindLeafSpine || t.Kind == KindFatTree || t.Kind == KindRail
}

// HostNames lists the topology's hosts in order: h1, h2, ...
func (t Topology) HostNames() []string {
	if t.Kind == KindExternal {
		if t.External == nil {
			return nil
		}
		out := make([]string, 0, len(t.External.Hosts))
		for _, h := range t.External.Hosts {
			out = append(out, h.Name)
		}
		return out
	}
	n := t.Hosts
	switch t.Kind {
	case KindLeafSpine:
		n = t.Leaves * t.HostsPerLeaf
	case KindFatTree, KindRail:
		n = t.closHosts()
	}
	out := make([]string, 0, max(n, 0))
	for i := 1; i <= n; i++ {
		out = append(out, "h"+strconv.Itoa(i))
	}
	return out
}
