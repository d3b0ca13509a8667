package scenario

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// pfcInFlightPkts is what one port still delivers into a lossless queue
// after its PAUSE goes out, on links without propagation delay: the frame
// the switch is sending toward the sender (the PAUSE waits behind it), the
// one the sender is serializing and the one on the wire (the twin's
// TestPFCProfileThatFitsIsLossless runs the largest XOFF this allows, with
// the NIC backlog below, without a drop).
const pfcInFlightPkts = 3

// kernelPauseReaction bounds how long an emulated host takes to hold its
// link once a PAUSE arrives: its agent reads the frame from a packet
// socket and changes the link's tbf over netlink (hostagent/linkpause),
// well under a millisecond on an idle machine.
const kernelPauseReaction = time.Millisecond

// pfcInFlight is pfcInFlightPkts plus the frames a port's link carries
// during the PAUSE's round trip when the simulator charges latencies
// (scenario simulation:), plus what a sending host had already handed its
// NIC: a PAUSE stops RoCE's queue pairs, and the NIC's backlog
// (max_nic_backlog_us) still goes out, as it does from an agent whose
// frames wait in the kernel's queue.
func pfcInFlight(s *Scenario, simulate bool) int {
	m := s.Simulation
	if s.Link.Rate == 0 {
		return pfcInFlightPkts
	}
	frameBits := float64(max(s.Link.MTU, 64)+38) * 8 // Ethernet header, FCS, preamble and gap
	frames := func(d time.Duration) float64 { return d.Seconds() * float64(s.Link.Rate) / frameBits }
	// The backlog is whole frames (four by default); the round trip's
	// frames may be cut.
	n := pfcInFlightPkts + pfcNICBacklog(s, func(d time.Duration) int { return int(math.Round(frames(d))) })
	for _, t := range s.Transports {
		if s.KernelPause(t, simulate) != 0 {
			// A host holding its link for kernel TCP: the frames it sends
			// while its agent reads the PAUSE and changes the qdisc, and the
			// one the held bucket still admits.
			n = max(n, pfcInFlightPkts+1+int(math.Ceil(frames(kernelPauseReaction))))
		}
	}
	if m != nil {
		n += int(math.Ceil(frames(2*m.LinkDelay.D() + m.SwitchDelay.D() + m.HostTxDelay.D() + m.HostRxDelay.D())))
	}
	return n
}

// pfcNICBacklog is the most frames the NIC backlog of a RoCE transport of
// s holds, as nicFrames counts a time on the host's link.
func pfcNICBacklog(s *Scenario, nicFrames func(time.Duration) int) int {
	n := 0
	for _, t := range s.Transports {
		if t.Name != TransportRoCE {
			continue
		}
		if cfg, err := t.HomaConfig(s.Fabric()).WithDefaults(); err == nil {
			n = max(n, nicFrames(cfg.MaxNICBacklog))
		}
	}
	return n
}

// pfcFeed is one kind of switch of a topology as PFC sees it: how many
// ingress ports can send toward one of its egress ports.
type pfcFeed struct {
	what    string // "s1", "each leaf", "each spine"
	feeders int
}

// pfcFeeds lists the switches of s's topology by the most ingress ports
// that feed one egress port; none for an external topology.
func pfcFeeds(s *Scenario) []pfcFeed {
	t := s.Topology
	switch t.Kind {
	case KindStar:
		return []pfcFeed{{fmt.Sprintf("the star's switch (%d hosts)", t.Hosts), t.Hosts - 1}}
	case KindLeafSpine:
		// A host's port is fed by the leaf's other hosts and every spine,
		// an uplink by the leaf's hosts; a spine's port toward one leaf by
		// the other leaves.
		leaf := max(t.HostsPerLeaf-1+t.Spines, t.HostsPerLeaf)
		return []pfcFeed{
			{fmt.Sprintf("each leaf (%d hosts, %d spines)", t.HostsPerLeaf, t.Spines), leaf},
			{fmt.Sprintf("each spine (%d leaves)", t.Leaves), t.Leaves - 1},
		}
	case KindFatTree:
		// An edge's host port is fed by its other hosts and its uplinks;
		// an aggregation switch's port by its other k-1 ports; a core's
		// by its other pods.
		return []pfcFeed{
			{fmt.Sprintf("each edge (%d hosts, %d uplinks)", t.edgeHosts(), t.K/2), max(t.edgeHosts()-1+t.K/2, t.edgeHosts())},
			{fmt.Sprintf("each aggregation switch (%d ports)", t.K), t.K - 1},
			{fmt.Sprintf("each core (%d pods)", t.K), t.K - 1},
		}
	case KindRail:
		return []pfcFeed{
			{fmt.Sprintf("each leaf (%d servers, %d spines)", t.Servers, t.Spines), max(t.Servers-1+t.Spines, t.Servers)},
			{fmt.Sprintf("each spine (%d leaves)", max(t.Groups, 1)*t.Rails), max(t.Groups, 1)*t.Rails - 1},
		}
	}
	return nil
}

