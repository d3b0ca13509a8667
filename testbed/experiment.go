package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/internal/sysinfo"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/capture"
	"github.com/homatb/homatb/testbed/faults"
	"github.com/homatb/homatb/testbed/hostqdisc"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
)

// experimentRun is one experiment under way: who does what, its manifest
// entry as it fills, what start sampled for the end to difference, and the
// books the agents hand over.
type experimentRun struct {
	r     *run
	e     *scenario.Experiment
	roles agents.Roles
	rec   rundir.Experiment

	startStats    map[string]rundir.SwitchStats
	load          *sysinfo.Load // the machine's, on the wall clock only
	stopTelemetry func()
	faults        *faults.Run
	clock         driver.Scheduler // the experiment's, the timed faults'
	capture       *capture.Session
	adversaries   []adversaryProc
	// qdisc0 are the host links' class counters at the start (host_qdisc:
	// pacer in emulation), nil otherwise.
	qdisc0 map[string]hostqdisc.Stats

	mu          sync.Mutex
	cpuUs       uint64
	byHost      map[string]rundir.HostCounters
	lags        []lag
	lagWarnings []string
}

// experiment runs one experiment in steps: configure every agent (servers
// first), start (switch windows, telemetry, clients), wait warm-up and
// duration, stop with a drain (books and counters), end the measurement
// (CPU, fidelity, switch statistics), collect the records and write the
// manifest entry. It stops and collects also when interrupted, so what was
// measured is kept; the drain is then skipped.
func (r *run) experiment(ctx context.Context, e *scenario.Experiment) error {
	r.prog.begin(e.Name)
	x, err := r.newExperiment(e)
	if err != nil {
		return err
	}
	x.sieveRecords()
	if err := x.configureSwitches(ctx); err != nil {
		return err
	}
	if err := x.divideHostLinks(); err != nil {
		return err
	}
	sched, notes, err := r.time.Begin(ctx, e, x.roles)
	if err != nil {
		return err
	}
	defer r.time.End()
	x.clock = sched
	x.rec.Fidelity = append(x.rec.Fidelity, notes...)
	x.rec.Fidelity = append(x.rec.Fidelity, scenario.OverloadWarnings(e.Scenario)...)
	x.rec.Fidelity = append(x.rec.Fidelity, scenario.MarkingWarnings(e)...)
	if err := x.configure(ctx); err != nil {
		return err
	}
	x.capture = capture.Begin(r.dir, e.Name, e.Scenario.Capture, r.layout, r.hostNS)
	defer x.capture.Stop()
	if err := x.start(ctx); err != nil {
		return err
	}
	defer r.heartbeat(e.Name, heartbeatEvery)()
	waitErr := r.time.Run(ctx)
	x.faults.End()
	interrupted := waitErr != nil
	drain, budget := stopBudget(e.Scenario, interrupted)
	stopCtx, stopCancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer stopCancel()
	stopErr := x.stop(stopCtx, drain, interrupted)
	x.endMeasurement(stopCtx)
	x.collectAdversaries(stopCtx)
	x.rec.Captures = x.capture.Stop()
	x.rec.Fidelity = append(x.rec.Fidelity, x.capture.Warnings()...)
	x.faults.Clear(stopCtx) // after the statistics, whose gauges show the faults in force
	fetchErr := x.collect(stopCtx)
	if !interrupted {
		x.faults.RestartKilled(ctx)
	}
	x.rec.Fidelity = append(x.rec.Fidelity, x.faults.Warnings()...)
	x.rec.Incomplete = interrupted || stopErr != nil || fetchErr != nil
	if err := x.compactRecords(); err != nil {
		return err
	}
	if err := x.record(ctx); err != nil {
		return err
	}
	for _, err := range []error{waitErr, stopErr, fetchErr} {
		if err != nil {
			return err
		}
	}
	r.time.End()
	// State reset between experiments: let the switch queues drain.
	return r.waitQueuesEmpty(ctx, 2*time.Second)
}

