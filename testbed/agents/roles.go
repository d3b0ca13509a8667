package agents

import (
	"fmt"
	"slices"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	fabdesc "github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/internal/hostset"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
	"github.com/homatb/homatb/workloads"
)

// Roles is who does what in one experiment: what an emulated run
// configures its agents with, and what a simulated one runs.
type Roles struct {
	// Clients is each sending host's workload; MeanSize its mean request
	// size in bytes.
	Clients  map[string]*agentpb.Workload
	MeanSize map[string]float64
	Servers  map[string]bool
	// Receivers are the serving hosts in the topology's order.
	Receivers []string
	// Used are the hosts taking part, clients or servers, in the layout's
	// order.
	Used []string
	// Start is when the clients begin (Unix ns); the measurement begins a
	// warm-up later.
	Start int64
	// Phases names the phase each client's workload comes from.
	Phases map[string]string
	// Collectives are each host's parts in the collective phases; a host
	// may run them beside a client workload.
	Collectives map[string][]*agentpb.Collective
	// Parts are a shared experiment's roles per transport, in the order of
	// its Transports (scenario.Experiment.Part); the fields above are then
	// their union: the hosts used and serving, and Clients, MeanSize,
	// Phases and Collectives of the hosts that are clients of one
	// transport only. Nil for an experiment of one transport.
	Parts []Roles
}

// PlanRoles works out each host's client workload in experiment e on the
// laid-out network n with fabric f, and whether it serves. The clients of
// every phase start at start (Unix ns).
func PlanRoles(e *scenario.Experiment, n *topo.Network, f *fabdesc.Fabric, start int64) (Roles, error) {
	if e.Shared() {
		return planShared(e, n, f, start)
	}
	s := e.Scenario
	all := s.Topology.HostNames()
	ro := Roles{Clients: map[string]*agentpb.Workload{}, MeanSize: map[string]float64{}, Servers: map[string]bool{}, Start: start,
		Phases: map[string]string{}, Collectives: map[string][]*agentpb.Collective{}}
	for pi, ph := range s.Phases {
		if ph.Collective != nil || ph.ConnectionMatrix != "" {
			if err := ro.addCollective(e, pi, n, start); err != nil {
				return Roles{}, err
			}
			continue
		}
		cs, err := hostset.Expand(ph.Clients, all)
		if err != nil {
			return Roles{}, err
		}
		ss, err := hostset.Expand(ph.Servers, all)
		if err != nil {
			return Roles{}, err
		}
		for _, sv := range ss {
			ro.Servers[sv] = true
		}
		st, err := scenario.SizeStatsOf(ph.Sizes)
		if err != nil {
			return Roles{}, err
		}
		mean := st.Mean
		// One message's load, the same for every client (its wire bytes
		// sum over the size distribution's packets: not per client).
		load := e.Scenario.LoadBytes(ph, st)
		for _, c := range cs {
			w := workload(e, pi, c, ss, start, load, n, f)
			if w == nil {
				continue
			}
			ro.Clients[c] = w
			ro.MeanSize[c] = mean
			ro.Phases[c] = ph.Name
		}
	}
	for _, h := range all {
		if ro.Servers[h] {
			ro.Receivers = append(ro.Receivers, h)
		}
	}
	for _, h := range n.Hosts {
		if ro.Clients[h.Name] != nil || ro.Servers[h.Name] || len(ro.Collectives[h.Name]) > 0 {
			ro.Used = append(ro.Used, h.Name)
		}
	}
	return ro, nil
}

