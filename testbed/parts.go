package testbed

import (
	"context"
	"crypto/tls"
	"fmt"
	fabdesc "github.com/homatb/homatb/internal/fabric"
	"io"
	"log/slog"
	"syscall"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/mn"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
	"github.com/homatb/homatb/testbed/topo"
)

// The run drives four parts through the small interfaces below: the
// emulated network (the Mininet runner), the agent in each host, each
// switch's statistics and the controller. Run uses the real ones;
// lifecycle_test.go drives a whole run through fakes, without root.

// network is the Mininet runner as a run uses it (*mn.Runner).
type network interface {
	Build(ctx context.Context, s mn.Spec) (*mn.Built, error)
	Popen(ctx context.Context, name, host, log string, env map[string]string, args ...string) (int, error)
	// Events delivers process exits; it is closed when the runner ends.
	Events() <-chan mn.Event
	// Exited is closed when the runner process has ended.
	Exited() <-chan struct{}
	// Signal sends sig to a process Popen started (fault injection).
	Signal(ctx context.Context, name string, sig syscall.Signal) error
	Stop(ctx context.Context) error
}

// agentAPI is one host's agent, the control API of hostagent (*agents.Client).
// Every method bounds its own call and names the host in its errors.
type agentAPI interface {
	Status(ctx context.Context) (*agentpb.StatusReply, error)
	Configure(ctx context.Context, req *agentpb.ConfigureRequest) error
	Start(ctx context.Context) error
	// Stop ends the client workload after drain and returns its books.
	Stop(ctx context.Context, drain time.Duration) (*agentpb.Counters, error)
	// Fetch streams an experiment's records (rpcs.csv rows) or its TCP
	// connection samples (tcp.csv rows) into w; file is
	// agentpb.FileRecords or agentpb.FileTCPSamples.
	Fetch(ctx context.Context, exp, file string, w io.Writer) error
	// FollowGauges samples the host's Homa gauges every interval until
	// ctx ends, handing each sample to emit as it comes.
	FollowGauges(ctx context.Context, exp string, interval time.Duration, emit func(rundir.HostSample) error) error
	// Shutdown asks the agent to exit and closes the connection.
	Shutdown(ctx context.Context)
}

// switchStats is one switch's statistics endpoint (*switches.StatsClient,
// *switches.BMv2Stats).
type switchStats interface {
	// ResetWindow restarts the peaks and delay percentiles.
	ResetWindow(ctx context.Context) error
	// Fetch returns the statistics document.
	Fetch(ctx context.Context) (rundir.SwitchStats, error)
	// SetFault changes a port's fault injection (POST /faults).
	SetFault(ctx context.Context, fs switchstats.FaultSetting) error
	// StartPostcards starts per-packet records into path (embedded target).
	StartPostcards(ctx context.Context, path string) error
	// StopPostcards ends them and says how many were written and dropped.
	StopPostcards(ctx context.Context) (switchstats.PostcardSummary, error)
}

// fabric is the controller's side of the programmed switches
// (*switches.Control).
type fabric interface {
	// ResetQueuePeaks restarts the queue peaks telemetry reports.
	ResetQueuePeaks(ctx context.Context) error
	// Telemetry samples every switch until ctx ends and appends the
	// series to w as telemetry.csv rows.
	Telemetry(ctx context.Context, exp string, interval time.Duration, w io.Writer) error
	// PortModes puts the switches' ports in the modes a transport needs
	// (pFabric's rank order, NDP's trimming), the rest in strict priority.
	PortModes(ctx context.Context, modes []controller.PortMode) error
	// Defences installs the scenario's switch defences (DSCP trust,
	// anti-spoofing, meters) or removes them.
	Defences(ctx context.Context, on bool) error
	Close() error
}

