package testbed

import (
	"fmt"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
)

// roles is who does what in one experiment.
type roles struct {
	// clients is each sending host's workload; meanSize its mean request
	// size in bytes.
	clients  map[string]*agentpb.Workload
	meanSize map[string]float64
	servers  map[string]bool
	// receivers are the serving hosts in the topology's order.
	receivers []string
	// used are the hosts taking part, clients or servers, in the layout's
	// order.
	used []string
	// start is when the clients begin (Unix ns); the measurement begins a
	// warm-up later.
	start int64
}

// roles works out each host's client workload and whether it serves. The
// clients of every phase start at one shared instant, half a second ahead.
func (r *run) roles(e *scenario.Experiment) (roles, error) {
	s := e.Scenario
	all := s.Topology.HostNames()
	ro := roles{clients: map[string]*agentpb.Workload{}, meanSize: map[string]float64{}, servers: map[string]bool{}}
	start := time.Now().Add(500 * time.Millisecond).UnixNano()
	ro.start = start
	for pi, ph := range s.Phases {
		cs, err := scenario.ExpandHosts(ph.Clients, all)
		if err != nil {
			return roles{}, err
		}
		ss, err := scenario.ExpandHosts(ph.Servers, all)
		if err != nil {
			return roles{}, err
		}
		for _, sv := range ss {
			ro.servers[sv] = true
		}
		mean, err := scenario.MeanSize(ph.Sizes)
		if err != nil {
			return roles{}, err
		}
		for _, c := range cs {
			w := r.workload(e, pi, c, ss, start, mean)
			if w == nil {
				continue
			}
			ro.clients[c] = w
			ro.meanSize[c] = mean
		}
	}
	for _, h := range all {
		if ro.servers[h] {
			ro.receivers = append(ro.receivers, h)
		}
	}
	for _, h := range r.layout.Hosts {
		if ro.clients[h.Name] != nil || ro.servers[h.Name] {
			ro.used = append(ro.used, h.Name)
		}
	}
	return ro, nil
}

// workload is client c's workload in phase pi against servers, nil when
// it has no server but itself (a host does not send to itself).
func (r *run) workload(e *scenario.Experiment, pi int, c string, servers []string, start int64, mean float64) *agentpb.Workload {
	s := e.Scenario
	ph := s.Phases[pi]
	h, _ := r.layout.Host(c)
	var targets []string
	for _, sv := range servers {
		if sv == c {
			continue
		}
		sh, _ := r.layout.Host(sv)
		targets = append(targets, fmt.Sprintf("%s:%d", sh.IP, agents.ServerPort))
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
		MaxRpcs:    ph.MaxRPCs, StartUnixNs: start,
	}
	if ph.Load > 0 {
		// Offered load counts message bytes only, as cp_node does.
		w.RateRps = r.fab.RateFor(ph.Load, mean)
	}
	if ph.Incast != nil {
		w.BurstIntervalUs = uint32(ph.Incast.Interval.D() / time.Microsecond)
		w.BurstJitterUs = uint32(ph.Incast.Jitter.D() / time.Microsecond)
	}
	return w
}

// clientHosts are the used hosts that run a workload.
func (ro roles) clientHosts() []string {
	var out []string
	for _, h := range ro.used {
		if ro.clients[h] != nil {
			out = append(out, h)
		}
	}
	return out
}

// serverOnly are the used hosts that only serve.
func (ro roles) serverOnly() []string {
	var out []string
	for _, h := range ro.used {
		if ro.clients[h] == nil {
			out = append(out, h)
		}
	}
	return out
}