// planShared plans each part of shared experiment e and their union.
func planShared(e *scenario.Experiment, n *topo.Network, f *fabdesc.Fabric, start int64) (Roles, error) {
	ro := Roles{Clients: map[string]*agentpb.Workload{}, MeanSize: map[string]float64{}, Servers: map[string]bool{}, Start: start,
		Phases: map[string]string{}, Collectives: map[string][]*agentpb.Collective{}}
	clientOf := map[string]int{} // parts a host is a client in
	for k := range e.Transports {
		p, err := PlanRoles(e.Part(k), n, f, start)
		if err != nil {
			return Roles{}, fmt.Errorf("%s: %w", e.Transports[k].Config(), err)
		}
		ro.Parts = append(ro.Parts, p)
		for h := range p.Servers {
			ro.Servers[h] = true
		}
		for h, w := range p.Clients {
			clientOf[h]++
			ro.Clients[h], ro.MeanSize[h], ro.Phases[h] = w, p.MeanSize[h], p.Phases[h]
		}
		for h, cs := range p.Collectives {
			ro.Collectives[h] = append(ro.Collectives[h], cs...)
		}
	}
	for h, k := range clientOf {
		if k > 1 { // one workload per host cannot stand for several
			delete(ro.Clients, h)
			delete(ro.MeanSize, h)
			delete(ro.Phases, h)
		}
	}
	for _, h := range e.Scenario.Topology.HostNames() {
		if ro.Servers[h] {
			ro.Receivers = append(ro.Receivers, h)
		}
	}
	for _, h := range n.Hosts {
		for _, p := range ro.Parts {
			if slices.Contains(p.Used, h.Name) {
				ro.Used = append(ro.Used, h.Name)
				break
			}
		}
	}
	return ro, nil
}

// transportNames are name(t) of each of a shared experiment's transports,
// nil for none.
func transportNames(ts []scenario.Transport, name func(scenario.Transport) string) []string {
	var out []string
	for _, t := range ts {
		out = append(out, name(t))
	}
	return out
}

// workload is client c's workload in phase pi against servers, nil when
// it has no server but itself (a host does not send to itself); load is
// what one of its messages counts for in the phase's load
// (Scenario.LoadBytes).
func workload(e *scenario.Experiment, pi int, c string, servers []string, start int64, load float64, n *topo.Network, f *fabdesc.Fabric) *agentpb.Workload {
	s := e.Scenario
	ph := s.Phases[pi]
	h, _ := n.Host(c)
	var targets []string
	for _, sv := range servers {
		if sv == c {
			continue
		}
		sh, _ := n.Host(sv)
		targets = append(targets, fmt.Sprintf("%s:%d", sh.IP, ServerPort))
	}
	if len(targets) == 0 {
		return nil
	}
	w := &agentpb.Workload{
		Sizes: ph.Sizes, Arrivals: ph.Arrivals, RateRps: ph.RateRPS, MaxOutstanding: ph.MaxOutstanding,
		Targets: targets, ResponseBytes: ph.ResponseBytes,
		Seed:       e.Seed*7919 + uint64(pi)*131 + uint64(h.Index),
		DurationMs: uint32((s.Warmup.D() + s.Duration.D()) / time.Millisecond),
		WarmupMs:   uint32(s.Warmup.D() / time.Millisecond),
		DurationNs: uint64(s.Warmup.D() + s.Duration.D()), WarmupNs: uint64(s.Warmup.D()),
		MaxRpcs: ph.MaxRPCs, StartUnixNs: start,
	}
	if ph.Load > 0 {
		// Offered load counts message bytes (as cp_node does), or with
		// load_of: wire their DATA frames.
		w.RateRps = f.RateFor(ph.Load, load)
	}
	if ph.Incast != nil {
		w.BurstIntervalUs = uint32(ph.Incast.Interval.D() / time.Microsecond)
		w.BurstJitterUs = uint32(ph.Incast.Jitter.D() / time.Microsecond)
	}
	return w
}

