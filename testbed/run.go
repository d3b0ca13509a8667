// Package testbed runs scenarios: it builds the emulated network with
// Mininet (through testbed/mn), starts the switch processes, has them
// programmed, starts an agent in every host, calibrates, runs every
// experiment of the plan and collects records, telemetry and switch
// statistics into a run directory, and always tears everything down. With
// Options.Simulate the same run goes in virtual time on testbed/simulate's
// network instead: one lifecycle, two clocks.
package testbed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	fabdesc "github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/cleanup"
	"github.com/homatb/homatb/testbed/faults"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/simulate"
	"github.com/homatb/homatb/testbed/topo"
)

// Options configure Run.
type Options struct {
	// OutDir is the parent of run directories (default "results"); RunDir,
	// when set, is the exact run directory instead.
	OutDir string
	RunDir string
	// ScenarioFile is recorded in the manifest.
	ScenarioFile string
	// Binary is the homatb executable run as switch and agent processes.
	Binary string
	// Progress receives the progress bar or lines; nil is silent.
	Progress io.Writer
	// Logger receives the orchestrator's log besides logs/homatb.log.
	Logger *slog.Logger
	// Registry is where the run registers for `homatb clean`.
	Registry string
	// NoReport skips building the report at the end.
	NoReport bool
	// Plain leaves the per-RPC files plain at the end, whatever their
	// size: a dispatched task's, which the task compresses for the merge
	// (dispatch.CompressTask).
	Plain bool
	// Realtime runs switches and agents under SCHED_FIFO instead of at
	// nice -10 (experimental; docs/emulation.md has the A/B runs).
	Realtime bool
	// Slice, when not zero, is the EEVDF time slice switches and agents
	// ask for under ordinary scheduling (experimental; docs/emulation.md).
	Slice time.Duration
	// Experiments, when not empty, runs only these experiments of the
	// plan (by name), each with the seed and, in virtual time, the epoch it
	// has in the whole plan: the records of a run split over several
	// processes (testbed/dispatch) are then those of the run in one.
	Experiments []string
	// Simulate runs the plan in virtual time (testbed/simulate) instead of
	// emulating it; HostNIC is then the simulated hosts' NIC
	// (simulate.NICFIFO or simulate.NICShaper).
	Simulate bool
	HostNIC  string
	// TeardownTimeout bounds teardown (default 6s: with the 2s an
	// interrupted experiment gets to hand over its records, everything is
	// gone within 10s of a signal).
	TeardownTimeout time.Duration
}

// InterruptReportTimeout bounds building the report of an interrupted run.
// It starts once the network is torn down, so it does not delay cleanup.
const InterruptReportTimeout = 20 * time.Second

// Result describes a finished (or stopped) run.
type Result struct {
	RunDir     string
	Run        string
	Tag        string
	Incomplete bool
	Manifest   *Manifest
}

// NewTag derives a run's tag ("hb" and five hex digits) from its id and
// this process, short enough for interface names.
func NewTag(runID string) string {
	h := sha256.Sum256([]byte(runID + "/" + strconv.Itoa(os.Getpid()) + "/" + time.Now().String()))
	return "hb" + hex.EncodeToString(h[:3])[:5]
}

// run is the state of one run.
type run struct {
	opt    Options
	parts  parts
	plan   *scenario.Plan
	dir    string
	tag    string
	log    *slog.Logger
	man    *Manifest
	runner network
	layout *topo.Network
	// peers is the node at the other end of each switch port (layout.Peers).
	peers map[string]map[int]string
	// fab describes the laid-out network (rate, MTU, framing, hosts).
	fab    *fabdesc.Fabric
	agents agentSet
	stats  map[string]switchStats
	// postcards says the switches record per-packet postcards (the
	// embedded target; BMv2 cannot).
	postcards bool
	records   *recordsFile
	prog      *progress
	sockDir   string
	cancel    context.CancelCauseFunc
	calib     map[string]rundir.Calibration
	ctl       fabric
	ccs       *agents.Congestion // BPF congestion controls this run registered
	// requests makes the agents' Configure requests.
	requests agents.Requests
	// killed are the processes fault injection killed on purpose.
	killed faults.Killed
	// hostNS is each host's network namespace, for captures and the
	// host links' division.
	hostNS map[string]string
	// linksDivided says the host links are divided between Homa and TCP
	// (host_qdisc: pacer, hostlinks.go).
	linksDivided bool
	// sim is the simulated network of a run in virtual time, nil for an
	// emulated run.
	sim *simulate.Network
	// simRecords writes sim's experiments' records (nil for an emulated
	// run); teardown ends its writer before records closes.
	simRecords *simRecords
	// time is the experiments' clock: the wall clock, or sim's.
	time timeline
}

