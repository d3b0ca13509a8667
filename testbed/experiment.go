package testbed

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/runfmt"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// ServerPort is the port every agent serves RPCs on (Homa and TCP have
// separate port spaces).
const ServerPort = 4000

func transportEnum(name string) agentpb.Transport {
	if name == scenario.TransportHoma {
		return agentpb.Transport_TRANSPORT_HOMA
	}
	return agentpb.Transport_TRANSPORT_TCP
}

// homaParams maps the scenario's Homa settings, with the calibrated
// unscheduled bytes and RTT when the scenario leaves them open.
func (r *run) homaParams(t scenario.Transport, s *scenario.Scenario) *agentpb.HomaParams {
	h := t.Homa
	p := &agentpb.HomaParams{
		LinkBps: uint64(s.Link.Rate), UnschedBytes: h.UnschedBytes, Overcommit: h.Overcommit,
		Priorities: h.Priorities, Basic: h.Basic, WindowBytes: h.WindowBytes, MaxIncoming: h.MaxIncoming,
		FifoGrantPermille: h.FifoGrantPermille, UnschedCutoffs: h.UnschedCutoffs, Mtu: uint32(s.Link.MTU),
		ResendTicks: h.ResendTicks, TimeoutTicks: h.TimeoutTicks, TickUs: h.TickUS,
		IncastControl: h.IncastControl, AtLeastOnce: h.AtLeastOnce, MaxMessageBytes: h.MaxMessageBytes,
		Extra: h.Extra,
	}
	if c, ok := r.calib[scenario.TransportHoma]; ok {
		if p.UnschedBytes == 0 {
			p.UnschedBytes = c.UnschedBytes
		}
		if rtt := c.RTTus[smallest(c.RTTus)]; rtt > 0 {
			p.UnloadedRttUs = uint32(math.Ceil(rtt))
		}
	}
	return p
}

func smallest(m map[uint32]float64) uint32 {
	var keys []uint32
	for k := range m {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return 0
	}
	return slices.Min(keys)
}

func (r *run) configure(t scenario.Transport, s *scenario.Scenario, exp, phase string, h topo.Host, serve bool, w *agentpb.Workload) *agentpb.ConfigureRequest {
	req := &agentpb.ConfigureRequest{
		Experiment: exp, Transport: transportEnum(t.Name), Host: h.Name, Address: h.IP.String(),
		Client: w, Phase: phase,
	}
	if serve {
		req.ServerPorts = []uint32{ServerPort}
	}
	if t.Name == scenario.TransportHoma {
		req.Homa = r.homaParams(t, s)
	} else {
		req.Tcp = &agentpb.TcpParams{Congestion: t.TCP.Congestion, ConnectionsPerPeer: t.TCP.ConnectionsPerPeer}
	}
	return req
}

