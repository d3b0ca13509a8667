// Package simulate runs a scenario in virtual time (homatb run
// --simulate): the same scenario, seeds and workloads as an emulated run,
// on simnet's discrete-event network of homatb's own engine hosts and
// tor.p4 switches, written to the same run directory files so that the
// same reports read it. Calibration is measured in the simulator, so the
// slowdowns divide by the simulator's own unloaded RTTs.
package simulate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/pias"
	"github.com/homatb/homatb/internal/buildinfo"
	"github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/simnet/tcpmodel"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
	"github.com/homatb/homatb/testbed/topo"
)

// Options tunes a simulated run.
type Options struct {
	// OutDir is the parent of the run directory (default "results");
	// RunDir, when set, is the run directory itself.
	OutDir, RunDir string
	ScenarioFile   string
	// Logger also receives the run's log (the run directory's
	// logs/homatb.log always does).
	Logger   *slog.Logger
	NoReport bool
	// HostNIC is NICFIFO (the default) or NICShaper.
	HostNIC string
}

// Result is where a simulated run went.
type Result struct {
	RunDir, Run string
	Incomplete  bool
}

// Epoch is the wall time a simulated run's first experiment starts at:
// fixed, so that the same scenario and seed write the same rpcs.csv.
// Each later experiment starts an hour of virtual time after the last.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// model says what the simulator models and leaves out, in the manifest.
var model = []string{
	"hosts: homatb's Homa engine (homa.Driven) with the scenario's configuration; servers reply at once (no application or host software time)",
	"switches: tor.p4's pipeline (p4/pipeline) programmed by the controller over P4Runtime, then the switch's traffic manager and shaper (p4/dataplane.PortModel)",
	"links: the fabric's rate and framing, store and forward",
	"not modelled: the kernel's TCP itself, host CPU and wake-up noise, telemetry series, hosts.csv, agent kills",
}

// tcpModel says what stands for the kernel's TCP when a scenario has tcp
// or pias transports.
const tcpModel = "tcp, pias: a model of TCP (simnet/tcpmodel), not the kernel's: tcprpc's framing on connections_per_peer connections per client-server pair used in turn (with tcp.open_when_busy: an idle one, another opened when all are busy; tcp.nic_priorities: NICs queue by DSCP class in strict priority), " +
	"MSS segments, delayed ACKs (every second segment, else 40 ms), slow start, congestion avoidance, NewReno fast recovery, RTO floor 200 ms, no wait for the handshake, no SACK, no TSO; " +
	"window laws reno (also standing in for cubic) and dctcp (alpha with g = 1/16, the CE state echoed as RFC 8257's receiver does); PIAS tags by bytes sent with the agents' thresholds"

// latencyModel says which fixed latencies the run charged (scenario
// simulation:).
func latencyModel(m *scenario.Simulation) string {
	if m == nil || *m == (scenario.Simulation{}) {
		return "latencies: none beyond each frame's serialisation on each link (store and forward)"
	}
	return fmt.Sprintf("latencies beyond serialisation: link %v, switch %v, host send %v, host receive %v (scenario simulation:)",
		m.LinkDelay.D(), m.SwitchDelay.D(), m.HostTxDelay.D(), m.HostRxDelay.D())
}

// Host NIC models (Options.HostNIC).
const (
	// NICFIFO is a real NIC: a FIFO serialising each frame at the link
	// rate. The report's ideal RTT assumes it.
	NICFIFO = "fifo"
	// NICShaper is the emulated hosts' shaper (Mininet's TCIntf: htb or
	// tbf with burst 15k): a token bucket at the link rate that hands up to
	// a burst of frames to the switch at once. With it short messages
	// overtake their sender's long ones in the switch's priority queues,
	// as in the emulation, where a FIFO NIC holds them in the host.
	NICShaper = "shaper"
)

// hostBurstBytes is Mininet's htb and tbf burst.
const hostBurstBytes = 15000