// timeline is the time an experiment's workload runs in: the wall clock,
// with an agent in every host (wallClock), or the simulated network's
// virtual time, whose agents run the drivers on its event queue
// (*simulate.Network).
type timeline interface {
	// NextEpoch is when the next experiment's clients start; Skip passes
	// over one experiment of the plan that another process runs.
	NextEpoch() time.Time
	Skip()
	// Begin prepares experiment e with roles ro, before the agents are
	// configured; it returns the clock the timed faults run on and
	// fidelity notes.
	Begin(ctx context.Context, e *scenario.Experiment, ro agents.Roles) (driver.Scheduler, []string, error)
	// BeginCalibration prepares one calibration size of transport t
	// between the first two hosts, of one-way messages when oneWay.
	BeginCalibration(ctx context.Context, t scenario.Transport, oneWay bool) error
	// Run lets the clients' start, warm-up and duration pass; it returns
	// why ctx ended if it did first.
	Run(ctx context.Context) error
	// End ends the experiment's clock, once its records are in; a second
	// call does nothing.
	End()
}

// wallClock is an emulated experiment's time: the host's clock.
type wallClock struct {
	s     *scenario.Scenario
	clock *driver.HostClock
}

// NextEpoch is half a second from now: the agents are configured and
// started by then.
func (w *wallClock) NextEpoch() time.Time { return time.Now().Add(500 * time.Millisecond) }

func (w *wallClock) Skip() {}

func (w *wallClock) Begin(_ context.Context, e *scenario.Experiment, _ agents.Roles) (driver.Scheduler, []string, error) {
	c, err := driver.NewHostClock()
	if err != nil {
		return nil, nil, err
	}
	go c.Run()
	w.s, w.clock = e.Scenario, c
	return c, nil, nil
}

func (w *wallClock) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(500*time.Millisecond + w.s.Warmup.D() + w.s.Duration.D()):
		return nil
	}
}

// BeginCalibration refuses one-way messages: only the simulator's one
// clock can time them.
func (w *wallClock) BeginCalibration(_ context.Context, _ scenario.Transport, oneWay bool) error {
	if oneWay {
		return fmt.Errorf("one-way messages: only the simulator can time them (run with --simulate)")
	}
	return nil
}

func (w *wallClock) End() {
	if w.clock != nil {
		w.clock.Close()
		w.clock = nil
	}
}

// parts makes the parts of one run.
type parts struct {
	startNetwork func(ctx context.Context, opt mn.Options) (network, error)
	// program connects to the built switches and programs them.
	program func(ctx context.Context, n *topo.Network, f *fabdesc.Fabric, s *scenario.Scenario, bmv2JSON string, log *slog.Logger) (fabric, error)
	// dialAgent waits for a started agent to serve on socket.
	dialAgent func(ctx context.Context, host, socket string, exited <-chan struct{}) (agentAPI, error)
	// switchStats reaches a switch's admin socket.
	switchStats func(name, socket string) switchStats
	// dialRemote reaches an agent on another machine at its control
	// address, with the run's credentials (external topologies).
	dialRemote func(ctx context.Context, host, addr string, cfg *tls.Config) (agentAPI, error)
}

// realParts are the processes and sockets of a real run.
func realParts() parts {
	return parts{
		startNetwork: func(ctx context.Context, opt mn.Options) (network, error) {
			r, err := mn.Start(ctx, opt)
			if err != nil {
				return nil, err // not a typed nil inside the interface
			}
			return r, nil
		},
		program: func(ctx context.Context, n *topo.Network, f *fabdesc.Fabric, s *scenario.Scenario, bmv2JSON string, log *slog.Logger) (fabric, error) {
			c, err := switches.Program(ctx, n, f, s, bmv2JSON, log)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		dialAgent: func(ctx context.Context, host, socket string, exited <-chan struct{}) (agentAPI, error) {
			a, err := agents.Dial(ctx, host, socket, exited)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
		switchStats: func(name, socket string) switchStats { return switches.NewStatsClient(name, socket) },
		dialRemote: func(ctx context.Context, host, addr string, cfg *tls.Config) (agentAPI, error) {
			a, err := agents.DialRemote(ctx, host, addr, cfg)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
	}
}
