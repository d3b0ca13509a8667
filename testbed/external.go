package testbed

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/internal/runcerts"
	"github.com/homatb/homatb/runfmt"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
)

// A run on an external topology (docs/multi-machine.md) replaces the
// emulated network, the switch processes and the agents the runner starts
// with machines that already exist: it programs the P4Runtime switch (if
// there is one), dials every agent at its control address with the run's
// credentials, and records each machine and its clock offset. Calibration,
// experiments and the report are those of an emulated run.

// startExternal programs the switch, connects the agents and describes the
// machines; teardown undoes it as for an emulated run (no runner to stop).
func (r *run) startExternal(ctx context.Context) error {
	s := r.plan.Base
	e := s.Topology.External
	// The run directory an emulated run has: fetched records per host,
	// switch statistics.
	if err := os.MkdirAll(filepath.Join(r.dir, runfmt.SwitchDir), 0o755); err != nil {
		return err
	}
	for _, h := range e.Hosts {
		if err := os.MkdirAll(filepath.Join(r.dir, "agents", "records", h.Name), 0o755); err != nil {
			return err
		}
	}
	notes := []string{"hosts are machines the run did not start: cpu_busy and other_cpus describe the orchestrator's machine only, and each host's noise is its own"}
	if e.ManagedSwitch() {
		notes = append(notes, "the switch's queue depths and buffer are its own: switch.queue_depth_* and switch.buffer apply only to switches a run starts")
	}
	for _, sw := range e.Switches {
		if sw.AdminSocket != "" {
			r.stats[sw.Name] = r.parts.switchStats(sw.Name, sw.AdminSocket)
			continue
		}
		notes = append(notes, fmt.Sprintf("switch %s (%s) is not on this machine: no per-port statistics or per-packet records (latency anatomy), only what P4Runtime reads into telemetry", sw.Name, sw.Target))
	}
	r.postcards = s.Switch.PostcardsOn() && e.ManagedSwitch() && len(r.stats) == len(e.Switches)
	if e.ManagedSwitch() {
		if err := r.programExternal(ctx); err != nil {
			return err
		}
	} else {
		notes = append(notes, "the switch is configured by hand (no P4Runtime): its DSCP trust, priorities and queues are what its operator set, and the run has no switch telemetry")
		r.ctl = &handSetFabric{}
	}
	if err := r.connectExternal(ctx); err != nil {
		return err
	}
	hosts, clockNotes, err := r.describeMachines(ctx)
	if err != nil {
		return err
	}
	return r.man.update(func(m *Manifest) {
		m.Machines = hosts
		m.Fidelity = append(m.Fidelity, notes...)
		m.Fidelity = append(m.Fidelity, clockNotes...)
	})
}

// programExternal programs the P4Runtime switch as an emulated run's.
func (r *run) programExternal(ctx context.Context) error {
	bmv2JSON := ""
	for _, sw := range r.plan.Base.Topology.External.Switches {
		if sw.Target == scenario.ExternalBMv2 {
			p, err := filepath.Abs(switches.BMv2JSONPath)
			if err != nil {
				return fmt.Errorf("bmv2 pipeline: %w", err)
			}
			bmv2JSON = p
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ctl, err := r.parts.program(pctx, r.layout, r.fab, r.plan.Base, bmv2JSON, r.log.With("part", "controller"))
	if err != nil {
		return fmt.Errorf("program switches: %w", err)
	}
	r.ctl = ctl
	return nil
}

// externalTLS is the orchestrator's side of the run's credentials, nil
// when every agent listens on loopback (validation requires them otherwise).
func externalTLS(e *scenario.External) (*tls.Config, error) {
	if e.Certs == "" {
		return nil, nil
	}
	cfg, err := runcerts.ClientConfig(runcerts.ClientFiles(e.Certs))
	if err != nil {
		return nil, fmt.Errorf("topology.external.certs: %w", err)
	}
	return cfg, nil
}

// connectExternal dials every host's agent.
func (r *run) connectExternal(ctx context.Context) error {
	e := r.plan.Base.Topology.External
	cfg, err := externalTLS(e)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, h := range e.Hosts {
		a, err := r.parts.dialRemote(dctx, h.Name, h.Agent, cfg)
		if err != nil {
			return err
		}
		r.agents.add(h.Name, a)
	}
	r.log.Info("agents connected", "hosts", len(e.Hosts), "tls", cfg != nil)
	return nil
}

// machineProber is an agent that can describe its machine and estimate its
// clock offset (*agents.Client; the lifecycle test's fakes are not).
type machineProber interface {
	Probe(ctx context.Context, dataAddr string) (*agentpb.Machine, agents.ClockEstimate, error)
}

// describeMachines asks every agent for its machine and clock offset. It
// returns the manifest's hosts and the fidelity notes: every time joined
// across machines (the latency anatomy) is off by up to the largest
// offset plus its bound, since records keep each machine's own clock.
func (r *run) describeMachines(ctx context.Context) (map[string]runfmt.HostMachine, []string, error) {
	hosts := map[string]runfmt.HostMachine{}
	for _, h := range r.plan.Base.Topology.External.Hosts {
		p, ok := r.agents.get(h.Name).(machineProber)
		if !ok {
			continue
		}
		hl, _ := r.layout.Host(h.Name)
		m, clk, err := p.Probe(ctx, hl.IP.String())
		if err != nil {
			return nil, nil, err
		}
		hosts[h.Name] = runfmt.HostMachine{
			Agent: h.Agent, Hostname: m.GetHostname(), Kernel: m.GetKernel(), CPUModel: m.GetCpuModel(), CPUs: int(m.GetCpus()),
			NIC: m.GetNic(), NICDriver: m.GetNicDriver(), NICSpeedMbps: m.GetNicSpeedMbps(), AgentVersion: m.GetAgentVersion(),
			ClockOffsetUs: us(clk.Offset), ClockBoundUs: us(clk.Bound),
		}
		r.log.Info("machine", "host", h.Name, "hostname", m.GetHostname(), "kernel", m.GetKernel(), "nic", m.GetNic(),
			"clock_offset", clk.Offset, "bound", clk.Bound)
	}
	if len(hosts) == 0 {
		return hosts, nil, nil
	}
	return hosts, []string{machinesNote(hosts), clockNote(hosts)}, nil
}

// machinesNote names the machines in one line for the fidelity box: hosts
// with the same kind of machine and NIC together.
func machinesNote(hosts map[string]runfmt.HostMachine) string {
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
func clockNote(hosts map[string]runfmt.HostMachine) string {
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
func machineNames(hosts map[string]runfmt.HostMachine) []string {
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

// handSetFabric stands for a switch configured by hand: nothing to
// program, no telemetry, and no port modes to offer.
type handSetFabric struct {
	wroteHeader bool
}

func (f *handSetFabric) ResetQueuePeaks(context.Context) error { return nil }

// telemetry writes telemetry.csv's header only: the switch is not read.
func (f *handSetFabric) Telemetry(ctx context.Context, exp string, _ time.Duration, w io.Writer) error {
	<-ctx.Done()
	header := !f.wroteHeader
	f.wroteHeader = true
	return runfmt.WriteTelemetry(w, exp, nil, header)
}

func (f *handSetFabric) PortModes(_ context.Context, modes []controller.PortMode) error {
	if len(modes) > 0 {
		return fmt.Errorf("switch port modes %v: the switch is configured by hand (topology.external has no switches)", modes)
	}
	return nil
}

func (f *handSetFabric) Close() error { return nil }