// calibrate measures the unloaded RTT of each calibration size for each
// transport between the first two hosts, one RPC at a time. The records
// enter rpcs.csv as experiment calibrate-<transport> (the slowdown
// baseline), and Homa's unscheduled bytes become RTTbytes derived from the
// smallest size's RTT (see unschedBytes).
func (r *run) calibrate(ctx context.Context) error {
	s := r.plan.Base
	hosts := r.net.Layout.Hosts
	server, client := hosts[0], hosts[1]
	target := fmt.Sprintf("%s:%d", server.IP, ServerPort)
	for _, t := range distinctTransports(r.plan) {
		name := runfmt.CalibrationExperiment(t.Name)
		r.prog.begin(name)
		cal := runfmt.Calibration{RTTus: map[uint32]float64{}}
		sa, ca := r.agents.get(server.Name), r.agents.get(client.Name)
		for _, size := range s.Calibration.Sizes {
			exp := fmt.Sprintf("%s-%d", name, size)
			// A fresh server per size, like the fresh client: no transport
			// state (RPC ids) carries over from the previous size.
			if err := sa.configure(ctx, r.configure(t, s, exp+"-server", "calibrate", server, true, nil)); err != nil {
				return err
			}
			// Bound each size by time too, generously: samples x (RTT at
			// the link rate + 20 ms of software) + 2 s.
			perRPC := time.Duration(float64(size)*8/float64(s.Link.Rate)*float64(time.Second)) + 20*time.Millisecond
			bound := time.Duration(s.Calibration.Samples)*perRPC + 2*time.Second
			w := &agentpb.Workload{
				Sizes: fmt.Sprintf("fixed:%d", size), Arrivals: scenario.ArrivalsClosed, MaxOutstanding: 1,
				Targets: []string{target}, ResponseBytes: 0, Seed: s.Seed,
				DurationMs: uint32(bound / time.Millisecond), MaxRpcs: uint64(s.Calibration.Samples),
			}
			if err := ca.configure(ctx, r.configure(t, s, exp, "calibrate", client, false, w)); err != nil {
				return err
			}
			if err := ca.start(ctx); err != nil {
				return fmt.Errorf("%s: %w", exp, err)
			}
			if err := waitIssued(ctx, ca, uint64(s.Calibration.Samples), bound+time.Second); err != nil {
				return fmt.Errorf("%s: %w", exp, err)
			}
			if _, err := ca.stop(ctx, 500*time.Millisecond); err != nil {
				return fmt.Errorf("%s: %w", exp, err)
			}
			var buf bytes.Buffer
			if err := ca.fetch(ctx, exp, &buf); err != nil {
				return err
			}
			_, rtts, err := r.records.appendCSV(buf.Bytes(), name)
			if err != nil {
				return err
			}
			if len(rtts) == 0 {
				return fmt.Errorf("%s: no RPC completed between %s and %s (is the switch forwarding? see logs/)", exp, client.Name, server.Name)
			}
			cal.RTTus[size] = median(rtts)
		}
		if t.Name == scenario.TransportHoma {
			cal.UnschedBytes = unschedBytes(uint64(s.Link.Rate), cal.RTTus[smallest(cal.RTTus)], s.Link.MTU)
		}
		r.calib[t.Name] = cal
		if err := r.man.update(func(m *Manifest) { m.Calibration[t.Name] = cal }); err != nil {
			return err
		}
		r.log.Info("calibrated", "transport", t.Name, "rtt_us", cal.RTTus, "unsched_bytes", cal.UnschedBytes)
		r.prog.step(name, false)
	}
	return nil
}

// waitIssued polls an agent until it has issued n RPCs and none is in
// flight, or until timeout.
func waitIssued(ctx context.Context, a *agent, n uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		st, err := a.status(ctx)
		if err != nil {
			return err
		}
		c := st.GetCounters()
		if c.GetIssued() >= n && c.GetInFlight() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil // the Stop that follows records what is still in flight
}

// roles works out each host's client workload and whether it serves.
func (r *run) roles(e *scenario.Experiment) (map[string]*agentpb.Workload, map[string]bool, []string, map[string]float64, error) {
	s := e.Scenario
	all := s.Topology.HostNames()
	clients := map[string]*agentpb.Workload{}
	meanSize := map[string]float64{}
	servers := map[string]bool{}
	start := time.Now().Add(500 * time.Millisecond).UnixNano()
	for pi, ph := range s.Phases {
		cs, err := scenario.ExpandHosts(ph.Clients, all)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		ss, err := scenario.ExpandHosts(ph.Servers, all)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		for _, sv := range ss {
			servers[sv] = true
		}
		mean, err := scenario.MeanSize(ph.Sizes)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		for _, c := range cs {
			h, _ := r.net.Layout.Host(c)
			var targets []string
			for _, sv := range ss {
				if sv == c {
					continue // a host does not send to itself
				}
				sh, _ := r.net.Layout.Host(sv)
				targets = append(targets, fmt.Sprintf("%s:%d", sh.IP, ServerPort))
			}
			if len(targets) == 0 {
				continue
			}
			w := &agentpb.Workload{
				Sizes: ph.Sizes, Arrivals: ph.Arrivals, RateRps: ph.RateRPS, MaxOutstanding: ph.MaxOutstanding,
				Targets: targets, ResponseBytes: ph.ResponseBytes,
				Seed:       e.Seed*7919 + uint64(pi)*131 + uint64(h.Index),
				DurationMs: uint32((s.Warmup.D() + s.Duration.D()) / time.Millisecond),
				WarmupMs:   uint32(s.Warmup.D() / time.Millisecond),
				MaxRpcs:    ph.MaxRPCs, StartUnixNs: start,
			}
			if ph.Load > 0 {
				// Offered load counts message bytes only, as cp_node does.
				w.RateRps = ph.Load * float64(s.Link.Rate) / 8 / mean
			}
			if ph.Incast != nil {
				w.BurstIntervalUs = uint32(ph.Incast.Interval.D() / time.Microsecond)
				w.BurstJitterUs = uint32(ph.Incast.Jitter.D() / time.Microsecond)
			}
			clients[c] = w
			meanSize[c] = mean
		}
	}
	var receivers []string
	for _, h := range all {
		if servers[h] {
			receivers = append(receivers, h)
		}
	}
	return clients, servers, receivers, meanSize, nil
}

