package scenario

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
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
	// the NIC its next packet only when the link is idle, so a short
	// message waits behind at most the packet on the wire; 1 ns is that
	// (0 would mean the engine's default). Linux Homa's qdisc allows 5 us
	// (max_nic_est_backlog_usecs), for real NICs' completion lag.
	simNICBacklog = time.Nanosecond
	// simSwitchDelay, simHostTxDelay and simHostRxDelay are HomaSimulation's
	// fixed latencies (src/dcntopo/omnetpp.ini and DcnTopo.ned):
	// switchFixDelay 0.25 us on each switch's egress link; a host's
	// packets wait hostSwTurnAroundTime (0.5 us) in its NIC's output hook
	// and hostNicSxThinkTime (0.5 us) on its link to the switch, 1 us in
	// all, and hostSwTurnAroundTime in its input hook when received. Its
	// ideal counts the same 1.5 us (WorkloadSynthesizer's
	// idealMsgEndToEndDelay: two turnarounds and one think time).
	simSwitchDelay = Duration(250 * time.Nanosecond)
	simHostTxDelay = Duration(time.Microsecond)
	simHostRxDelay = Duration(500 * time.Nanosecond)
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
func clockDefaults(s *Scenario, simulate bool, given func(path string) bool, sizeSpec func(string) (SizeStats, error)) []ClockDefault {
	if !simulate {
		return nil
	}
	out := wholeWorkloads(s)
	if d, ok := simulatedDuration(s, given, sizeSpec); ok {
		out = append(out, d)
	}
	longest := longestMessage(s, sizeSpec)
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
		{"host_tx_delay", &s.Simulation.HostTxDelay, simHostTxDelay, "HomaSimulation's hostSwTurnAroundTime (NIC output hook) + hostNicSxThinkTime (host link)"},
		{"host_rx_delay", &s.Simulation.HostRxDelay, simHostRxDelay, "HomaSimulation's hostSwTurnAroundTime (NIC input hook)"},
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
		homaGiven := func(key string) bool { return given(p+".homa."+key) || given(p+".homa.extra."+key) }
		switch {
		case t.Engine():
			if longest > t.MaxMessage() && longest <= MaxSimMessageBytes && t.Homa.MaxMessageBytes == 0 && !homaGiven("max_message_bytes") {
				t.Homa.MaxMessageBytes = uint32(longest)
				out = append(out, ClockDefault{Key: p + ".homa.max_message_bytes", Value: fmt.Sprint(longest), Emulated: fmt.Sprint(t.MaxMessage()) + " (Linux Homa's limit)",
					Source: "HomaSimulation has no message limit: the workload's longest message"})
			}
			if t.Homa.MaxNICBacklog == 0 && !homaGiven("max_nic_backlog_us") {
				t.Homa.MaxNICBacklog = simNICBacklog
				out = append(out, ClockDefault{Key: p + ".homa.max_nic_backlog_us", Value: "0.001", Emulated: "10 (or 4 full packets' wire time, if longer)",
					Source: "HomaSimulation's SendController: the next packet when the link is idle"})
			}
			if d, ok := workloadCutoffs(s, t, p, homaGiven); ok {
				out = append(out, d)
				out = append(out, paperLevels(t, p, homaGiven)...)
			}
			if t.Name == TransportPFabric && t.Homa.Tick == 0 && !homaGiven("tick_us") {
				out = append(out, pfabricTimer(s, t, p, homaGiven)...)
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

// wholeWorkloads keeps the built-in workloads of s's phases whole, as the
// Homa paper's simulator drew them (W5 reaches 29.4 MB), where a size
// spec names one bare: parsing cuts them at workloads.HomaMaxMessage, the
// longest message Linux Homa carries, which an emulated run keeps (its
// agents' limit) and which is no part of the papers' fabric. Cut at 1 MB,
// 30% of W5's messages are 1 MB, 6.6 times as many messages for the same
// load as the whole W5. It returns what it set; the phase's spec then
// says the limit, so every later step (the duration, the message limit,
// the cutoffs, the agents) sees the workload it runs.
func wholeWorkloads(s *Scenario) []ClockDefault {
	var out []ClockDefault
	for i := range s.Phases {
		ph := &s.Phases[i]
		if whole, ok := workloads.WholeBuiltin(ph.Sizes); ok {
			out = append(out, ClockDefault{Key: fmt.Sprintf("phases[%d].sizes", i), Value: whole,
				Emulated: fmt.Sprintf("%s cut at %d bytes (Linux Homa's longest message, as cp_node cuts it)", ph.Sizes, workloads.HomaMaxMessage),
				Source:   "the Homa paper's workloads whole, as HomaSimulation draws them"})
			ph.Sizes = whole
		}
	}
	return out
}

// A simulated run's measured time when the scenario gives none: at least
// simDuration, which the Homa paper's table measures of its fabric
// (scenarios/claims/paper-table.yaml; the emulation's 10 s is hours of a
// 144-host twin and more records than a report holds), and long enough to
// offer simMessages, so that each size bin of the shortest half holds
// enough messages for its P99 (W5 offers only 3,400 in 10 ms, 170-320 a
// bin, and the report's intervals for them had no upper bound); but no
// longer than simMaxDuration, nor than simMaxPackets DATA packets take
// (a simulation's time grows with them: W5 at 80% of the paper's fabric
// offers 20,000 messages in 58 ms, 5.8 million packets).
const (
	simDuration    = Duration(10 * time.Millisecond)
	simMaxDuration = Duration(time.Second)
	simMessages    = 20000
	simMaxPackets  = 10e6
)

// simulatedDuration sets s's measured time when the file gives none and
// every phase is open-loop (a closed loop, a collective or a connection
// matrix keeps the 10 s its work may need), and at least the room
// validation asks for the longest RPC on its link (whole W3's 15 MB take
// 12 ms at 10 Gbit/s).
func simulatedDuration(s *Scenario, given func(path string) bool, sizeSpec func(string) (SizeStats, error)) (ClockDefault, bool) {
	if given("duration") || len(s.Phases) == 0 {
		return ClockDefault{}, false
	}
	for _, ph := range s.Phases {
		if ph.Arrivals != ArrivalsPoisson { // collectives and matrices have none
			return ClockDefault{}, false
		}
	}
	s.Duration = simDuration
	source := "the Homa paper's table measures 10 ms of its fabric; the emulation's 10 s is hours of a 144-host twin"
	rpcs, packets, err := s.offeredPerSecond()
	if err == nil && rpcs > 0 && rpcs*simDuration.D().Seconds() < simMessages {
		secs := min(simMessages/rpcs, simMaxDuration.D().Seconds())
		if packets > 0 {
			secs = min(secs, simMaxPackets/packets)
		}
		// Whole milliseconds, for a duration one can read and write back.
		if d := Duration(time.Duration(math.Ceil(secs*1e3)) * time.Millisecond); d > simDuration {
			s.Duration = d
			source = fmt.Sprintf("%d messages offered (%.0f a millisecond), so that each size bin of the shortest half holds enough for its P99; at least the 10 ms the Homa paper's table measures, at most 1 s or 10 million DATA packets",
				simMessages, rpcs/1e3)
		}
	}
	for _, ph := range s.Phases {
		st, err := sizeStats(ph.Sizes, sizeSpec)
		if err != nil || s.Link.Rate == 0 {
			continue
		}
		wire := s.Fabric().WireTime(st.Max + ph.longestResponse(st))
		if need := Duration(roomFor(wire)); wire > s.Duration.D() && need > s.Duration {
			s.Duration = need
			source += fmt.Sprintf("; raised to twice the %s phase %s's longest RPC takes on its link", wire.Round(time.Microsecond), ph.Name)
		}
	}
	return ClockDefault{Key: "duration", Value: s.Duration.D().String(), Emulated: "10s", Source: source}, true
}

// sizeStats is spec's statistics, an error when there is no spec or no
// parser (validation reports a spec that does not parse).
func sizeStats(spec string, sizeSpec func(string) (SizeStats, error)) (SizeStats, error) {
	if spec == "" || sizeSpec == nil {
		return SizeStats{}, fmt.Errorf("no size spec")
	}
	return sizeSpec(spec)
}

// longestMessage is the longest message s's phases send: their sizes'
// and responses', a connection matrix's largest flow, a collective's step
// message. What does not parse counts 0: validation reports it.
func longestMessage(s *Scenario, sizeSpec func(string) (SizeStats, error)) int {
	n := 0
	for _, ph := range s.Phases {
		n = max(n, int(ph.ResponseBytes))
		if st, err := sizeStats(ph.Sizes, sizeSpec); err == nil {
			n = max(n, st.Max)
		}
		if ph.ConnectionMatrix != "" {
			if m, err := workloads.LoadMatrix(ph.ConnectionMatrix); err == nil {
				for _, f := range m.Flows {
					n = max(n, int(min(f.Size, math.MaxInt32)))
				}
			}
		}
		if co := ph.Collective; co != nil {
			if hosts, err := distinctHosts(ph.Hosts, s.Topology.HostNames(), "the collective"); err == nil && len(hosts) > 0 {
				n = max(n, int(co.Bytes)/len(hosts))
			}
		}
	}
	return n
}

// pFabric's recovery timeout in a simulated run: the pFabric paper's is
// about three round trips (a lost packet is one its sender has not heard
// of for that long), tens of microseconds at 10 Gbit/s. The engine's
// timer ticks every millisecond by default (Linux Homa's), so a lost
// packet waited two of them, 1-2 ms: a few such waits in a run decided
// pFabric's P99. So pFabric's tick becomes one unloaded round trip of the
// fabric, its RESEND due after pfabricResendTicks silent ticks (2-3 round
// trips), NEED_ACK keeps its time (2 ms) in the finer ticks, and the
// abort waits pfabricAbort: pFabric's hosts never give a flow up (TCP's
// retransmissions, then its probe mode), while the engine's abort is
// Homa's test for a dead peer. At 100 ms it failed long messages that
// pFabric's rank-ordered ports starved: on a 2:1 leaf-spine at 1 Gbit/s
// with W4 at 30%, 1 and 3 of about 2,370 RPCs in two of three seeds,
// which took up to 1.5 s to complete with a longer one.
const (
	pfabricResendTicks = 3
	pfabricAbort       = 10 * time.Second
)

// pfabricTimer sets pFabric transport t's timer (path p) to the fabric's
// unloaded RTT, for each key homaGiven says the file leaves out, and
// returns what it set.
func pfabricTimer(s *Scenario, t *Transport, p string, homaGiven func(string) bool) []ClockDefault {
	def, err := t.HomaConfig(s.Fabric()).WithDefaults()
	if err != nil {
		return nil // validation names the key at fault
	}
	tick := max(time.Microsecond, unloadedRTT(s).Round(time.Microsecond))
	inTicks := func(ticks int) int { return int((time.Duration(ticks)*def.Tick + tick - 1) / tick) }
	src := "pFabric's RTO of about 3 RTTs: a tick of one unloaded RTT of the fabric"
	emu := func(v any) string { return fmt.Sprintf("%v (ticks of %v)", v, def.Tick) }
	t.Homa.Tick = tick
	out := []ClockDefault{{Key: p + ".homa.tick_us", Value: fmt.Sprint(tick.Microseconds()), Emulated: fmt.Sprint(def.Tick.Microseconds()), Source: src}}
	for _, k := range []struct {
		key   string
		field *int
		v     int
		emu   int
		src   string
	}{
		{"resend_ticks", &t.Homa.ResendTicks, pfabricResendTicks, def.ResendTicks, src},
		{"timeout_ticks", &t.Homa.TimeoutTicks, int((pfabricAbort + tick - 1) / tick), def.TimeoutTicks,
			fmt.Sprintf("pFabric's hosts never give a flow up: an abort after %v of silence, past any run's drain", pfabricAbort)},
		{"request_ack_ticks", &t.Homa.RequestAckTicks, inTicks(def.RequestAckTicks), def.RequestAckTicks, src},
	} {
		if *k.field == 0 && !homaGiven(k.key) {
			*k.field = k.v
			out = append(out, ClockDefault{Key: p + ".homa." + k.key, Value: fmt.Sprint(k.v), Emulated: emu(k.emu), Source: k.src})
		}
	}
	return out
}

// workloadCutoffs fixes Homa transport t's unscheduled cutoffs from its
// workload's size distribution before the start, as the Homa paper's
// simulator did (STATIC_CBF_GRADUATED), when the file sets neither the
// cutoffs nor how many messages a receiver recomputes them after, and
// every phase t carries sends one-way messages (or echoes) of one size
// spec. Linux Homa's receivers, and an emulated run's, compute them from
// the first cutoff_samples messages they receive: until then every
// unscheduled byte shares the top level, which at W1's rates is the first
// millisecond of a run and, without a warm-up, its P99.
func workloadCutoffs(s *Scenario, t *Transport, p string, homaGiven func(string) bool) (ClockDefault, bool) {
	if t.Name != TransportHoma || t.Homa.Basic || t.Homa.Priorities == 1 || len(t.Homa.UnschedCutoffs) > 0 ||
		homaGiven("unsched_cutoffs") || homaGiven("cutoff_samples") {
		return ClockDefault{}, false
	}
	spec := ""
	for _, ph := range s.Phases {
		if ph.Transport != "" && ph.Transport != t.Name {
			continue
		}
		if ph.Collective != nil || ph.ConnectionMatrix != "" || ph.Sizes == "" || (!ph.OneWay && ph.ResponseBytes != 0) ||
			(spec != "" && ph.Sizes != spec) {
			return ClockDefault{}, false
		}
		spec = ph.Sizes
	}
	if spec == "" {
		return ClockDefault{}, false
	}
	t.CutoffsFrom = spec
	value := "fixed before the start from " + spec + "'s size distribution, known to every sender"
	if name, n := paperUnschedLevels(spec); n > 0 && (t.Homa.Priorities == 0 || t.Homa.Priorities == 8) {
		t.CutoffLevels = n
		value = fmt.Sprintf("fixed before the start from %s's size distribution over %d unscheduled levels (the Homa paper's runs' for %s), known to every sender", spec, n, strings.ToUpper(name))
	}
	return ClockDefault{Key: p + ".homa.unsched_cutoffs", Value: value,
		Emulated: "each receiver's, from the first cutoff_samples messages it receives (Linux's homa_prio)",
		Source:   "HomaSimulation's STATIC_CBF_GRADUATED: the workload's distribution, unscheduled bytes split evenly over the levels, one resolver for all hosts"}, true
}

// paperLevels gives Homa transport t, whose cutoffs the clock fixes from
// its workload, the rest of the Homa paper's simulator's priority scheme
// (HomaSimulation's STATIC_CBF_GRADUATED with boostTailBytesPrio set to
// rttBytes in every run of the paper) for each key homaGiven says the file
// leaves out: each blind packet at the level of the bytes its message has
// left, a long message's last RTT of bytes granted at the level of a
// message that short, and the cutoffs split the bytes of both. Linux
// Homa, and an emulated run, pick a message's blind level by its length
// and grant its tail at its rank's level.
func paperLevels(t *Transport, p string, homaGiven func(string) bool) []ClockDefault {
	const src = "HomaSimulation's STATIC_CBF_GRADUATED and boostTailBytesPrio = rttBytes, the Homa paper's runs"
	var out []ClockDefault
	for _, k := range []struct {
		key   string
		field *bool
	}{{"graduated", &t.Homa.Graduated}, {"boost_tail", &t.Homa.BoostTail}} {
		if !*k.field && !homaGiven(k.key) {
			*k.field = true
			out = append(out, ClockDefault{Key: p + ".homa." + k.key, Value: "true", Emulated: "false (Linux Homa's)", Source: src})
		}
	}
	return out
}

// paperUnschedLevels is how many of 8 levels carried unscheduled bytes in
// the Homa paper's runs of the built-in workload spec names (0 for any
// other spec), with its name. HomaSimulation's homaTransportConfig.ini
// sets each workload's scheduled levels by hand (adaptiveSchedPrioLevels:
// W1 1, W2 3, W3 4, W4 7, W5 7); the engine's rule, Linux's, derives them
// from the unscheduled share of the bytes and gives W2 6 and W3 2.
func paperUnschedLevels(spec string) (string, int) {
	name, _ := workloads.BuiltinOf(spec)
	switch name {
	case "w1":
		return name, 7
	case "w2":
		return name, 5
	case "w3":
		return name, 4
	case "w4", "w5":
		return name, 1
	}
	return name, 0
}

// unloadedRTT is the simulated fabric's longest unloaded round trip: a
// full packet out and a minimal one back, serialised on every link of a
// path between racks, with the scenario's fixed latencies (clock defaults
// filled).
func unloadedRTT(s *Scenario) time.Duration {
	f := s.Fabric()
	full, small := f.MTU+f.Framing, 64+f.Framing
	switches, links := 1, 2
	rtt := 2 * (fabric.WireTime(f.RateBps, full) + fabric.WireTime(f.RateBps, small))
	if f.InterSwitchLinks > 0 {
		switches, links = 1+f.InterSwitchLinks, 2+f.InterSwitchLinks
		for _, r := range f.PathRates() {
			rtt += fabric.WireTime(r, full) + fabric.WireTime(r, small)
		}
	}
	if m := s.Simulation; m != nil {
		rtt += 2 * (m.HostTxDelay.D() + m.HostRxDelay.D() + time.Duration(switches)*m.SwitchDelay.D() + time.Duration(links)*m.LinkDelay.D())
	}
	return rtt
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
