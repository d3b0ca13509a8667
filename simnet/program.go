package simnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/controller/p4rtclient"
	"github.com/homatb/homatb/p4/pipeline"
	"github.com/homatb/homatb/p4/target"
)

// Switches are a simulation's switches as the controller sees them: for
// each switch of a topology, an embedded switch's P4Runtime server on
// loopback (no ports) that the controller programs exactly as it programs
// an emulated run's; the simulation then forwards through their
// pipelines.
type Switches struct {
	switches *controller.Switches
	policy   controller.Policy
	sws      map[string]*target.Switch
	cancel   context.CancelFunc
	ran      chan error
	n        int
}

// StartSwitches starts and programs topo's switches with policy. topo's
// switch addresses are overwritten with the servers' loopback addresses.
func StartSwitches(ctx context.Context, topo *controller.Topology, policy controller.Policy, log *slog.Logger) (*Switches, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s := &Switches{sws: map[string]*target.Switch{}, cancel: cancel, ran: make(chan error, len(topo.Switches)), policy: policy}
	for i, sw := range topo.Switches {
		t, err := target.New(target.Config{DeviceID: sw.DeviceID, Addr: "127.0.0.1:0"})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("simnet: switch %s: %w", sw.Name, err), s.Close())
		}
		topo.Switches[i].Address = t.Addr()
		topo.Switches[i].Target = controller.TargetEmbedded
		s.sws[sw.Name] = t
		s.n++
		go func() { s.ran <- t.Run(runCtx) }()
	}
	// The servers live as long as the controller's connections, so the
	// clients keep no copy of the entries to re-push after a restart.
	f, err := controller.Connect(ctx, topo, p4rtclient.WithLogger(log), p4rtclient.WithoutRepush())
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.switches = f
	if err := f.Program(ctx, policy); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// Pipelines are the programmed switches' pipelines, by name.
func (s *Switches) Pipelines() map[string]*pipeline.Pipeline {
	m := make(map[string]*pipeline.Pipeline, len(s.sws))
	for name, t := range s.sws {
		m[name] = t.Pipeline()
	}
	return m
}

// SetPortModes reprograms the switches' port modes (pFabric's rank order,
// NDP's trimming), as an emulated run does between experiments.
func (s *Switches) SetPortModes(ctx context.Context, modes []controller.PortMode) error {
	pol := s.policy
	pol.PortModes = modes
	if s.unchanged(pol) {
		return nil
	}
	if err := s.switches.Sync(ctx, pol); err != nil {
		return fmt.Errorf("simnet: port modes %v: %w", modes, err)
	}
	s.policy = pol
	return nil
}

// SetDefences reprograms the switches' defences (DSCP trust,
// anti-spoofing, meters), as an emulated run does between experiments
// that sweep switch.defences.
func (s *Switches) SetDefences(ctx context.Context, d controller.Defences) error {
	pol := s.policy
	pol.Defences = d
	if s.unchanged(pol) {
		return nil
	}
	if err := s.switches.Sync(ctx, pol); err != nil {
		return fmt.Errorf("simnet: defences: %w", err)
	}
	s.policy = pol
	return nil
}

// unchanged reports whether syncing the switches to pol would leave them
// as they are, so the sync (a read-back of every entry of every switch,
// minutes on a fat tree of k=32) can be skipped: pol is the installed
// policy and installs no meters. A sync writes the meters again, which
// refills their buckets, so a policy with meters is synced as before.
func (s *Switches) unchanged(pol controller.Policy) bool {
	return len(pol.Defences.Meters) == 0 && fmt.Sprint(pol) == fmt.Sprint(s.policy)
}

// SetLinkDown has the controller move the switches' next-hop groups off
// the link between switches a and b (down) or back onto it, as the
// emulation's controller does during a leaf-spine link-down fault.
func (s *Switches) SetLinkDown(ctx context.Context, a, b string, down bool) error {
	if err := s.switches.SetLinkDown(ctx, a, b, down); err != nil {
		return fmt.Errorf("simnet: link %s-%s down %v: %w", a, b, down, err)
	}
	return nil
}

// Close disconnects the controller, stops the servers and lets the
// switches go; pipelines taken before (Pipelines) keep their entries.
func (s *Switches) Close() error {
	var errs []error
	if s.switches != nil {
		errs = append(errs, s.switches.Close())
		s.switches = nil
	}
	if s.cancel != nil {
		s.cancel()
		for range s.n {
			errs = append(errs, <-s.ran)
		}
		s.cancel, s.n = nil, 0
	}
	// Let the switches go: a run reports after its network closes, and a
	// fat tree's tables and pipelines are gigabytes.
	s.sws = nil
	return errors.Join(errs...)
}