// experiment runs one experiment: configure every agent, sample the
// switches, start the clients, wait warm-up + duration, stop with a drain,
// collect books, records and switch statistics, and check fidelity.
func (r *run) experiment(ctx context.Context, e *scenario.Experiment) error {
	r.prog.begin(e.Name)
	s := e.Scenario
	clients, servers, receivers, meanSize, err := r.roles(e)
	if err != nil {
		return err
	}
	rec := runfmt.Experiment{
		Name: e.Name, Transport: e.Transport.Name, Params: e.Params, LinkBps: uint64(s.Link.Rate),
		WarmupMs: s.Warmup.D().Milliseconds(), DurationMs: s.Duration.D().Milliseconds(), Seed: e.Seed,
		Receivers: receivers, Fidelity: []string{}, Incomplete: true, TransportCounters: map[string]uint64{},
	}
	if e.Params == nil {
		rec.Params = map[string]string{}
	}
	rec.ConfiguredBps, rec.ConfiguredRPS = configuredLoad(clients, meanSize)
	rec.Fidelity = append(rec.Fidelity, scenario.OverloadWarnings(s)...)
	hosts := r.net.Layout.Hosts
	var used []string
	for _, h := range hosts {
		if clients[h.Name] != nil || servers[h.Name] {
			used = append(used, h.Name)
		}
	}
	// Servers first, so no client reaches a port not yet served.
	cfg := func(serverPass bool) error {
		return r.agents.each(ctx, used, func(ctx context.Context, a *agent) error {
			h, _ := r.net.Layout.Host(a.host)
			if (clients[a.host] == nil) != serverPass {
				return nil
			}
			return a.configure(ctx, r.configure(e.Transport, s, e.Name, "measure", h, servers[a.host], clients[a.host]))
		})
	}
	if err := cfg(true); err != nil {
		return err
	}
	if err := cfg(false); err != nil {
		return err
	}
	for name, c := range r.stats {
		if err := c.resetWindow(ctx); err != nil {
			// Without it the peaks include earlier experiments': say so.
			rec.Fidelity = append(rec.Fidelity, fmt.Sprintf("switch %s: queue peaks and delays cover the run so far, not this experiment: %v", name, err))
		}
	}
	if r.ctl != nil {
		if err := r.ctl.fabric.ResetQueuePeaks(ctx); err != nil {
			rec.Fidelity = append(rec.Fidelity, fmt.Sprintf("telemetry peak_pkts covers the run so far, not this experiment: %v", err))
		}
	}
	startStats := r.switchStats(ctx)
	cpu0 := readCPU()
	telDone := r.startTelemetry(ctx, e.Name, s.Telemetry.Interval.D())
	hostsDone := func() {}
	if e.Transport.Name == scenario.TransportHoma {
		hostsDone = r.startHostTelemetry(ctx, e.Name, used, s.Telemetry.Interval.D())
	}
	rec.Started = time.Now().UnixNano()
	var clientHosts []string
	for _, h := range used {
		if clients[h] != nil {
			clientHosts = append(clientHosts, h)
		}
	}
	if err := r.agents.each(ctx, clientHosts, func(ctx context.Context, a *agent) error {
		return a.start(ctx)
	}); err != nil {
		telDone()
		hostsDone()
		return fmt.Errorf("start clients: %w", err)
	}

	wait := 500*time.Millisecond + s.Warmup.D() + s.Duration.D()
	var waitErr error
	select {
	case <-ctx.Done():
		waitErr = context.Cause(ctx)
	case <-time.After(wait):
	}
	// Stop and collect even when interrupted: what was measured is kept.
	// The drain is shortened when the run is being torn down.
	drain := s.Drain.D()
	stopCtx := context.WithoutCancel(ctx)
	if waitErr != nil {
		drain = 0
	}
	budget := drain + agentCallTimeout + agentFetchTimeout
	if waitErr != nil {
		// Interrupted: keep what the agents can hand over at once, within
		// the ten seconds a user waits after Ctrl-C.
		budget = 2 * time.Second
	}
	stopCtx, stopCancel := context.WithTimeout(stopCtx, budget)
	defer stopCancel()
	var mu sync.Mutex
	var lagWarnings []string
	var lags []lag
	var cpuUs uint64
	byHost := map[string]runfmt.HostCounters{}
	stopErr := r.agents.each(stopCtx, clientHosts, func(ctx context.Context, a *agent) error {
		c, err := a.stop(ctx, drain)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		rec.RPCs.Issued += c.GetIssued()
		rec.RPCs.Completed += c.GetCompleted()
		rec.RPCs.Failed += c.GetFailed()
		rec.RPCs.InFlight += c.GetInFlight()
		cpuUs += c.GetCpuUserUs() + c.GetCpuSysUs()
		byHost[a.host] = hostCounters(a.host, hostRole(true, servers[a.host]), c)
		if l, behind := lagOf(a.host, c, clients[a.host]); behind {
			lags = append(lags, l)
		}
		if w := loadWarning(a.host, c, clients[a.host]); w != "" && waitErr == nil {
			lagWarnings = append(lagWarnings, w)
		}
		return nil
	})
	// Hosts that only serve are not stopped (they have no workload), but
	// their transports hold the receiver's side of the story: grants sent,
	// resends asked for, packets dropped. Read them once the clients are done.
	var serverOnly []string
	for _, h := range used {
		if clients[h] == nil {
			serverOnly = append(serverOnly, h)
		}
	}
	serverErr := r.agents.each(stopCtx, serverOnly, func(ctx context.Context, a *agent) error {
		st, err := a.status(ctx)
		if err != nil {
			return err
		}
		c := st.GetCounters()
		mu.Lock()
		defer mu.Unlock()
		cpuUs += c.GetCpuUserUs() + c.GetCpuSysUs()
		byHost[a.host] = hostCounters(a.host, runfmt.RoleServer, c)
		return nil
	})
	if serverErr != nil {
		// Counters are a diagnostic: without them the RPC records still stand.
		rec.Fidelity = append(rec.Fidelity, fmt.Sprintf("server transport counters incomplete: %v", serverErr))
	}
	for _, h := range used {
		if hc, ok := byHost[h]; ok {
			rec.Hosts = append(rec.Hosts, hc)
			runfmt.MergeCounters(rec.TransportCounters, hc.Transport)
		}
	}
	rec.Ended = time.Now().UnixNano()
	telDone()
	hostsDone()
	cpuBusy := cpuBusyFraction(cpu0, readCPU())
	rec.CPUBusy = cpuBusy
	rec.AgentCPUMs = cpuUs / 1000
	if w := lagWarning(lags, len(clientHosts)); w != "" {
		rec.Fidelity = append(rec.Fidelity, w)
	}
	rec.Fidelity = append(rec.Fidelity, lagWarnings...)
	if cpuBusy > 0.95 {
		rec.Fidelity = append(rec.Fidelity, fmt.Sprintf("CPU saturated: the machine was %.0f%% busy during the experiment; agents and switches competed for the vCPUs", cpuBusy*100))
	}
	rec.Fidelity = append(rec.Fidelity, r.collectSwitchStats(stopCtx, e.Name, startStats)...)

	fetchErr := r.agents.each(stopCtx, clientHosts, func(ctx context.Context, a *agent) error {
		var buf bytes.Buffer
		if err := a.fetch(ctx, e.Name, &buf); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(r.dir, "agents", "records", a.host, "fetched-"+e.Name+".csv"), buf.Bytes(), 0o644); err != nil {
			return err
		}
		_, _, err := r.records.appendCSV(buf.Bytes(), "")
		return err
	})
	rec.Incomplete = waitErr != nil || stopErr != nil || fetchErr != nil
	if err := r.man.update(func(m *Manifest) { m.Experiments = append(m.Experiments, rec) }); err != nil {
		return err
	}
	r.log.Info("experiment done", "name", e.Name, "issued", rec.RPCs.Issued, "completed", rec.RPCs.Completed,
		"failed", rec.RPCs.Failed, "in_flight", rec.RPCs.InFlight, "cpu_busy", cpuBusy, "fidelity", rec.Fidelity)
	r.prog.step(e.Name, rec.Incomplete || ctx.Err() != nil)
	if waitErr != nil {
		return waitErr
	}
	if stopErr != nil {
		return stopErr
	}
	if fetchErr != nil {
		return fetchErr
	}
	// State reset between experiments: let the switch queues drain.
	return r.waitQueuesEmpty(ctx, 2*time.Second)
}