// Run simulates every experiment of plan and builds the report.
func Run(ctx context.Context, plan *scenario.Plan, opt Options) (*Result, error) {
	if err := Check(plan); err != nil {
		return nil, err
	}
	wallStart := time.Now()
	s := plan.Base
	// The run's name is its content's: the same scenario and seed make the
	// same run, so its summary repeats byte for byte. Its directory is
	// named by when it ran, like an emulated run's.
	runID := fmt.Sprintf("%s-simulated-seed%d", s.Name, *s.Seed)
	dir := opt.RunDir
	if dir == "" {
		if opt.OutDir == "" {
			opt.OutDir = "results"
		}
		dir = filepath.Join(opt.OutDir, wallStart.UTC().Format("20060102-150405")+"-"+s.Name+"-sim")
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("run directory %s is not empty: choose another --run-dir or remove it", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "logs", "homatb.log"))
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	defer logFile.Close()
	log := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if opt.Logger != nil {
		log = opt.Logger
	}
	r := &simRun{plan: plan, dir: dir, log: log, calib: map[string]rundir.Calibration{}, nic: opt.HostNIC}
	nicModel := "host NIC: a FIFO at the link rate (a real NIC; Linux txqueuelen 1000)"
	switch opt.HostNIC {
	case "", NICFIFO:
		r.nic = NICFIFO
	case NICShaper:
		nicModel = "host NIC: the emulated hosts' shaper, a token bucket at the link rate with Mininet's 15 kB burst handing frames to the switch at once (--host-nic shaper)"
	default:
		return nil, fmt.Errorf("--host-nic %q: expected %q or %q", opt.HostNIC, NICFIFO, NICShaper)
	}
	r.man = newManifest(runID, opt.ScenarioFile, plan, wallStart)
	res := &Result{RunDir: dir, Run: runID}
	runErr := r.execute(ctx)
	wall := time.Since(wallStart).Seconds()
	r.man.Ended = time.Now().UnixNano()
	r.man.Incomplete = runErr != nil || len(r.man.Experiments) < len(plan.Experiments)
	if runErr != nil {
		r.man.Error = runErr.Error()
	}
	r.man.Simulation = &rundir.Simulation{Events: r.events, SimulatedSeconds: float64(r.simNs) / 1e9, WallSeconds: wall,
		EventsPerSecond: float64(r.events) / wall, SimPerWall: float64(r.simNs) / 1e9 / wall,
		Model: append([]string{model[0], nicModel, latencyModel(plan.Base.Simulation)}, model[1:]...)}
	for _, t := range plan.Base.Transports {
		if !t.Engine() {
			r.man.Simulation.Model = append(r.man.Simulation.Model, tcpModel)
			break
		}
	}
	res.Incomplete = r.man.Incomplete
	if err := r.save(); err != nil {
		return res, errors.Join(runErr, err)
	}
	if !opt.NoReport && len(r.man.Experiments) > 0 {
		if _, err := reports.Build(ctx, dir); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("report: %w", err))
		}
	}
	return res, runErr
}

// simRun is one simulated run under way.
type simRun struct {
	plan   *scenario.Plan
	dir    string
	log    *slog.Logger
	man    *rundir.Manifest
	layout *topo.Network
	fab    *fabric.Fabric
	hosts  []simnet.Host
	sws    *simnet.Switches
	rpcs   *os.File
	rpcW   *rundir.CSVWriter[rundir.RPC]
	calib  map[string]rundir.Calibration
	events uint64
	simNs  int64
	exps   int // experiments simulated, calibration included: each gets its own hour
	nic    string
}

func (r *simRun) save() error {
	return rundir.WriteJSON(filepath.Join(r.dir, rundir.ManifestFile), r.man)
}

// execute lays out the network, programs its switches, calibrates each
// transport and runs every experiment.
func (r *simRun) execute(ctx context.Context) error {
	s := r.plan.Base
	var err error
	if r.layout, err = topo.Layout(s.Topology, "hb51a00"); err != nil {
		return err
	}
	r.fab = r.layout.Fabric(s)
	r.man.Fabric = rundir.NewFabricRecord(r.fab)
	if r.hosts, err = simHosts(r.layout); err != nil {
		return err
	}
	ct, err := switches.ControllerTopology(r.layout, r.fab, s, "")
	if err != nil {
		return err
	}
	pol, err := switches.Policy(s)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	r.sws, err = simnet.StartSwitches(pctx, ct, pol, r.log)
	cancel()
	if err != nil {
		return fmt.Errorf("program the simulated switches: %w", err)
	}
	defer r.sws.Close()
	if r.rpcs, err = os.Create(filepath.Join(r.dir, rundir.RPCs().File)); err != nil {
		return err
	}
	defer r.rpcs.Close()
	if r.rpcW, err = rundir.RPCs().NewWriter(r.rpcs, true); err != nil {
		return err
	}
	if err := r.save(); err != nil {
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
		e := &r.plan.Experiments[i]
		if err := r.experiment(ctx, e); err != nil {
			return fmt.Errorf("experiment %s: %w", e.Name, err)
		}
		if err := r.save(); err != nil {
			return err
		}
	}
	return nil
}

