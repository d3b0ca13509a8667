package scenario

import (
	"time"

	"github.com/homatb/homatb/internal/fabric"
)

// Simulation is the simulator's model of the latencies a packet meets
// beyond its serialisation on each link: `homatb run --simulate` charges
// them, an emulated run has its own (the machine's) and ignores them. All
// zero by default: the simulated unloaded RTT is then the frames' wire time
// alone.
type Simulation struct {
	// LinkDelay is each link's propagation delay.
	LinkDelay Duration `yaml:"link_delay"`
	// SwitchDelay is each switch's fixed forwarding latency.
	SwitchDelay Duration `yaml:"switch_delay"`
	// HostTxDelay and HostRxDelay are a host's software and NIC time per
	// packet sent and received.
	HostTxDelay Duration `yaml:"host_tx_delay"`
	HostRxDelay Duration `yaml:"host_rx_delay"`
	// WireOverhead is what every frame costs on every link beyond its
	// bytes; 0 means Ethernet's 24 (preamble and start delimiter, gap,
	// FCS). It exists to measure a departure: HomaSimulation charges a
	// DATA packet 96 B beyond its payload where homatb's costs 114 B
	// (a longer Homa header), and 6 here charges homatb's the same.
	WireOverhead int `yaml:"wire_overhead"`
}

// maxWireOverhead bounds simulation.wire_overhead: more than a header's
// worth is no longer a model of a link's framing.
const maxWireOverhead = 64

// framing is what a link charges a packet beyond its IP packet in the
// simulation m describes (m may be nil).
func (m *Simulation) framing() int {
	if m == nil || m.WireOverhead == 0 {
		return fabric.Framing
	}
	return fabric.EthernetHeader + m.WireOverhead
}

// maxSimDelay bounds each latency: beyond it the model is no longer a
// datacenter's.
const maxSimDelay = Duration(time.Millisecond)

func (c *checker) checkSimulation(s *Scenario) {
	m := s.Simulation
	if m == nil {
		return
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"link_delay", m.LinkDelay}, {"switch_delay", m.SwitchDelay}, {"host_tx_delay", m.HostTxDelay}, {"host_rx_delay", m.HostRxDelay}} {
		if d.v < 0 || d.v > maxSimDelay {
			c.errorf("simulation."+d.key, "expected a latency from 0 to %v, got %v", maxSimDelay.D(), d.v.D())
		}
	}
	switch {
	case m.WireOverhead == 0:
	case !c.simulate && m.WireOverhead != fabric.WireOverhead:
		c.errorf("simulation.wire_overhead", "expected %d (Ethernet's) or nothing in an emulated run, got %d: an emulated link's framing is the kernel's; other values only in a simulated run (homatb run --simulate)", fabric.WireOverhead, m.WireOverhead)
	case m.WireOverhead < 0 || m.WireOverhead > maxWireOverhead:
		c.errorf("simulation.wire_overhead", "expected bytes from 1 to %d, got %d", maxWireOverhead, m.WireOverhead)
	}
}