// lag is a client whose transport could not keep the open-loop schedule:
// a P99 send lag above a millisecond and above a tenth of the mean
// interarrival time means latencies include time the RPC waited to be sent.
type lag struct {
	host           string
	p99, max, gapU float64 // µs
}

// lagOf reports whether a client fell behind, and by how much.
func lagOf(host string, c *agentpb.Counters, w *agentpb.Workload) (lag, bool) {
	if w == nil || w.GetArrivals() != scenario.ArrivalsPoisson || w.GetRateRps() <= 0 {
		return lag{}, false
	}
	l := lag{host: host, p99: c.GetLagP99Us(), max: c.GetLagMaxUs(), gapU: 1e6 / w.GetRateRps()}
	return l, l.p99 > 1000 && l.p99 > l.gapU/10
}

// lagWarning says which clients fell behind, in one line however many
// (one line per host drowned the other warnings of a busy run).
func lagWarning(ls []lag, clients int) string {
	if len(ls) == 0 {
		return ""
	}
	// h2 before h10: shorter names first, then in order.
	slices.SortFunc(ls, func(a, b lag) int {
		if len(a.host) != len(b.host) {
			return len(a.host) - len(b.host)
		}
		return strings.Compare(a.host, b.host)
	})
	if len(ls) == 1 {
		l := ls[0]
		return fmt.Sprintf("agent %s send lag P99 %.0f µs (max %.0f µs) against a mean gap of %.0f µs: the host fell behind its schedule",
			l.host, l.p99, l.max, l.gapU)
	}
	lo, hi, worst, gLo, gHi := ls[0].p99, ls[0].p99, ls[0].max, ls[0].gapU, ls[0].gapU
	var hosts []string
	for _, l := range ls {
		lo, hi, worst = min(lo, l.p99), max(hi, l.p99), max(worst, l.max)
		gLo, gHi = min(gLo, l.gapU), max(gHi, l.gapU)
		hosts = append(hosts, l.host)
	}
	gap := fmt.Sprintf("%.0f µs", gLo)
	if gHi > gLo*1.01 {
		gap = fmt.Sprintf("%.0f–%.0f µs", gLo, gHi)
	}
	return fmt.Sprintf("%d of %d clients fell behind their schedule (%s): send lag P99 %.0f–%.0f µs (max %.0f µs) against a mean gap of %s",
		len(ls), clients, strings.Join(hosts, " "), lo, hi, worst, gap)
}