// Run executes a plan. It returns when the run has ended and its network
// is gone; the error says why a run stopped early (the run directory then
// holds what was measured, marked incomplete).
func Run(ctx context.Context, plan *scenario.Plan, opt Options) (*Result, error) {
	return runWith(ctx, plan, opt, realParts())
}

// Real-time priorities (SCHED_FIFO) of a run's switches and agents with
// Options.Realtime: the switches above the agents, as they are every
// host's network. `homatb run` and its Mininet runner stay ordinary: at
// real-time priority 1 as well, the default incast's Homa probe P99 was
// 24-43 ms against 4-12 ms without (docs/emulation.md).
const (
	SwitchRTPriority = 11
	AgentRTPriority  = 10
)

// runWith is Run with the given parts. Its steps: prepare the run
// directory and registration, execute (network, switches, agents,
// calibration, experiments), tear down, mark the manifest, build the report,
// compress the large records.
func runWith(ctx context.Context, plan *scenario.Plan, opt Options, p parts) (*Result, error) {
	opt = opt.withDefaults()
	for _, name := range opt.Experiments {
		if !slices.ContainsFunc(plan.Experiments, func(e scenario.Experiment) bool { return e.Name == name }) {
			return nil, fmt.Errorf("experiment %q is not in the plan of %s", name, plan.Base.Name)
		}
	}
	r, logFile, err := newRun(plan, opt, p)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	reg := cleanup.Registration{Tag: r.tag, Run: r.man.Run, RunDir: r.dir}
	if r.sockDir != filepath.Join(r.dir, "agents") {
		reg.Dirs = []string{r.sockDir}
	}
	// A run on machines that already exist, or in virtual time, leaves
	// nothing here for `homatb clean`, and needs no root to write the
	// registry.
	regPath := ""
	if plan.Base.Topology.Kind != scenario.KindExternal && !opt.Simulate {
		if regPath, err = cleanup.Register(opt.Registry, reg); err != nil {
			return nil, err
		}
	}
	res := &Result{RunDir: r.dir, Run: r.man.Run, Tag: r.tag, Manifest: r.man}

	runCtx, cancel := context.WithCancelCause(ctx)
	r.cancel = cancel
	wallStart := time.Now()
	runErr := r.execute(runCtx)
	if r.sim != nil {
		runErr = errors.Join(runErr, r.man.update(func(m *Manifest) { m.Simulation = r.sim.Summary(time.Since(wallStart)) }))
	}
	if runErr == nil {
		runErr = context.Cause(runCtx)
	} else if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, runErr) && errors.Is(runErr, context.Canceled) {
		runErr = cause // say why the context ended (a crashed child, a signal)
	}
	cancel(nil)

	tdErr := r.teardown()
	if regPath != "" {
		_ = os.Remove(regPath)
	}

	res.Incomplete = r.markEnd(runErr, tdErr)
	if !opt.NoReport && len(r.man.Experiments) > 0 {
		if err := r.report(ctx); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	if !opt.Plain {
		if err := r.compress(); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	return res, errors.Join(runErr, tdErr)
}

// compress leaves the run's large per-RPC files compressed
// (rundir.CompressLarge), once the report has read them plain.
func (r *run) compress() error {
	done, err := rundir.CompressLarge(r.dir, rundir.CompressAbove)
	if len(done) > 0 {
		r.log.Info("compressed the run's large per-RPC files (zstd; homatb report and scripts/runfiles.py read them)", "files", done)
	}
	return err
}

func (opt Options) withDefaults() Options {
	if opt.OutDir == "" {
		opt.OutDir = "results"
	}
	if opt.Registry == "" {
		opt.Registry = cleanup.DefaultRegistry
	}
	if opt.TeardownTimeout == 0 {
		opt.TeardownTimeout = 6 * time.Second
	}
	return opt
}

// DefaultRunDir is the directory under outDir of a run of plan started at
// now, when the user names none: the time and the scenario's name, and
// "-sim" for a run in virtual time.
func DefaultRunDir(outDir string, plan *scenario.Plan, simulated bool, now time.Time) string {
	dir := filepath.Join(outDir, now.UTC().Format("20060102-150405")+"-"+plan.Base.Name)
	if simulated {
		dir += "-sim"
	}
	return dir
}

// newRun creates the run directory, its log (returned for the caller to
// close) and its first manifest.
func newRun(plan *scenario.Plan, opt Options, p parts) (*run, *os.File, error) {
	now := time.Now()
	runID := now.UTC().Format("20060102-150405") + "-" + plan.Base.Name
	dir := opt.RunDir
	if dir == "" {
		dir = DefaultRunDir(opt.OutDir, plan, opt.Simulate, now)
	}
	tag := NewTag(runID)
	if opt.Simulate {
		if err := simulate.Check(plan); err != nil {
			return nil, nil, err
		}
		runID, tag = simulate.RunID(plan), simulate.Tag
	}
	// A run appends to its CSV files as it goes: in a directory an earlier
	// run left, the two would mix and the report would fail on it.
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, nil, fmt.Errorf("run directory %s is not empty (an earlier run's files would mix with this one's): choose another --run-dir or remove it", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, nil, fmt.Errorf("run directory: %w", err)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	logFile, err := os.Create(filepath.Join(absDir, "logs", "homatb.log"))
	if err != nil {
		return nil, nil, fmt.Errorf("run log: %w", err)
	}
	var handler slog.Handler = slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug})
	if opt.Logger != nil {
		handler = teeHandler{handler, opt.Logger.Handler()}
	}
	r := &run{
		opt: opt, parts: p, plan: plan, dir: absDir, tag: tag,
		log:   slog.New(handler).With("run", runID),
		stats: map[string]switchStats{}, calib: map[string]rundir.Calibration{}, time: &wallClock{},
	}
	r.man = newManifest(absDir, runID, r.tag, opt.ScenarioFile, plan)
	switch {
	case opt.Simulate:
		r.man.Mode = rundir.ModeSimulated
	case opt.Realtime:
		r.man.Scheduling = "realtime"
	case opt.Slice > 0:
		r.man.Scheduling = "nice, slice " + opt.Slice.String()
	default:
		r.man.Scheduling = "nice"
	}
	if err := r.man.save(); err != nil {
		_ = logFile.Close()
		return nil, nil, err
	}
	r.sockDir = agentSocketDir(absDir, r.tag)
	return r, logFile, nil
}

