package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/external"
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
	if err := os.MkdirAll(filepath.Join(r.dir, rundir.SwitchDir), 0o755); err != nil {
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
		r.ctl = &external.HandSet{}
	}
	if err := r.connectExternal(ctx); err != nil {
		return err
	}
	hosts, clockNotes, err := external.DescribeMachines(ctx, e, r.layout, func(host string) external.Prober {
		p, _ := r.agents.get(host).(external.Prober)
		return p
	}, r.log)
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

// connectExternal dials every host's agent.
func (r *run) connectExternal(ctx context.Context) error {
	e := r.plan.Base.Topology.External
	cfg, err := external.TLS(e)
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