// loadWarning flags a client that issued clearly fewer RPCs than its
// open-loop rate asks for over warm-up and measurement: the RPCs it was too
// late to send before it was stopped never ran, so the load the network
// carried was below the configured one.
func loadWarning(host string, c *agentpb.Counters, w *agentpb.Workload) string {
	if w == nil || w.GetArrivals() != scenario.ArrivalsPoisson || w.GetRateRps() <= 0 ||
		w.GetBurstIntervalUs() > 0 || w.GetMaxRpcs() > 0 {
		return ""
	}
	want := w.GetRateRps() * float64(w.GetDurationMs()) / 1e3
	got := float64(c.GetIssued())
	// A Poisson count varies by about its square root: flag only a
	// shortfall well beyond that, and beyond 5%.
	if want < 20 || got >= want-max(4*math.Sqrt(want), 0.05*want) {
		return ""
	}
	return fmt.Sprintf("agent %s issued %d RPCs where its configured rate (%.0f/s over %.1f s) asks for about %.0f (%.0f%%): it could not keep to the configured load",
		host, c.GetIssued(), w.GetRateRps(), float64(w.GetDurationMs())/1e3, want, 100*got/want)
}

// configuredLoad is the request load the open-loop clients are configured
// to offer, in bits per second (message bytes only, as the scenario's load
// counts them) and in RPCs per second; 0 when no client has a constant rate.
func configuredLoad(clients map[string]*agentpb.Workload, mean map[string]float64) (bps, rps float64) {
	for h, w := range clients {
		if w.GetArrivals() == scenario.ArrivalsPoisson && w.GetBurstIntervalUs() == 0 && w.GetMaxRpcs() == 0 {
			bps += w.GetRateRps() * mean[h] * 8
			rps += w.GetRateRps()
		}
	}
	return bps, rps
}

