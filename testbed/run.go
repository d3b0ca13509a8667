// Package testbed runs scenarios: it builds the emulated network with
// Mininet (through testbed/mn), starts the switch processes, has them
// programmed, starts an agent in every host, calibrates, runs every
// experiment of the plan and collects records, telemetry and switch
// statistics into a run directory, and always tears everything down.
package testbed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/runfmt"
	"github.com/homatb/homatb/testbed/cleanup"
	"github.com/homatb/homatb/testbed/mn"
	"github.com/homatb/homatb/testbed/scenario"
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
	// TeardownTimeout bounds teardown (default 6s: with the 2s an
	// interrupted experiment gets to hand over its records, everything is
	// gone within 10s of a signal).
	TeardownTimeout time.Duration
}

// InterruptReportTimeout bounds building the report of an interrupted run.
// It starts once the network is torn down, so it does not delay cleanup.
const InterruptReportTimeout = 20 * time.Second

// Network is a built network as the controller sees it.
type Network struct {
	Layout   *topo.Network
	Scenario *scenario.Scenario
	// SwitchAddr maps switch names to their P4Runtime addresses.
	SwitchAddr map[string]string
	// BMv2 only: the tor.json the switches load and their Thrift ports.
	BMv2JSON   string
	ThriftPort map[string]int
}

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
	opt     Options
	plan    *scenario.Plan
	dir     string
	tag     string
	log     *slog.Logger
	man     *Manifest
	runner  *mn.Runner
	net     *Network
	agents  agents
	stats   map[string]*statsClient
	records *recordsFile
	prog    *progress
	sockDir string
	cancel  context.CancelCauseFunc
	calib   map[string]runfmt.Calibration
	ctl     *control
}