// network is a fresh simulated network with the switches' port modes set
// for transport t.
func (r *simRun) network(ctx context.Context, t scenario.Transport, seed uint64) (*simnet.Network, error) {
	if err := r.sws.SetPortModes(ctx, switches.TransportPortModes(t)); err != nil {
		return nil, err
	}
	burst := 0
	if r.nic == NICShaper {
		burst = hostBurstBytes
	}
	cfg := simnet.Config{RateBps: r.fab.RateBps, UplinkBps: r.fab.UplinkBps, WireOverhead: fabric.WireOverhead,
		QueueDepthPkts: r.fab.QueueDepthPkts, Hosts: r.hosts, Links: simLinks(r.layout),
		Switches: r.sws.Pipelines(), Seed: seed, HostBurstBytes: burst, PFC: pfcOf(r.plan.Base.Switch.PFC)}
	if m := r.plan.Base.Simulation; m != nil {
		cfg.Delay, cfg.SwitchDelay = m.LinkDelay.D(), m.SwitchDelay.D()
		cfg.HostTxDelay, cfg.HostRxDelay = m.HostTxDelay.D(), m.HostRxDelay.D()
	}
	return simnet.New(cfg)
}

// nextEpoch is the wall time the next job's virtual time 0 stands for.
func (r *simRun) nextEpoch() time.Time {
	r.exps++
	return epoch.Add(time.Duration(r.exps) * time.Hour)
}

// finish books a job's events and writes its records.
func (r *simRun) finish(j *job) error {
	r.events += j.net.Clock().Events()
	r.simNs += j.net.Clock().Now()
	for _, row := range j.rows {
		if err := r.rpcW.Write(&row); err != nil {
			return err
		}
	}
	return r.rpcW.Flush()
}

// calibrate measures each transport's unloaded RTT per calibration size
// between the first two hosts, one RPC at a time, as an emulated run
// does; the rows enter rpcs.csv under calibrate-<transport>. A scenario
// of one-way messages calibrates one-way messages instead (their rows in
// rpcs.csv, so that slowdowns divide by a one-way ideal) and the round
// trip of the smallest size only, unrecorded, for the transports'
// parameters (Homa's RTTbytes).
func (r *simRun) calibrate(ctx context.Context) error {
	s := r.plan.Base
	resp := s.CalibrationResponse()
	oneWay := s.OneWay()
	seen := map[string]bool{}
	for _, t := range s.Transports {
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		cal := rundir.Calibration{RTTus: map[uint32]float64{}, ResponseBytes: resp}
		if oneWay {
			cal.OneWayUs = map[uint32]float64{}
		}
		for _, size := range s.Calibration.Sizes {
			med, err := r.calibrateSize(ctx, t, size, resp, oneWay, true)
			if err != nil {
				return err
			}
			if oneWay {
				cal.OneWayUs[size] = med
			} else {
				cal.RTTus[size] = med
			}
		}
		if oneWay {
			small := slices.Min(s.Calibration.Sizes)
			med, err := r.calibrateSize(ctx, t, small, resp, false, false)
			if err != nil {
				return err
			}
			cal.RTTus[small] = med
		}
		cal.UnschedBytes = agents.UnschedBytes(r.fab, agents.BaseRTT(cal))
		r.calib[t.Name] = cal
		r.man.Calibration[t.Name] = cal
		r.log.Info("calibrated in the simulator", "transport", t.Name, "rtt_us", cal.RTTus, "one_way_us", cal.OneWayUs, "unsched_bytes", cal.UnschedBytes)
	}
	return nil
}