// addCollective gives each host of collective or connection-matrix phase
// pi its part: the members in ring (or node) order, its rank (node), the
// collective's settings or the matrix. Iterations (the matrix) begin with
// the measurement (start plus the warm-up) and none begins after it.
func (ro Roles) addCollective(e *scenario.Experiment, pi int, n *topo.Network, start int64) error {
	s := e.Scenario
	ph := s.Phases[pi]
	var hosts []string
	var err error
	if ph.ConnectionMatrix != "" && ph.Matrix == nil {
		// A scenario that did not come through validation.
		if ph.Matrix, err = workloads.LoadMatrix(ph.ConnectionMatrix); err != nil {
			return fmt.Errorf("phase %s: %w", ph.Name, err)
		}
	}
	if ph.Matrix != nil {
		hosts, err = s.MatrixHosts(ph, ph.Matrix)
	} else {
		hosts, err = s.CollectiveHosts(ph)
	}
	if err != nil {
		return err
	}
	var targets []string
	for _, h := range hosts {
		th, ok := n.Host(h)
		if !ok {
			return fmt.Errorf("phase %s: host %s is not in the network", ph.Name, h)
		}
		targets = append(targets, fmt.Sprintf("%s:%d", th.IP, ServerPort))
	}
	for r, h := range hosts {
		ro.Servers[h] = true
		c := &agentpb.Collective{Phase: ph.Name, Targets: targets, Hosts: hosts, Rank: uint32(r),
			StartUnixNs: start + int64(s.Warmup.D()),
			DurationMs:  uint32(s.Duration.D() / time.Millisecond),
			DurationNs:  uint64(s.Duration.D()),
		}
		if m := ph.Matrix; m != nil {
			c.Kind, c.Matrix, c.MatrixFile, c.Iterations = workloads.KindConnectionMatrix, m.Text, m.File, 1
		} else {
			co := ph.Collective
			c.Kind, c.Bytes, c.Iterations = co.Kind, uint64(co.Bytes), uint32(co.Iterations)
			c.ComputeNs, c.JitterNs, c.Seed = uint64(co.Compute.D()), uint64(co.Jitter.D()), e.Seed*7919+uint64(pi)*131
			c.Window = uint32(co.Window)
		}
		ro.Collectives[h] = append(ro.Collectives[h], c)
	}
	return nil
}

// Runs reports whether host runs a workload: a client's or a part in a
// collective.
func (ro Roles) Runs(host string) bool {
	for _, p := range ro.Parts {
		if p.Runs(host) {
			return true
		}
	}
	return ro.Clients[host] != nil || len(ro.Collectives[host]) > 0
}

// ClientHosts are the used hosts that run a workload: a client's, or a
// part in a collective.
func (ro Roles) ClientHosts() []string {
	var out []string
	for _, h := range ro.Used {
		if ro.Runs(h) {
			out = append(out, h)
		}
	}
	return out
}

// ServerOnly are the used hosts that only serve.
func (ro Roles) ServerOnly() []string {
	var out []string
	for _, h := range ro.Used {
		if !ro.Runs(h) {
			out = append(out, h)
		}
	}
	return out
}

// ConfiguredLoad is the request load the open-loop clients are configured
// to offer, in bits per second (message bytes only, as the scenario's load
// counts them) and in RPCs per second; 0 when no client has a constant
// rate. unrated counts the clients whose load no rate fixes (closed loops,
// bursts, bounded counts).
func (ro Roles) ConfiguredLoad() (bps, rps float64, unrated int) {
	if ro.Parts != nil {
		for _, p := range ro.Parts {
			b, r, u := p.ConfiguredLoad()
			bps, rps, unrated = bps+b, rps+r, unrated+u
		}
		return bps, rps, unrated
	}
	for h, w := range ro.Clients {
		if w.GetArrivals() == scenario.ArrivalsPoisson && w.GetBurstIntervalUs() == 0 && w.GetMaxRpcs() == 0 {
			bps += w.GetRateRps() * ro.MeanSize[h] * 8
			rps += w.GetRateRps()
		} else {
			unrated++
		}
	}
	return bps, rps, unrated
}

// Entry is experiment e's manifest entry before it runs: what it is and
// who does what, with no books yet.
func (ro Roles) Entry(e *scenario.Experiment) rundir.Experiment {
	s := e.Scenario
	rec := rundir.Experiment{
		Name: e.Name, Transport: e.Transport.Name, Label: e.Transport.Label, Config: e.Transport.Config(), Params: e.Params,
		Transports: transportNames(e.Transports, scenario.Transport.TransportName), Configs: transportNames(e.Transports, scenario.Transport.Config),
		WarmupMs: s.Warmup.D().Milliseconds(), DurationMs: s.Duration.D().Milliseconds(), Seed: e.Seed,
		Receivers: ro.Receivers, ClientPhases: ro.Phases, Fidelity: []string{}, TransportCounters: map[string]uint64{},
	}
	if e.Params == nil {
		rec.Params = map[string]string{}
	}
	rec.ConfiguredBps, rec.ConfiguredRPS, rec.UnratedClients = ro.ConfiguredLoad()
	for _, p := range ro.Parts {
		var l rundir.ConfiguredLoad
		l.ConfiguredBps, l.ConfiguredRPS, l.UnratedClients = p.ConfiguredLoad()
		rec.PartLoads = append(rec.PartLoads, l)
	}
	return rec
}