// Run executes a plan. It returns when the run has ended and its network
// is gone; the error says why a run stopped early (the run directory then
// holds what was measured, marked incomplete).
func Run(ctx context.Context, plan *scenario.Plan, opt Options) (*Result, error) {
	if opt.OutDir == "" {
		opt.OutDir = "results"
	}
	if opt.Registry == "" {
		opt.Registry = cleanup.DefaultRegistry
	}
	if opt.TeardownTimeout == 0 {
		opt.TeardownTimeout = 6 * time.Second
	}
	runID := time.Now().UTC().Format("20060102-150405") + "-" + plan.Base.Name
	dir := opt.RunDir
	if dir == "" {
		dir = filepath.Join(opt.OutDir, runID)
	}
	// A run appends to its CSV files as it goes: in a directory an earlier
	// run left, the two would mix and the report would fail on it.
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("run directory %s is not empty (an earlier run's files would mix with this one's): choose another --run-dir or remove it", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(absDir, "logs", "homatb.log"))
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	defer logFile.Close()
	var handler slog.Handler = slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug})
	if opt.Logger != nil {
		handler = teeHandler{handler, opt.Logger.Handler()}
	}
	r := &run{
		opt: opt, plan: plan, dir: absDir, tag: NewTag(runID),
		log:   slog.New(handler).With("run", runID),
		stats: map[string]*statsClient{}, calib: map[string]runfmt.Calibration{},
	}
	r.man = newManifest(absDir, runID, r.tag, opt.ScenarioFile, plan)
	if err := r.man.save(); err != nil {
		return nil, err
	}
	r.sockDir = agentSocketDir(absDir, r.tag)
	reg := cleanup.Registration{Tag: r.tag, Run: runID, RunDir: absDir}
	if r.sockDir != filepath.Join(absDir, "agents") {
		reg.Dirs = []string{r.sockDir}
	}
	regPath, err := cleanup.Register(opt.Registry, reg)
	if err != nil {
		return nil, err
	}
	res := &Result{RunDir: absDir, Run: runID, Tag: r.tag, Manifest: r.man}

	runCtx, cancel := context.WithCancelCause(ctx)
	r.cancel = cancel
	runErr := r.execute(runCtx)
	if runErr == nil {
		runErr = context.Cause(runCtx)
	} else if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, runErr) && errors.Is(runErr, context.Canceled) {
		runErr = cause // say why the context ended (a crashed child, a signal)
	}
	cancel(nil)

	tdErr := r.teardown()
	_ = os.Remove(regPath)

	incomplete := runErr != nil
	_ = r.man.update(func(m *Manifest) {
		m.Ended = time.Now().UnixNano()
		for _, e := range m.Experiments {
			incomplete = incomplete || e.Incomplete
		}
		if len(m.Experiments) < len(plan.Experiments) {
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
	res.Incomplete = incomplete
	// The report is built from whatever was measured, also after an
	// interrupt (the network is gone by now). Then it gets a short bound,
	// since the user asked to stop; `homatb report DIR` rebuilds it.
	if !opt.NoReport && len(r.man.Experiments) > 0 {
		limit := 2 * time.Minute
		if ctx.Err() != nil {
			limit = InterruptReportTimeout
			r.log.Info("building the report from what was measured", "limit", limit)
		}
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
		if _, err := reports.Build(rctx, absDir, reports.WithLogger(r.log)); err != nil {
			r.log.Error("report", "err", err)
			runErr = errors.Join(runErr, fmt.Errorf("report: %w", err))
		}
		rcancel()
	}
	return res, errors.Join(runErr, tdErr)
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

// execute is the part of the run that teardown undoes.
func (r *run) execute(ctx context.Context) error {
	s := r.plan.Base
	layout, err := topo.Layout(s.Topology, r.tag)
	if err != nil {
		return err
	}
	planned := []time.Duration{}
	for range distinctTransports(r.plan) {
		planned = append(planned, time.Duration(len(s.Calibration.Sizes))*2*time.Second)
	}
	for _, e := range r.plan.Experiments {
		sc := e.Scenario
		planned = append(planned, sc.Warmup.D()+sc.Duration.D()+sc.Drain.D()+2*time.Second)
	}
	r.prog = newProgress(r.opt.Progress, planned)
	defer r.prog.finish()

	r.prog.message("run %s (tag %s): %s", r.man.Run, r.tag, r.dir)
	mlog, err := os.Create(filepath.Join(r.dir, "logs", "mininet.log"))
	if err != nil {
		return err
	}
	defer mlog.Close()
	r.runner, err = mn.Start(ctx, mn.Options{
		Dir: filepath.Join(r.dir, "mininet"), Log: mlog,
		Env: []string{cleanup.EnvTag + "=" + r.tag, "HOMATB_OWNER=" + strconv.Itoa(os.Getpid())},
	})
	if err != nil {
		return err
	}
	go r.watch(ctx)

	r.net = &Network{Layout: layout, Scenario: s, SwitchAddr: map[string]string{}, ThriftPort: map[string]int{}}
	spec, err := r.buildSpec(layout)
	if err != nil {
		return err
	}
	r.log.Info("building network", "hosts", len(layout.Hosts), "switches", len(layout.Switches))
	bctx, bcancel := context.WithTimeout(ctx, 90*time.Second)
	_, err = r.runner.Build(bctx, spec)
	bcancel()
	if err != nil {
		return fmt.Errorf("build network (see logs/mininet.log): %w", err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
	r.ctl, err = connectAndProgram(pctx, r.net, r.log.With("part", "controller"))
	pcancel()
	if err != nil {
		return fmt.Errorf("program switches (see logs/s*.log): %w", err)
	}
	if err := r.startAgents(ctx, layout); err != nil {
		return err
	}
	if err := r.records0(); err != nil {
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
		if err := r.experiment(ctx, &r.plan.Experiments[i]); err != nil {
			return fmt.Errorf("experiment %s: %w", r.plan.Experiments[i].Name, err)
		}
	}
	return nil
}

func (r *run) records0() error {
	var err error
	r.records, err = createRecords(filepath.Join(r.dir, "rpcs.csv"))
	return err
}

// watch turns an unexpected process exit into the end of the run.
func (r *run) watch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-r.runner.Events():
			if !ok {
				r.cancel(errors.New("mininet runner ended unexpectedly (see logs/mininet.log)"))
				return
			}
			if ev.Event == "exit" && !ev.Stopping {
				r.log.Error("process exited", "name", ev.Name, "rc", ev.RC)
				r.cancel(fmt.Errorf("%s exited with code %d during the run (see logs/%s.log)", ev.Name, ev.RC, ev.Name))
				return
			}
		}
	}
}

// buildSpec turns the layout into the runner's build request.
func (r *run) buildSpec(n *topo.Network) (mn.Spec, error) {
	s := r.plan.Base
	spec := mn.Spec{Tag: n.Tag, MTU: s.Link.MTU, Shaper: s.Link.Shaper, BWMbit: float64(s.Link.Rate) / 1e6,
		Env: map[string]string{cleanup.EnvTag: n.Tag}}
	for _, h := range n.Hosts {
		spec.Hosts = append(spec.Hosts, mn.HostSpec{Name: h.Name, Node: h.Node, IP: fmt.Sprintf("%s/%d", h.IP, h.Prefix), MAC: h.MAC})
		spec.Links = append(spec.Links, mn.LinkSpec{A: h.Name, APort: 0, AIntf: h.Intf, B: h.Switch, BPort: h.Port, BIntf: h.SwitchIntf, ShapeA: true})
	}
	for _, l := range n.Links {
		a, b := n.Switches[switchIndex(n, l.A)], n.Switches[switchIndex(n, l.B)]
		spec.Links = append(spec.Links, mn.LinkSpec{A: l.A, APort: l.APort, AIntf: a.Intfs[l.APort], B: l.B, BPort: l.BPort, BIntf: b.Intfs[l.BPort]})
	}
	kind := "homatb"
	if s.Switch.Target == scenario.TargetBMv2 {
		kind = "bmv2"
	}
	for _, sw := range n.Switches {
		port, err := freePort()
		if err != nil {
			return spec, err
		}
		admin := filepath.Join(r.sockDir, sw.Name+"-admin.sock")
		if err := os.MkdirAll(r.sockDir, 0o755); err != nil {
			return spec, err
		}
		ss := mn.SwitchSpec{
			Name: sw.Name, Node: sw.Node, Kind: kind, Binary: r.opt.Binary, DeviceID: sw.DeviceID, GRPCPort: port,
			LinkBps: uint64(s.Link.Rate), QueueDepthPkts: s.Switch.QueueDepthPkts,
			StatsFile: filepath.Join(r.dir, "switch", sw.Name+"-final.json"),
			LogFile:   filepath.Join(r.dir, "logs", sw.Name+".log"), AdminSocket: admin,
			ExtraArgs: switchBufferArgs(s.Switch),
		}
		if s.Switch.Pcap {
			ss.PcapDir = filepath.Join(r.dir, "pcap")
			if err := os.MkdirAll(ss.PcapDir, 0o755); err != nil {
				return spec, err
			}
		}
		if err := os.MkdirAll(filepath.Join(r.dir, "switch"), 0o755); err != nil {
			return spec, err
		}
		if kind == "bmv2" {
			if ss.BMv2JSON, err = filepath.Abs(BMv2JSONPath); err != nil {
				return spec, err
			}
			if ss.ThriftPort, err = freePort(); err != nil {
				return spec, err
			}
			r.net.BMv2JSON = ss.BMv2JSON
			r.net.ThriftPort[sw.Name] = ss.ThriftPort
		}
		spec.Switches = append(spec.Switches, ss)
		r.net.SwitchAddr[sw.Name] = "127.0.0.1:" + strconv.Itoa(port)
		r.stats[sw.Name] = newStatsClient(sw.Name, admin)
	}
	return spec, nil
}

// switchBufferArgs turns the scenario's byte limits and buffer into the
// embedded switch's flags (validation keeps them off BMv2).
func switchBufferArgs(sw scenario.Switch) []string {
	var args []string
	add := func(flag string, v int64) {
		if v > 0 {
			args = append(args, flag, strconv.FormatInt(v, 10))
		}
	}
	b := sw.Buffer
	add("--queue-depth-bytes", int64(sw.QueueDepthBytes))
	add("--shared-buffer-bytes", int64(b.SharedBytes))
	if b.Alpha > 0 {
		args = append(args, "--shared-alpha", strconv.FormatFloat(b.Alpha, 'g', -1, 64))
	}
	add("--port-buffer-bytes", int64(b.PortBytes))
	add("--port-buffer-pkts", int64(b.PortPkts))
	return args
}

func switchIndex(n *topo.Network, name string) int {
	for i, s := range n.Switches {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// freePort asks the kernel for an unused loopback port. Another process
// could take it before the switch binds; the switch then fails to start and
// the build says so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (r *run) startAgents(ctx context.Context, n *topo.Network) error {
	if err := os.MkdirAll(r.sockDir, 0o755); err != nil {
		return err
	}
	hosts := make([]string, 0, len(n.Hosts))
	for _, h := range n.Hosts {
		sock := filepath.Join(r.sockDir, h.Name+".sock")
		_ = os.Remove(sock)
		recDir := filepath.Join(r.dir, "agents", "records", h.Name)
		if err := os.MkdirAll(recDir, 0o755); err != nil {
			return err
		}
		name := "agent-" + h.Name
		_, err := r.runner.Popen(ctx, name, h.Name, filepath.Join(r.dir, "logs", name+".log"), nil,
			r.opt.Binary, "agent", "--socket", sock, "--name", h.Name, "--records-dir", recDir)
		if err != nil {
			return fmt.Errorf("start agent on %s: %w", h.Name, err)
		}
		hosts = append(hosts, h.Name)
	}
	for _, h := range hosts {
		a, err := dialAgent(ctx, h, filepath.Join(r.sockDir, h+".sock"), r.runner.Exited())
		if err != nil {
			return fmt.Errorf("%w (see logs/agent-%s.log)", err, h)
		}
		r.agents.add(a)
	}
	r.log.Info("agents up", "hosts", len(hosts))
	return nil
}

// teardown stops agents, the network and every process, and then checks by
// tag that nothing is left, removing what is. It is bounded by
// TeardownTimeout however the run ended.
func (r *run) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.opt.TeardownTimeout)
	defer cancel()
	var errs []error
	if r.records != nil {
		errs = append(errs, r.records.close())
	}
	if err := r.ctl.close(); err != nil {
		r.log.Warn("controller close", "err", err)
	}
	actx, acancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	r.agents.shutdown(actx)
	acancel()
	if r.runner != nil {
		// Leave two seconds of the budget for the sweep below.
		sctx, scancel := context.WithTimeout(ctx, max(r.opt.TeardownTimeout-3500*time.Millisecond, time.Second))
		if err := r.runner.Stop(sctx); err != nil {
			r.log.Warn("runner stop", "err", err)
		}
		scancel()
	}
	left, err := cleanup.Find(r.opt.Registry, r.tag)
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range left {
		l.Alive = false // ours: the owner is this process
		l.Files = nil   // the registration is removed by Run
		if l.Empty() {
			continue
		}
		r.log.Warn("removing leftovers", "what", l.String())
		if err := cleanup.Remove(ctx, l, 500*time.Millisecond, true); err != nil {
			errs = append(errs, err)
		}
	}
	if r.sockDir != filepath.Join(r.dir, "agents") {
		_ = os.RemoveAll(r.sockDir)
	}
	return errors.Join(errs...)
}

// runFidelity records a run-wide fidelity warning.
func (r *run) runFidelity(msg string) {
	r.log.Warn("fidelity", "msg", msg)
	_ = r.man.update(func(m *Manifest) { m.Fidelity = append(m.Fidelity, msg) })
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