// calibrateSize runs transport t's calibration messages of size bytes
// (one-way, or RPCs with resp-byte responses) on a fresh network and
// returns their median time in µs; book puts their rows in rpcs.csv.
func (r *simRun) calibrateSize(ctx context.Context, t scenario.Transport, size, resp uint32, oneWay, book bool) (float64, error) {
	s := r.plan.Base
	server, cl := r.layout.Hosts[0], r.layout.Hosts[1]
	name := rundir.CalibrationExperiment(t.Name)
	net, err := r.network(ctx, t, *s.Seed)
	if err != nil {
		return 0, err
	}
	sizes, err := fixedSize(size)
	if err != nil {
		return 0, err
	}
	c := client{host: cl.Name, phase: rundir.PhaseCalibrate, sizes: sizes, outstanding: 1,
		maxRPCs: uint64(s.Calibration.Samples), respBytes: resp, seed: *s.Seed,
		targets: []netip.AddrPort{netip.AddrPortFrom(server.IP, ServerPort)}, targetHosts: []string{server.Name}}
	tcp, err := r.tcpConfig(t)
	if err != nil {
		return 0, err
	}
	j := &job{name: name, transport: t.Name, net: net, cfg: r.homaConfig(t), tcp: tcp, nicPrio: t.TCP.NICPriorities, clients: []client{c},
		servers: map[string]bool{server.Name: true}, used: []string{server.Name, cl.Name},
		length: time.Hour, drain: 0, epoch: r.nextEpoch(), log: r.log, oneWay: oneWay}
	if err := j.run(); err != nil {
		return 0, err
	}
	var times []float64
	for _, row := range j.rows {
		if row.Status == rundir.StatusCompleted {
			times = append(times, float64(row.DoneNs-row.IntendedNs)/1e3)
		}
	}
	if len(times) == 0 {
		return 0, fmt.Errorf("%s-%d: no RPC completed between %s and %s", name, size, cl.Name, server.Name)
	}
	if book {
		if err := r.finish(j); err != nil {
			return 0, err
		}
	} else {
		r.events += j.net.Clock().Events()
		r.simNs += j.net.Clock().Now()
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// experiment simulates one experiment and records it.
func (r *simRun) experiment(ctx context.Context, e *scenario.Experiment) error {
	s := e.Scenario
	if s.HasDefences() {
		var d controller.Defences
		if s.Switch.DefencesOn() {
			d = switches.Defences(s)
		}
		if err := r.sws.SetDefences(ctx, d); err != nil {
			return err
		}
	}
	net, err := r.network(ctx, e.Transport, e.Seed)
	if err != nil {
		return err
	}
	var (
		fidelity []string
		moveErrs []error
	)
	for _, f := range s.Faults {
		leaf, spine, switchLink := f.SwitchLink()
		if f.Down != nil && switchLink {
			from := (s.Warmup.D() + f.Down.At.D()).Nanoseconds()
			to := from + f.Down.For.D().Nanoseconds()
			if err := net.SetLinkDown(leaf, spine, from, to); err != nil {
				return err
			}
			// The controller moves the paths at the fault's instant and
			// back at its end; the event loop waits for its writes, so
			// in virtual time they take none.
			move := func(down bool) func() {
				return func() {
					if err := r.sws.SetLinkDown(ctx, leaf, spine, down); err != nil {
						moveErrs = append(moveErrs, err)
					}
				}
			}
			net.Clock().At(from, move(true))
			net.Clock().At(to, move(false))
			defer move(false)() // the groups as the next experiment expects them
			fidelity = append(fidelity, fmt.Sprintf("link %s down at %s into the measurement for %s; the simulated controller moved the paths off it at that instant and back at its end (no convergence delay)",
				f.Link, f.Down.At.D(), f.Down.For.D()))
			continue
		}
		if f.Down != nil {
			// At is in the measurement, which starts a warm-up after the
			// clients (virtual time 0).
			from := (s.Warmup.D() + f.Down.At.D()).Nanoseconds()
			if err := net.SetDown(f.Link, from, from+f.Down.For.D().Nanoseconds()); err != nil {
				return err
			}
		}
		if f.Loss == nil {
			continue // Check refused the other kinds
		}
		to, from := *f.Loss, *f.Loss
		switch f.Direction {
		case "to_host":
			from = 0
		case "from_host":
			to = 0
		}
		if err := net.SetLoss(f.Link, to, from); err != nil {
			return err
		}
	}
	ro, err := agents.PlanRoles(e, r.layout, r.fab, 0)
	if err != nil {
		return err
	}
	cs, err := clientsOf(ro, r.layout)
	if err != nil {
		return err
	}
	tcp, err := r.tcpConfig(e.Transport)
	if err != nil {
		return err
	}
	j := &job{name: e.Name, transport: e.Transport.Name, net: net, cfg: r.homaConfig(e.Transport), tcp: tcp, nicPrio: e.Transport.TCP.NICPriorities,
		clients: cs, servers: ro.Servers, used: ro.Used, warmup: s.Warmup.D(), length: s.Warmup.D() + s.Duration.D(),
		drain: s.Drain.D(), epoch: r.nextEpoch(), log: r.log, oneWay: s.OneWay()}
	if j.oneWay {
		fidelity = append(fidelity, "one-way messages: each ends when its last byte reaches the receiver, on the simulator's one clock; the sender learns of it at that instant and at no cost on the wire (no response, no ACK), which the emulation could not do")
	}
	if j.colls, j.mats, err = collectivesOf(ro); err != nil {
		return err
	}
	j.bookServed = true
	var cards *postcards
	if s.Switch.PostcardsOn() {
		if cards, err = newPostcards(r.dir, e.Name, j.epoch, r.layout); err != nil {
			return err
		}
		net.OnPostcard(cards.write)
	}
	runErr := errors.Join(j.run(), errors.Join(moveErrs...))
	if cards != nil {
		runErr = errors.Join(runErr, cards.close())
	}
	if runErr != nil {
		return runErr
	}
	if err := r.finish(j); err != nil {
		return err
	}
	if err := r.writeServed(j.served); err != nil {
		return err
	}
	for name, st := range net.SwitchStats() {
		if err := rundir.WriteSwitchStats(r.dir, e.Name, name, st); err != nil {
			return err
		}
	}
	rec := rundir.Experiment{Name: e.Name, Transport: e.Transport.Name, Label: e.Transport.Label, Config: e.Transport.Config(),
		Params: e.Params, WarmupMs: s.Warmup.D().Milliseconds(), DurationMs: s.Duration.D().Milliseconds(), Seed: e.Seed,
		Started: j.epoch.UnixNano(), Ended: j.epoch.Add(time.Duration(net.Clock().Now())).UnixNano(),
		Fidelity: append(modelNote(e.Transport, tcp), fidelity...), RPCs: j.books, TransportCounters: j.counters, Hosts: j.hosts}
	if rec.Params == nil {
		rec.Params = map[string]string{}
	}
	rec.Receivers = ro.Receivers
	rec.ConfiguredBps, rec.ConfiguredRPS, rec.UnratedClients = ro.ConfiguredLoad()
	rec.ClientPhases = ro.Phases
	r.man.Experiments = append(r.man.Experiments, rec)
	r.log.Info("simulated", "experiment", e.Name, "issued", j.books.Issued, "completed", j.books.Completed,
		"failed", j.books.Failed, "in_flight", j.books.InFlight, "events", net.Clock().Events())
	return nil
}

// writeServed appends a job's served rows to served.csv.
func (r *simRun) writeServed(rows []rundir.Served) error {
	if len(rows) == 0 {
		return nil
	}
	path := filepath.Join(r.dir, rundir.ServedRPCs().File)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w, err := rundir.ServedRPCs().NewWriter(f, statErr != nil)
	if err != nil {
		return errors.Join(err, f.Close())
	}
	for i := range rows {
		if err := w.Write(&rows[i]); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return errors.Join(w.Flush(), f.Close())
}

// postcards writes each switch's postcards of one experiment, as the
// embedded switch does (switch/<experiment>/<sw>.postcards).
type postcards struct {
	files map[string]*os.File
	bufs  map[string]*bufio.Writer
	rec   [switchstats.PostcardLen]byte
	err   error
}

func newPostcards(dir, exp string, epoch time.Time, layout *topo.Network) (*postcards, error) {
	pc := &postcards{files: map[string]*os.File{}, bufs: map[string]*bufio.Writer{}}
	for _, sw := range layout.Switches {
		path := rundir.PostcardsPath(dir, exp, sw.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, errors.Join(err, pc.close())
		}
		f, err := os.Create(path)
		if err != nil {
			return nil, errors.Join(err, pc.close())
		}
		pc.files[sw.Name], pc.bufs[sw.Name] = f, bufio.NewWriterSize(f, 1<<16)
		if _, err := pc.bufs[sw.Name].Write(switchstats.AppendPostcardHeader(nil, epoch.UnixNano())); err != nil {
			return nil, errors.Join(err, pc.close())
		}
	}
	return pc, nil
}

func (pc *postcards) write(sw string, p *switchstats.Postcard) {
	p.Encode(&pc.rec)
	if _, err := pc.bufs[sw].Write(pc.rec[:]); err != nil && pc.err == nil {
		pc.err = fmt.Errorf("postcards of %s: %w", sw, err)
	}
}

func (pc *postcards) close() error {
	errs := []error{pc.err}
	for name, f := range pc.files {
		if b := pc.bufs[name]; b != nil {
			errs = append(errs, b.Flush())
		}
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// homaConfig is engine transport t's configuration as an emulated run's
// agents get it (the calibration so far included), framed as the fabric
// frames packets.
func (r *simRun) homaConfig(t scenario.Transport) homaconf.Config {
	c := agents.Requests{Fabric: r.fab, Calibration: r.calib}.HomaConfig(t)
	c.FrameOverhead = r.fab.Framing
	return c
}

// tcpConfig is the TCP model's configuration for kernel-TCP transport t
// (nil for an engine transport): its window law, tcprpc's connections per
// peer (or a pool that grows when busy), segments of the fabric's MTU, and for PIAS the tagging the agents
// would attach (agents.Requests.TCPParams, pias.ForRun: the same
// thresholds from the same calibration).
func (r *simRun) tcpConfig(t scenario.Transport) (*tcpmodel.Config, error) {
	if t.Engine() {
		return nil, nil
	}
	law, err := tcpmodel.LawOf(t.TCP.Congestion)
	if err != nil {
		return nil, err
	}
	tp := agents.Requests{Fabric: r.fab, Calibration: r.calib}.TCPParams(t)
	cfg := &tcpmodel.Config{MSS: r.fab.MTU - ipTCPHeaders, Law: law, ConnsPerPeer: int(tp.GetConnectionsPerPeer()),
		OpenWhenBusy: t.TCP.OpenWhenBusy, DelayedAck: true}
	if tp.GetPias() {
		us := time.Microsecond
		pc := pias.ForRun(tp.GetLinkBps(), time.Duration(max(tp.GetBaseRttUs(), 1))*us, tp.GetPiasThresholds(),
			time.Duration(tp.GetPiasIdleResetUs())*us)
		if err := pc.Validate(); err != nil {
			return nil, fmt.Errorf("transport %s: %w", t.Config(), err)
		}
		cfg.PIAS = &tcpmodel.PIAS{Thresholds: pc.Thresholds, IdleReset: pc.IdleReset}
		for i := range pc.Levels() {
			cfg.PIAS.DSCP = append(cfg.PIAS.DSCP, pc.LevelDSCP(i))
		}
	}
	return cfg, nil
}

// modelNote is an experiment's fidelity note when its transport ran on
// the TCP model (empty for engine transports, which are the real code):
// the summary and the report carry it beside the results.
func modelNote(t scenario.Transport, tcp *tcpmodel.Config) []string {
	if tcp == nil {
		return []string{}
	}
	law := tcp.Law.String()
	if t.TCP.Congestion == "cubic" {
		law += ", standing in for cubic"
	}
	pi := ""
	if tcp.PIAS != nil {
		pi = " with PIAS's tagging"
	}
	if tcp.OpenWhenBusy {
		pi += ", a connection opened whenever a pair's are all busy"
	}
	if t.TCP.NICPriorities {
		pi += ", NICs with the switches' priority queues"
	}
	return []string{fmt.Sprintf("%s ran on the simulator's model of TCP (simnet/tcpmodel, window law %s%s), not the kernel's TCP", t.Config(), law, pi)}
}

// ipTCPHeaders are an IPv4 and a TCP header without options: the MTU less
// them is the MSS.
const ipTCPHeaders = 40

// newManifest opens a simulated run's manifest.
func newManifest(runID, file string, plan *scenario.Plan, started time.Time) *rundir.Manifest {
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	return &rundir.Manifest{Run: runID, Tag: "hb51a00", ScenarioFile: abs, Scenario: plan.Base.Doc(),
		Started: started.UnixNano(), Incomplete: true, Mode: rundir.ModeSimulated,
		Versions: map[string]string{"go": runtime.Version()}, GitCommit: buildinfo.Commit(),
		Baseline: plan.Base.BaselineConfig(), Fidelity: []string{}, Experiments: []rundir.Experiment{},
		Calibration: map[string]rundir.Calibration{}, Order: plan.Order(), Seeds: plan.Seeds()}
}

// pfcOf is the scenario's switch.pfc as the switches run it (zero: off).
func pfcOf(p *scenario.PFC) dataplane.PFC {
	if p == nil {
		return dataplane.PFC{}
	}
	c := dataplane.PFC{XoffPkts: p.XoffPkts, XonPkts: p.XonPkts, HeadroomPkts: p.HeadroomPkts}
	for _, q := range p.Priorities {
		c.Priorities |= 1 << q
	}
	return c
}