// checkPFCFit refuses a profile that cannot be lossless, as a switch
// vendor's configuration tool does: for every switch, lossless priority
// and egress port, the frames that can reach the queue before every port
// feeding it has paused (XOFF from each, and what each still sends after
// its PAUSE) must fit the queue's depth and headroom.
func (c *checker) checkPFCFit(s *Scenario) {
	p := s.Switch.PFC
	room := s.Switch.QueueDepthPkts + p.HeadroomPkts
	late := pfcInFlight(s, c.simulate)
	for _, f := range pfcFeeds(s) {
		if f.feeders < 1 {
			continue
		}
		need := f.feeders * (p.XoffPkts + late)
		if need <= room {
			continue
		}
		fit := room/f.feeders - late
		fix := fmt.Sprintf("lower xoff_pkts to at most %d", fit)
		if fit < 1 {
			fix = "xoff_pkts cannot be low enough"
		}
		c.errorf("switch.pfc", "not lossless: at %s, %d ports can feed one egress port, and each may queue xoff_pkts %d plus about %d frames still arriving after its PAUSE: %d packets toward a lossless queue of %d (queue_depth_pkts %d + headroom_pkts %d); %s, or raise headroom_pkts to %d",
			f.what, f.feeders, p.XoffPkts, late, need, room, s.Switch.QueueDepthPkts, p.HeadroomPkts, fix, need-s.Switch.QueueDepthPkts)
		return
	}
}

// KernelPause is the priorities (bit p for priority p) whose PAUSE frames
// the emulated hosts of transport t obey by holding their link's tbf
// (hostagent/linkpause), as a NIC obeys PFC for all it sends: the lossless
// priorities kernel TCP's segments use (DSCP 0, the kernel's default, in
// the queue the DSCP policy gives it). 0 for the engine's transports (RoCE
// obeys in the engine), for PIAS (its segments move between queues as
// they age; one held link would hold them all) and in the simulator, whose
// TCP model obeys no PAUSE.
func (s *Scenario) KernelPause(t Transport, simulate bool) uint8 {
	p := s.Switch.PFC
	if p == nil || simulate || t.Name != TransportTCP {
		return 0
	}
	q := 0
	if s.DSCP.Policy == DSCPMap {
		q = s.DSCP.Map[0] // DSCPs the map leaves out go to queue 0
	}
	if slices.Contains(p.Priorities, q) {
		return 1 << q
	}
	return 0
}

// PFCWarnings says which lossless priorities no transport of s sends on
// while obeying PAUSE (RoCE's data does, at its roce_priority, and kernel
// TCP's segments in emulation: KernelPause): the switch pauses them, but no
// sender stops.
func PFCWarnings(s *Scenario, simulate bool) []string {
	p := s.Switch.PFC
	if p == nil {
		return nil
	}
	var used []int
	for _, t := range s.Transports {
		for q := range 8 {
			if s.KernelPause(t, simulate)&(1<<q) != 0 {
				used = append(used, q)
			}
		}
		if t.Name != TransportRoCE {
			continue
		}
		if cfg, err := t.HomaConfig(s.Fabric()).WithDefaults(); err == nil {
			used = append(used, cfg.RoCEPriority)
		}
	}
	var out []string
	for _, q := range p.Priorities {
		if !slices.Contains(used, q) {
			out = append(out, fmt.Sprintf("switch.pfc: priority %d is lossless but no transport sends on it obeying PAUSE (RoCE's data does, at its roce_priority; kernel TCP's in emulation): the switch would pause senders that never stop", q))
		}
	}
	return out
}