// markEnd records in the manifest how the run ended and returns whether it
// is incomplete: stopped early, an experiment incomplete or not run.
func (r *run) markEnd(runErr, tdErr error) bool {
	incomplete := runErr != nil
	_ = r.man.update(func(m *Manifest) {
		m.Ended = time.Now().UnixNano()
		for _, e := range m.Experiments {
			incomplete = incomplete || e.Incomplete
		}
		planned := len(r.plan.Experiments)
		if len(r.opt.Experiments) > 0 {
			planned = len(r.opt.Experiments)
		}
		if len(m.Experiments) < planned {
			incomplete = true
		}
		m.Incomplete = incomplete
		if runErr != nil {
			m.Error = runErr.Error()
		}
		if tdErr != nil {
			m.Fidelity = append(m.Fidelity, "teardown: "+tdErr.Error())
		}
	})
	return incomplete
}

// report builds the report from whatever was measured, also after an
// interrupt (the network is gone by now). Then it gets a short bound,
// since the user asked to stop; `homatb report DIR` rebuilds it. After a
// run that ended by itself it takes as long as it needs (a sweep's runs
// minutes) and stops only at an interrupt.
func (r *run) report(ctx context.Context) error {
	rctx, rcancel := ctx, context.CancelFunc(func() {})
	if ctx.Err() != nil {
		r.log.Info("building the report from what was measured", "limit", InterruptReportTimeout)
		rctx, rcancel = context.WithTimeout(context.WithoutCancel(ctx), InterruptReportTimeout)
	}
	defer rcancel()
	if _, err := reports.Build(rctx, r.dir, reports.WithLogger(r.log)); err != nil {
		r.log.Error("report", "err", err)
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// agentSocketDir is where agents' control sockets live: in the run
// directory when the path fits a Unix socket address (108 bytes), else under
// /tmp with the tag in the name so `homatb clean` finds it.
func agentSocketDir(runDir, tag string) string {
	d := filepath.Join(runDir, "agents")
	if len(filepath.Join(d, "h250.sock")) < 100 {
		return d
	}
	return filepath.Join(os.TempDir(), "homatb-"+tag)
}

// execute is the part of the run that teardown undoes: lay out and build
// the network, program the switches, start the agents, calibrate and run
// every experiment in turn.
func (r *run) execute(ctx context.Context) error {
	s := r.plan.Base
	external := s.Topology.Kind == scenario.KindExternal
	layout, err := topo.Layout(s.Topology, r.tag)
	if external {
		layout, err = topo.External(s.Topology.External, r.tag)
	}
	if err != nil {
		return err
	}
	r.layout = layout
	r.peers = layout.Peers()
	r.fab = layout.Fabric(s)
	r.requests = agents.Requests{Fabric: r.fab, Calibration: r.calib, Simulate: r.opt.Simulate}
	if err := r.man.update(func(m *Manifest) { m.Fabric = rundir.NewFabricRecord(r.fab) }); err != nil {
		return err
	}
	r.prog = newProgress(r.opt.Progress, plannedDurations(r.plan))
	defer r.prog.finish()

	r.prog.message("run %s (tag %s): %s", r.man.Run, r.tag, r.dir)
	if r.records, err = createRecords(filepath.Join(r.dir, rundir.RPCs().File), layout.Hosts); err != nil {
		return err
	}
	switch {
	case r.opt.Simulate:
		err = r.startSimulated(ctx) // simulated.go
	case external:
		err = r.startExternal(ctx) // external.go
	default:
		err = r.startEmulated(ctx)
	}
	if err != nil {
		return err
	}
	if !s.Calibration.Skip {
		if err := r.calibrate(ctx); err != nil {
			return fmt.Errorf("calibration: %w", err)
		}
	}
	for i := range r.plan.Experiments {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(r.opt.Experiments) > 0 && !slices.Contains(r.opt.Experiments, r.plan.Experiments[i].Name) {
			r.time.Skip()
			continue
		}
		if err := r.experiment(ctx, &r.plan.Experiments[i]); err != nil {
			return fmt.Errorf("experiment %s: %w", r.plan.Experiments[i].Name, err)
		}
	}
	return nil
}

// startEmulated builds the emulated network, programs its switches and
// starts an agent in every host.
func (r *run) startEmulated(ctx context.Context) error {
	mlog, err := os.Create(filepath.Join(r.dir, "logs", "mininet.log"))
	if err != nil {
		return err
	}
	defer mlog.Close()
	if err := r.startNetwork(ctx, mlog); err != nil {
		return err
	}
	bmv2JSON, err := r.buildNetwork(ctx)
	if err != nil {
		return err
	}
	pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
	r.ctl, err = r.parts.program(pctx, r.layout, r.fab, r.plan.Base, bmv2JSON, r.log.With("part", "controller"))
	pcancel()
	if err != nil {
		return fmt.Errorf("program switches (see logs/s*.log): %w", err)
	}
	if bmv2JSON != "" {
		r.attachBMv2Stats()
	}
	// Teardown unregisters the controls after the agents are gone.
	if r.ccs, err = agents.RegisterCongestion(r.plan, r.log); err != nil {
		return err
	}
	if names := r.ccs.Names(); len(names) > 0 {
		if err := r.man.update(func(m *Manifest) { m.Congestion = append(m.Congestion, names...) }); err != nil {
			return err
		}
	}
	return r.startAgents(ctx, r.layout)
}

// plannedDurations are the expected lengths of the run's steps, for the
// progress bar's ETA: one per calibrated transport, one per experiment.
func plannedDurations(p *scenario.Plan) []time.Duration {
	planned := []time.Duration{}
	for range distinctTransports(p) {
		planned = append(planned, time.Duration(len(p.Base.Calibration.Sizes))*2*time.Second)
	}
	for _, e := range p.Experiments {
		sc := e.Scenario
		planned = append(planned, sc.Warmup.D()+sc.Duration.D()+sc.Drain.D()+2*time.Second)
	}
	return planned
}

func distinctTransports(p *scenario.Plan) []scenario.Transport {
	seen := map[string]bool{}
	var out []scenario.Transport
	for _, t := range p.Base.Transports {
		if !seen[t.Name] {
			seen[t.Name] = true
			out = append(out, t)
		}
	}
	return out
}

// teeHandler sends records to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, rec slog.Record) error {
	var errs []error
	if t.a.Enabled(ctx, rec.Level) {
		errs = append(errs, t.a.Handle(ctx, rec.Clone()))
	}
	if t.b.Enabled(ctx, rec.Level) {
		errs = append(errs, t.b.Handle(ctx, rec))
	}
	return errors.Join(errs...)
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{t.a.WithGroup(name), t.b.WithGroup(name)}
}