// switchStats reads every switch's statistics (none for those that fail).
func (r *run) switchStats(ctx context.Context) map[string]runfmt.SwitchStats {
	out := map[string]runfmt.SwitchStats{}
	for name, c := range r.stats {
		m, err := c.fetch(ctx)
		if err != nil {
			r.log.Warn("switch stats", "switch", name, "err", err)
			continue
		}
		out[name] = m
	}
	return out
}

// collectSwitchStats writes switch/<experiment>/<switch>.json as
// differences over the experiment and returns fidelity warnings.
func (r *run) collectSwitchStats(ctx context.Context, exp string, start map[string]runfmt.SwitchStats) []string {
	var warn []string
	end := r.switchStats(ctx)
	for name := range r.stats {
		e, ok := end[name]
		if !ok {
			warn = append(warn, fmt.Sprintf("switch %s: statistics unavailable for this experiment", name))
			continue
		}
		d := switchstats.Diff(start[name], e)
		if err := runfmt.WriteSwitchStats(r.dir, exp, name, d); err != nil {
			warn = append(warn, fmt.Sprintf("switch %s: %v", name, err))
			continue
		}
		t := totals(d)
		if t.kernelDrops > 0 {
			warn = append(warn, fmt.Sprintf("switch %s fell behind: %d packets were lost in its sockets before it read them", name, t.kernelDrops))
		}
		if t.noBuffer > 0 || t.txErrors > 0 {
			warn = append(warn, fmt.Sprintf("switch %s: %d packets without buffer, %d transmit errors", name, t.noBuffer, t.txErrors))
		}
	}
	return warn
}

// waitQueuesEmpty waits until every switch queue is empty, so one
// experiment's backlog does not spill into the next.
func (r *run) waitQueuesEmpty(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		busy := false
		for _, st := range r.switchStats(ctx) {
			for _, p := range st.Ports {
				for _, q := range p.Queues {
					busy = busy || q.DepthPkts > 0
				}
			}
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// startTelemetry runs the telemetry part for one experiment, appending to
// telemetry.csv; the returned func stops it and waits.
func (r *run) startTelemetry(ctx context.Context, exp string, interval time.Duration) func() {
	if r.ctl == nil {
		return func() {}
	}
	path := filepath.Join(r.dir, "telemetry.csv")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.log.Warn("telemetry file", "err", err)
		return func() {}
	}
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.ctl.telemetry(tctx, exp, interval, f); err != nil {
			r.log.Warn("telemetry", "experiment", exp, "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
		_ = f.Close()
	}
}

// cpuTimes is a /proc/stat sample: busy and total jiffies of all CPUs.
type cpuTimes struct{ busy, total uint64 }

func readCPU() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	fields := bytes.Fields(line)
	var t cpuTimes
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(string(f), 10, 64)
		t.total += v
		if i != 3 && i != 4 { // idle and iowait
			t.busy += v
		}
	}
	return t
}

func cpuBusyFraction(a, b cpuTimes) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64(b.busy-a.busy) / float64(b.total-a.total)
}
