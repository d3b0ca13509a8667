package scenario

import "fmt"

// The emulation's capacity model (docs/multi-machine.md, "Capacity"): a
// run needs about D0 + F × c vCPUs, F the frames a second its switches
// forward, and is faithful while that stays within half the machine.
// EmulationCPUs counts DATA packets only (grants and ACKs add about half
// as many frames again) and one switch each (a frame between leaves
// passes three), and the fitted cost a frame (measured up to 11 kpps;
// batching makes frames cheaper above that), so that CapacityWarning,
// which asks for twice the model's faithful share, speaks only of runs
// well past this machine.
const (
	// capFixed is the run's CPU besides its frames (the orchestrator's
	// telemetry and status polling, idle wake-ups), in vCPUs.
	capFixed = 0.25
	// capFixedPerEngineHost is what each host running the Homa engine
	// adds to it (its timers, and the gauges the orchestrator follows).
	capFixedPerEngineHost = 0.09
	// capPerFrame is the CPU a forwarded frame costs the agents, the
	// kernel and the switch together, in seconds: Homa's 85 µs on a star
	// at load 0.8 (TCP's 95–100 µs).
	capPerFrame = 85e-6
)

// EmulationCPUs is the capacity model's estimate of the vCPUs experiment e
// needs in emulation: the fixed part, and the DATA packets of its
// open-loop phases' requests and responses at capPerFrame each. Closed
// loops, collectives and connection matrices offer no rate and count
// nothing, so a scenario of only those gets the fixed part.
func EmulationCPUs(e *Experiment) (cpus, packetsPerSecond float64, err error) {
	s := e.Scenario
	_, packetsPerSecond, err = s.offeredPerSecond()
	if err != nil {
		return 0, 0, err
	}
	cpus = capFixed + packetsPerSecond*capPerFrame
	for _, t := range e.AllTransports() {
		if t.Engine() {
			cpus += capFixedPerEngineHost * float64(len(s.Topology.HostNames()))
			break
		}
	}
	return cpus, packetsPerSecond, nil
}

// CapacityWarning says, for an emulated experiment on a machine of cpus
// vCPUs, when EmulationCPUs is beyond the whole machine (the model keeps
// a run faithful within half of it): its clients will fall behind their
// schedules and its latencies will be the machine's. Empty when it fits,
// for the twin and real hosts, or when cpus is 0 (unknown: a Slurm
// node's).
func CapacityWarning(e *Experiment, simulate bool, cpus int) string {
	if simulate || cpus <= 0 || e.Scenario.Topology.Kind == KindExternal {
		return ""
	}
	need, pps, err := EmulationCPUs(e)
	if err != nil || need <= float64(cpus) {
		return ""
	}
	return fmt.Sprintf("by the emulation's capacity model (docs/multi-machine.md, \"Capacity\") this needs about %.1f vCPUs, more than this machine's %d (it is faithful within half of them): %.0f DATA packets a second from its open-loop phases at about %.0f µs of CPU each (agents, kernel and switches), and %.2f vCPU for the hosts and the orchestrator; expect clients behind their schedules and latencies of the machine, not the transport: lower the load or link.rate, or run it in the twin (homatb run --simulate)",
		need, cpus, pps, capPerFrame*1e6, need-pps*capPerFrame)
}
