package scenario

import "time"

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
}
