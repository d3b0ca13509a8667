// Package external is what a run on machines that already exist needs
// besides the lifecycle (docs/multi-machine.md): the run's credentials,
// the preflight that dials every agent and switch, the description of each
// machine and its clock, and the fabric of a switch configured by hand.
package external

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/internal/runcerts"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// TLS is the orchestrator's side of the run's credentials, nil
// when every agent listens on loopback (validation requires them otherwise).
func TLS(e *scenario.External) (*tls.Config, error) {
	if e.Certs == "" {
		return nil, nil
	}
	cfg, err := runcerts.ClientConfig(runcerts.ClientFiles(e.Certs))
	if err != nil {
		return nil, fmt.Errorf("topology.external.certs: %w", err)
	}
	return cfg, nil
}

// Prober is an agent that can describe its machine and estimate its clock
// offset (*agents.Client).
type Prober interface {
	Probe(ctx context.Context, dataAddr string) (*agentpb.Machine, agents.ClockEstimate, error)
}

// DescribeMachines asks the agent of every host of e for its machine and
// clock offset; prober returns host's agent, nil when it cannot describe
// its machine (a test's fake), and n places each host's data address. It
// returns the manifest's hosts and the fidelity notes: every time joined
// across machines (the latency anatomy) is off by up to the largest
// offset plus its bound, since records keep each machine's own clock.
func DescribeMachines(ctx context.Context, e *scenario.External, n *topo.Network, prober func(host string) Prober, log *slog.Logger) (map[string]rundir.HostMachine, []string, error) {
	hosts := map[string]rundir.HostMachine{}
	for _, h := range e.Hosts {
		p := prober(h.Name)
		if p == nil {
			continue
		}
		hl, _ := n.Host(h.Name)
		m, clk, err := p.Probe(ctx, hl.IP.String())
		if err != nil {
			return nil, nil, err
		}
		hosts[h.Name] = rundir.HostMachine{
			Agent: h.Agent, Hostname: m.GetHostname(), Kernel: m.GetKernel(), CPUModel: m.GetCpuModel(), CPUs: int(m.GetCpus()),
			NIC: m.GetNic(), NICDriver: m.GetNicDriver(), NICSpeedMbps: m.GetNicSpeedMbps(), AgentVersion: m.GetAgentVersion(),
			ClockOffsetUs: us(clk.Offset), ClockBoundUs: us(clk.Bound),
		}
		log.Info("machine", "host", h.Name, "hostname", m.GetHostname(), "kernel", m.GetKernel(), "nic", m.GetNic(),
			"clock_offset", clk.Offset, "bound", clk.Bound)
	}
	if len(hosts) == 0 {
		return hosts, nil, nil
	}
	return hosts, []string{machinesNote(hosts), clockNote(hosts)}, nil
}

// machinesNote names the machines in one line for the fidelity box: hosts
// with the same kind of machine and NIC together.
func machinesNote(hosts map[string]rundir.HostMachine) string {
	var kinds []string
	byKind := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(hosts)) {
		h := hosts[name]
		k := fmt.Sprintf("%d x %s, kernel %s, NIC %s", h.CPUs, orUnknown(h.CPUModel), orUnknown(h.Kernel), orUnknown(h.NICDriver))
		if h.NICSpeedMbps > 0 {
			k += fmt.Sprintf(" at %d Mbit/s", h.NICSpeedMbps)
		}
		if _, ok := byKind[k]; !ok {
			kinds = append(kinds, k)
		}
		byKind[k] = append(byKind[k], name+"@"+h.Hostname)
	}
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, strings.Join(byKind[k], " ")+": "+k)
	}
	return "machines (manifest.json has each): " + strings.Join(parts, "; ")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// clockNote is the fidelity note on the hosts' clocks: across machines,
// how far apart they may be (the largest offset plus its bound), which is
// how far off the anatomy's joined times may be.
func clockNote(hosts map[string]rundir.HostMachine) string {
	worst, worstHost := -1.0, ""
	for _, name := range slices.Sorted(maps.Keys(hosts)) {
		h := hosts[name]
		if d := math.Abs(h.ClockOffsetUs) + h.ClockBoundUs; d > worst {
			worst, worstHost = d, name
		}
	}
	if n := len(machineNames(hosts)); n > 1 {
		return fmt.Sprintf("hosts on %d machines with their own clocks: offsets estimated at calibration put them within %.0f µs of the orchestrator's (largest on %s); the latency anatomy joins client, server and switch times from different clocks, so its parts may be off by that much (RTTs are measured on the client's clock alone)",
			n, worst, worstHost)
	}
	return fmt.Sprintf("hosts share one machine's clock (agents answer within %.0f µs): the latency anatomy joins times from one clock", worst)
}

// machineNames are the distinct machines the hosts run on: hostname and
// kernel, since namespaces on one machine share both.
func machineNames(hosts map[string]rundir.HostMachine) []string {
	var out []string
	for _, h := range hosts {
		k := h.Hostname + "/" + h.Kernel
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// HandSet is the fabric of a switch configured by hand (an external
// topology without switches): nothing to program, no telemetry, and no
// port modes to offer.
type HandSet struct {
	wroteHeader bool
}

// ResetQueuePeaks has no peaks to reset.
func (f *HandSet) ResetQueuePeaks(context.Context) error { return nil }

// Telemetry writes telemetry.csv's header only: the switch is not read.
func (f *HandSet) Telemetry(ctx context.Context, exp string, _ time.Duration, w io.Writer) error {
	<-ctx.Done()
	header := !f.wroteHeader
	f.wroteHeader = true
	return rundir.WriteTelemetry(w, exp, nil, header)
}

// PortModes refuses every mode but strict priority: a switch set up by
// hand cannot be asked for others.
func (f *HandSet) PortModes(_ context.Context, modes []controller.PortMode) error {
	if len(modes) > 0 {
		return fmt.Errorf("switch port modes %v: the switch is configured by hand (topology.external has no switches)", modes)
	}
	return nil
}

// Defences refuses to install any: validation refuses defences on an
// external topology, whose switch the run does not program.
func (f *HandSet) Defences(_ context.Context, on bool) error {
	if on {
		return fmt.Errorf("switch defences: the switch is configured by hand (topology.external has no switches)")
	}
	return nil
}

// Close has nothing to close.
func (f *HandSet) Close() error { return nil }
