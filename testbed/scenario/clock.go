package scenario

import (
	"fmt"
	"strings"
	"time"

	"github.com/homatb/homatb/rundir"
)

// Some defaults exist to absorb the emulation's host noise: a 2-vCPU
// machine wakes its pacers late, so the engine lets 10 us of packets
// ahead of the link; its hosts and switches have latencies of their own,
// so the scenario's simulation: block is zero; and its tcprpc keeps one
// connection per pair. In virtual time there is no such noise, and those
// defaults would make the twin model a noisy machine rather than the
// hardware the papers simulated. So a simulated run takes, for every such
// setting the scenario leaves out, the value of that hardware (the Homa
// paper's simulator, HomaSimulation, and the PIAS paper's ns-2 setup);
// an emulated run keeps its own. clockDefaults is the one place that
// decides which.

// Clock defaults of a simulated run: the hardware the papers simulated.
const (
	// simNICBacklog is how far ahead of its link an engine host's pacer
	// may hand packets to the NIC. HomaSimulation's SendController hands
	// the NIC its next packet only when the link is idle; 1 us is the
	// nearest the key's whole microseconds come (less than one full packet
	// at 10 Gbit/s). Linux Homa's qdisc allows 5 us
	// (max_nic_est_backlog_usecs), for real NICs' completion lag.
	simNICBacklog = time.Microsecond
	// simSwitchDelay and simHostDelay are HomaSimulation's fixed
	// latencies (src/dcntopo/omnetpp.ini): switchFixDelay 0.25 us, and
	// 0.5 us for a host to send (hostNicSxThinkTime) and to receive
	// (hostSwTurnAroundTime).
	simSwitchDelay = Duration(250 * time.Nanosecond)
	simHostDelay   = Duration(500 * time.Nanosecond)
	// simECNPkts is the DCTCP paper's marking threshold K: 65 packets at
	// 10 Gbit/s, 20 at 1 Gbit/s (and below), which the PIAS paper's
	// simulations kept for DCTCP underneath PIAS.
	simECNPkts, simECNPktsSlow = 65, 20
)

// ClockDefault is one setting a scenario left out that a simulated run
// filled with the modelled hardware's value instead of the emulation's
// default; the run directory's format (manifest.json) defines it.
type ClockDefault = rundir.ClockDefault

// clockDefaults fills the settings of s that given says the author left
// out with the modelled hardware's values when s is simulated, and
// returns what it filled (nil for an emulated scenario, which keeps the
// emulation's defaults). given reports whether a scenario path was set
// in the file or by a sweep.
func clockDefaults(s *Scenario, simulate bool, given func(path string) bool) []ClockDefault {
	if !simulate {
		return nil
	}
	var out []ClockDefault
	if s.Simulation == nil {
		s.Simulation = &Simulation{}
	}
	for _, d := range []struct {
		key    string
		field  *Duration
		v      Duration
		source string
	}{
		{"switch_delay", &s.Simulation.SwitchDelay, simSwitchDelay, "HomaSimulation's switchFixDelay"},
		{"host_tx_delay", &s.Simulation.HostTxDelay, simHostDelay, "HomaSimulation's hostNicSxThinkTime"},
		{"host_rx_delay", &s.Simulation.HostRxDelay, simHostDelay, "HomaSimulation's hostSwTurnAroundTime"},
	} {
		if p := "simulation." + d.key; !given(p) {
			*d.field = d.v
			out = append(out, ClockDefault{Key: p, Value: d.v.D().String(), Emulated: "0s (the machine's own latencies)", Source: d.source})
		}
	}
	dctcp := false
	for _, t := range s.Transports {
		dctcp = dctcp || (!t.Engine() && t.TCP.Congestion == "dctcp")
	}
	if dctcp && !s.Switch.Marks() && !given("switch.ecn_threshold_pkts") && !given("switch.ecn") {
		s.Switch.ECNThresholdPkts = simECNPkts
		if s.Link.Rate < 10e9 {
			s.Switch.ECNThresholdPkts = simECNPktsSlow
		}
		out = append(out, ClockDefault{Key: "switch.ecn_threshold_pkts", Value: fmt.Sprint(s.Switch.ECNThresholdPkts),
			Emulated: "0 (no marking: a dctcp or pias transport must set it)", Source: "the DCTCP paper's K for the link rate, under DCTCP and PIAS"})
	}
	for i := range s.Transports {
		t := &s.Transports[i]
		p := fmt.Sprintf("transports[%d]", i)
		switch {
		case t.Engine():
			k := p + ".homa.max_nic_backlog_us"
			if t.Homa.MaxNICBacklog == 0 && !given(k) && !given(p+".homa.extra.max_nic_backlog_us") {
				t.Homa.MaxNICBacklog = simNICBacklog
				out = append(out, ClockDefault{Key: k, Value: "1", Emulated: "10 (or 4 full packets' wire time, if longer)",
					Source: "HomaSimulation's SendController: the next packet when the link is idle"})
			}
		case t.Name == TransportPIAS:
			for _, b := range []struct {
				key   string
				field *bool
			}{{"open_when_busy", &t.TCP.OpenWhenBusy}, {"nic_priorities", &t.TCP.NICPriorities}} {
				if k := p + ".tcp." + b.key; !given(k) {
					*b.field = true
					out = append(out, ClockDefault{Key: k, Value: "true", Emulated: "false (not available in emulation)",
						Source: "the PIAS paper's ns-2 simulation: a connection per busy pair, hosts with the switches' priority queues"})
				}
			}
		}
	}
	return out
}

// ClockNote says in one line which defaults a simulated run took from
// the modelled hardware (empty when none), for the manifest's model and
// the report's setup.
func ClockNote(ds []ClockDefault) string {
	if len(ds) == 0 {
		return ""
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Key + " " + d.Value
	}
	return "defaults of the simulated clock (the modelled hardware's, where the scenario leaves them out; an emulated run keeps its own): " + strings.Join(parts, ", ")
}