// newExperiment works out the roles and opens the manifest entry, marked
// incomplete until the end. The clients start half a second from now, or
// in a simulated run at the experiment's virtual time 0.
func (r *run) newExperiment(e *scenario.Experiment) (*experimentRun, error) {
	ro, err := agents.PlanRoles(e, r.layout, r.fab, r.time.NextEpoch().UnixNano())
	if err != nil {
		return nil, err
	}
	rec := ro.Entry(e)
	rec.Incomplete = true
	return &experimentRun{r: r, e: e, roles: ro, rec: rec, byHost: map[string]rundir.HostCounters{}}, nil
}

// configureSwitches puts the switches' ports in the modes the
// experiment's transport needs and its defences on or off.
func (x *experimentRun) configureSwitches(ctx context.Context) error {
	if err := x.r.ctl.PortModes(ctx, switches.TransportPortModes(x.e.Transport)); err != nil {
		return err
	}
	if x.e.Scenario.HasDefences() {
		return x.r.ctl.Defences(ctx, x.e.Scenario.Switch.DefencesOn())
	}
	return nil
}

// configure configures every host taking part: servers first, so no
// client reaches a port not yet served. In a shared experiment each host
// is configured for each transport it takes part in.
func (x *experimentRun) configure(ctx context.Context) error {
	parts, transports := []agents.Roles{x.roles}, x.e.AllTransports()
	if x.roles.Parts != nil {
		parts = x.roles.Parts
	}
	for _, serverPass := range []bool{true, false} {
		err := x.r.agents.each(ctx, x.roles.Used, func(ctx context.Context, host string, a agentAPI) error {
			if (x.roles.Clients[host] == nil) != serverPass {
				return nil
			}
			h, _ := x.r.layout.Host(host)
			for k, p := range parts {
				if !slices.Contains(p.Used, host) {
					continue
				}
				req := x.r.requests.Configure(transports[k], x.e.Scenario, x.e.Name, "measure", h, x.roles.Servers[host], p.Clients[host])
				req.Collectives = p.Collectives[host]
				if err := a.Configure(ctx, req); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// start opens the experiment's window on the switches, samples their
// statistics and the CPU, starts telemetry and then the clients.
func (x *experimentRun) start(ctx context.Context) error {
	r := x.r
	x.resetWindows(ctx)
	x.startPostcards(ctx)
	x.startStats = r.readSwitchStats(ctx)
	if r.sim == nil {
		x.load = sysinfo.StartLoad(runtime.NumCPU(), os.Getpid())
	}
	interval := x.e.Scenario.Telemetry.Interval.D()
	telDone := r.startTelemetry(ctx, x.e.Name, interval)
	hostsDone := func() {}
	if slices.ContainsFunc(x.e.AllTransports(), scenario.Transport.Engine) {
		hostsDone = r.startHostTelemetry(ctx, x.e.Name, x.roles.Used, interval)
	}
	x.stopTelemetry = func() {
		telDone()
		hostsDone()
	}
	fx := faults.Experiment{Experiment: x.e, Clients: x.roles.Clients, Servers: x.roles.Servers, Used: x.roles.Used,
		Start: time.Unix(0, x.roles.Start)}
	fr, notes, err := faults.Start(ctx, faultEnv{x}, fx, x.clock, r.log)
	x.faults = fr
	x.rec.Fidelity = append(x.rec.Fidelity, notes...)
	if err == nil {
		x.rec.Started = x.clock.Now()
		err = r.agents.each(ctx, x.roles.ClientHosts(), func(ctx context.Context, _ string, a agentAPI) error {
			return a.Start(ctx)
		})
		if err != nil {
			err = fmt.Errorf("start clients: %w", err)
		}
	}
	if err == nil {
		err = x.startAdversaries(ctx)
	}
	if err != nil {
		x.faults.End()
		x.faults.Clear(ctx)
		x.stopTelemetry()
	}
	return err
}

// resetWindows restarts the switches' peaks and delay percentiles, which
// cannot be differenced; without it they include earlier experiments', and
// the entry says so.
func (x *experimentRun) resetWindows(ctx context.Context) {
	r := x.r
	for name, c := range r.stats {
		if err := c.ResetWindow(ctx); err != nil {
			x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("switch %s: queue peaks and delays cover the run so far, not this experiment: %v", name, err))
		}
	}
	if r.ctl != nil {
		if err := r.ctl.ResetQueuePeaks(ctx); err != nil {
			x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("telemetry peak_pkts covers the run so far, not this experiment: %v", err))
		}
	}
}

// stopBudget is the drain and the time stopping and collecting may take:
// the drain, an agent call and a fetch; when interrupted, no drain and what
// the agents can hand over at once, within the ten seconds a user waits
// after Ctrl-C.
func stopBudget(s *scenario.Scenario, interrupted bool) (drain, budget time.Duration) {
	if interrupted {
		return 0, 2 * time.Second
	}
	drain = s.Drain.D()
	return drain, drain + agents.CallTimeout + agents.FetchTimeout
}

// stop stops the clients after drain and adds up their books, then reads
// the counters of the hosts that only serve (they have no workload to stop,
// but their transports hold the receiver's side: grants sent, resends asked
// for, packets dropped). It returns the clients' error; the servers'
// becomes a fidelity warning, since the RPC records stand without them.
func (x *experimentRun) stop(ctx context.Context, drain time.Duration, interrupted bool) error {
	r := x.r
	stopErr := r.agents.each(ctx, x.roles.ClientHosts(), func(ctx context.Context, host string, a agentAPI) error {
		c, err := a.Stop(ctx, drain)
		if err != nil {
			return err
		}
		x.addClient(host, c, interrupted)
		return nil
	})
	serverErr := r.agents.each(ctx, x.roles.ServerOnly(), func(ctx context.Context, host string, a agentAPI) error {
		st, err := a.Status(ctx)
		if err != nil {
			return err
		}
		x.addHost(host, rundir.RoleServer, st.GetCounters())
		return nil
	})
	if serverErr != nil {
		x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("server transport counters incomplete: %v", serverErr))
	}
	books := x.faults.Account()
	for host, c := range books.Last {
		x.addHost(host, rundir.HostRole(x.roles.Clients[host] != nil, x.roles.Servers[host]), c)
	}
	x.addQdiscCounters()
	x.mu.Lock()
	x.rec.RPCs.Issued += books.Issued
	x.rec.RPCs.Completed += books.Completed
	x.rec.RPCs.Failed += books.Failed
	x.mu.Unlock()
	for _, h := range x.roles.Used {
		if hc, ok := x.byHost[h]; ok {
			x.rec.Hosts = append(x.rec.Hosts, hc)
			rundir.MergeCounters(x.rec.TransportCounters, hc.Transport)
		}
	}
	return stopErr
}

// addClient adds a stopped client's books and checks that it kept its
// schedule (the load check only when the experiment ran its full length).
func (x *experimentRun) addClient(host string, c *agentpb.Counters, interrupted bool) {
	x.addHost(host, rundir.HostRole(true, x.roles.Servers[host]), c)
	// A restarted agent's books cover only its new life; the fault's
	// warning says what it issued before.
	restarted := x.faults.Restarted(host)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.rec.RPCs.Issued += c.GetIssued()
	x.rec.RPCs.Completed += c.GetCompleted()
	x.rec.RPCs.Failed += c.GetFailed()
	x.rec.RPCs.InFlight += c.GetInFlight()
	w := x.roles.Clients[host]
	if l, behind := lagOf(host, c, w); behind {
		x.lags = append(x.lags, l)
	}
	if warn := loadWarning(host, c, w); warn != "" && !interrupted && !restarted {
		x.lagWarnings = append(x.lagWarnings, warn)
	}
}

// addHost keeps a host's counters and CPU time.
func (x *experimentRun) addHost(host, role string, c *agentpb.Counters) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.cpuUs += c.GetCpuUserUs() + c.GetCpuSysUs()
	x.byHost[host] = hostCounters(host, role, c)
}

// endMeasurement closes the experiment's window: telemetry stops, the CPU
// and the switches are read again, and the fidelity warnings are added.
func (x *experimentRun) endMeasurement(ctx context.Context) {
	x.rec.Ended = x.clock.Now()
	x.stopTelemetry()
	if x.load != nil {
		x.load.End()
		x.rec.CPUBusy = x.load.Busy()
		x.rec.LoadAvg1, x.rec.CPUSteal, x.rec.OtherCPUs = x.load.LoadAverage1(), x.load.Steal(), x.load.OtherCPUs()
	}
	x.rec.AgentCPUMs = x.cpuUs / 1000
	if w := lagWarning(x.lags, len(x.roles.ClientHosts())); w != "" {
		x.rec.Fidelity = append(x.rec.Fidelity, w)
	}
	x.rec.Fidelity = append(x.rec.Fidelity, x.lagWarnings...)
	if w := cpuWarning(x.rec.CPUBusy); w != "" {
		x.rec.Fidelity = append(x.rec.Fidelity, w)
	}
	if w := otherLoadWarning(x.rec.OtherCPUs, x.rec.LoadAvg1); w != "" {
		x.rec.Fidelity = append(x.rec.Fidelity, w)
	}
	x.stopPostcards(ctx)
	x.rec.Fidelity = append(x.rec.Fidelity, x.r.collectSwitchStats(ctx, x.e.Name, x.startStats)...)
}

// collect fetches every client's records, keeps each agent's file under
// agents/records/<host>/ and appends the rows to rpcs.csv in issue order
// across the clients, as a simulated run writes them; then the
// diagnostics, TCP connection samples (tcp.csv) and what each server
// answered (served.csv, for the latency anatomy), whose loss is only
// logged: the records stand without them.
func (x *experimentRun) collect(ctx context.Context) error {
	r, exp := x.r, x.e.Name
	clients := x.roles.ClientHosts()
	fetched := func(host string) string {
		return filepath.Join(r.dir, "agents", "records", host, "fetched-"+exp+".csv")
	}
	var files []string // use runs in the clients' order, one at a time
	err := r.agents.fetchEach(ctx, clients, exp, agentpb.FileRecords, fetched, true, func(host string, _ io.Reader) error {
		files = append(files, fetched(host))
		return nil
	})
	err = errors.Join(err, r.records.appendFiles(files))
	for k, t := range x.e.AllTransports() {
		if t.Engine() {
			continue
		}
		if x.roles.Parts != nil { // only the kernel-TCP part's clients sample
			clients = x.roles.Parts[k].ClientHosts()
		}
		fetchDiagnostic(ctx, r, exp, clients, agentpb.FileTCPSamples, rundir.TCPConns())
	}
	fetchDiagnostic(ctx, r, exp, x.roles.Receivers, agentpb.FileServed, rundir.ServedRPCs())
	return errors.Join(err, x.faults.AppendKilled(func(data io.Reader) error {
		return r.records.appendCSV(data)
	}))
}

// fetchDiagnostic appends file of experiment exp from the agents of hosts
// to the run's file of that format, in the hosts' order, and logs what
// fails.
func fetchDiagnostic[T any](ctx context.Context, r *run, exp string, hosts []string, file string, format *rundir.CSVFormat[T]) {
	path := filepath.Join(r.dir, format.File)
	err := r.agents.fetchEach(ctx, hosts, exp, file, func(host string) string {
		return filepath.Join(r.dir, "agents", "records", host, "fetching-"+exp+"-"+format.File)
	}, false, func(_ string, data io.Reader) error {
		return appendCSVRows(path, format, data)
	})
	if err != nil {
		r.log.Warn("diagnostic records incomplete", "file", format.File, "experiment", exp, "err", err)
	}
}

// record writes the experiment's entry into the manifest and reports it.
func (x *experimentRun) record(ctx context.Context) error {
	r, rec := x.r, x.rec
	if err := r.man.update(func(m *Manifest) { m.Experiments = append(m.Experiments, rec) }); err != nil {
		return err
	}
	r.log.Info("experiment done", "name", rec.Name, "issued", rec.RPCs.Issued, "completed", rec.RPCs.Completed,
		"failed", rec.RPCs.Failed, "in_flight", rec.RPCs.InFlight, "cpu_busy", rec.CPUBusy, "fidelity", rec.Fidelity)
	r.prog.step(rec.Name, rec.Incomplete || ctx.Err() != nil)
	return nil
}

// hostCounters copies an agent's counters into a rundir.HostCounters.
func hostCounters(host, role string, c *agentpb.Counters) rundir.HostCounters {
	h := rundir.HostCounters{Host: host, Role: role, Served: c.GetServed(), Transport: map[string]uint64{}}
	for k, v := range c.GetTransport() {
		h.Transport[k] = v
	}
	return h
}
