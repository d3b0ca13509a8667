package scenario

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/homatb/homatb/internal/hostset"
	"github.com/homatb/homatb/internal/units"
	"github.com/homatb/homatb/workloads"
)

// Collective makes a phase a collective among its hosts: every iteration
// each host computes, then the hosts exchange the collective's step
// messages, a step starting on a host when the data it depends on has
// arrived there (docs/scenarios.md, "Collectives").
type Collective struct {
	// Kind is one of workloads.CollectiveKinds.
	Kind string `yaml:"kind"`
	// Bytes is the collective's buffer; each step message carries
	// bytes divided by the number of hosts.
	Bytes      ByteSize `yaml:"bytes"`
	Iterations int      `yaml:"iterations"`
	// Compute is each host's compute before each iteration, plus a
	// uniform draw in [0, Jitter).
	Compute Duration `yaml:"compute"`
	Jitter  Duration `yaml:"jitter"`
	// Window bounds a member's step messages unanswered at once, as a
	// collective library's buffer slots do; 0: the kind's default
	// (workloads.TreeWindow for tree-allreduce, no bound for the others).
	Window int `yaml:"window"`
}

// MaxCollectiveWindow bounds collective.window.
const MaxCollectiveWindow = 1 << 20

// MaxIterations bounds a collective's iterations.
const MaxIterations = 1_000_000

func (c *Collective) applyDefaults() {
	if c.Iterations == 0 {
		c.Iterations = 100
	}
}

// checkCollective checks a collective phase p: hosts and a collective
// block, none of the client-server keys.
func (c *checker) checkCollective(s *Scenario, p string, ph Phase) {
	if ph.Collective == nil {
		c.errorf(p+".hosts", "hosts is for collective phases: expected a collective block beside it (or clients and servers instead)")
		return
	}
	for _, key := range clientKeys(ph) {
		c.errorf(p+"."+key, "a collective phase takes hosts and collective, not %s", key)
	}
	hosts, err := distinctHosts(ph.Hosts, s.Topology.HostNames(), "the ring")
	switch {
	case err != nil:
		c.errorf(p+".hosts", "%v", err)
		return
	case len(hosts) < 2:
		c.errorf(p+".hosts", "expected at least 2 hosts in the collective, got %d", len(hosts))
		return
	}
	co := ph.Collective
	q := p + ".collective"
	if !slices.Contains(workloads.CollectiveKinds, co.Kind) {
		c.errorf(q+".kind", "expected one of %s, got %q", strings.Join(workloads.CollectiveKinds, ", "), co.Kind)
	}
	chunk := int(co.Bytes) / len(hosts)
	if chunk < workloads.MinCollectiveMessage {
		c.errorf(q+".bytes", "expected at least %d bytes per host (%d bytes among %d hosts), got %d", workloads.MinCollectiveMessage,
			workloads.MinCollectiveMessage*len(hosts), len(hosts), int64(co.Bytes))
	}
	for j, t := range s.Transports {
		if limit := t.MaxMessage(); chunk > limit {
			c.errorf(q+".bytes", "each step message is %d bytes (bytes / %d hosts), but %s (transports[%d]) carries at most %d", chunk, len(hosts), t.Config(), j, limit)
		}
	}
	if co.Iterations < 1 || co.Iterations > MaxIterations {
		c.errorf(q+".iterations", "expected 1 to %d iterations, got %d", MaxIterations, co.Iterations)
	}
	if co.Compute < 0 || co.Compute > s.Duration {
		c.errorf(q+".compute", "expected a compute time from 0 to the duration %s, got %s", s.Duration.D(), co.Compute.D())
	}
	if co.Jitter < 0 || co.Jitter > s.Duration {
		c.errorf(q+".jitter", "expected a jitter from 0 to the duration %s, got %s", s.Duration.D(), co.Jitter.D())
	}
	if co.Window < 0 || co.Window > MaxCollectiveWindow {
		c.errorf(q+".window", "expected 1 to %d step messages in flight per member, or 0 for the kind's default, got %d", MaxCollectiveWindow, co.Window)
	}
}

// CollectiveHosts are a collective phase's hosts in ring order.
func (s *Scenario) CollectiveHosts(ph Phase) ([]string, error) {
	return hostset.Expand(ph.Hosts, s.Topology.HostNames())
}

// distinctHosts expands a host list in its order, refusing a host listed
// twice (ExpandHosts would merge the repeats): each holds one place in
// what (a ring, a matrix's nodes).
func distinctHosts(items, all []string, what string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, item := range items {
		each, err := hostset.Expand([]string{item}, all)
		if err != nil {
			return nil, err
		}
		for _, h := range each {
			if seen[h] {
				return nil, fmt.Errorf("host %s is listed twice; each host holds one place in %s", h, what)
			}
			seen[h] = true
			out = append(out, h)
		}
	}
	return out, nil
}

// clientKeys are the client-server keys phase ph sets, which collective
// and connection-matrix phases refuse.
func clientKeys(ph Phase) []string {
	var out []string
	for _, f := range []struct {
		key string
		set bool
	}{
		{"clients", len(ph.Clients) > 0}, {"servers", len(ph.Servers) > 0}, {"sizes", ph.Sizes != ""},
		{"arrivals", ph.Arrivals != ""}, {"load", ph.Load != 0}, {"rate_rps", ph.RateRPS != 0},
		{"max_outstanding", ph.MaxOutstanding != 0}, {"response_bytes", ph.ResponseBytes != 0},
		{"max_rpcs", ph.MaxRPCs != 0}, {"incast", ph.Incast != nil},
	} {
		if f.set {
			out = append(out, f.key)
		}
	}
	return out
}

// Per-message cost of a collective in the twin, as measured on a 2-vCPU
// machine of the kind DESIGN.md describes (docs/topologies.md,
// "Collectives at scale"): 20 µs of one core a step message among 128
// ranks, 49 µs on a fat tree of 8,192 hosts, where nothing stays in the
// caches.
const (
	simSecondsPerStepMin = 20e-6
	simSecondsPerStepMax = 49e-6
	// bigCollective is the step messages from which WorkNote speaks.
	bigCollective = 1_000_000
)

// WorkNote says, for a simulated plan whose collectives send at least a
// million step messages in one experiment, how many and about how long
// the twin takes for them on a machine like this one; empty otherwise.
// A message's cost, not the fabric's size, sets what such a run costs.
func (p *Plan) WorkNote() string {
	if !p.Simulate {
		return ""
	}
	most, what := 0, ""
	// A sweep's experiments share their collectives; an all-to-all's
	// shape plans every member, O(N²) among N.
	type key struct {
		kind     string
		n, bytes int
	}
	shapes := map[key]int{}
	for i := range p.Experiments {
		s := p.Experiments[i].Scenario
		n, desc := 0, ""
		for _, ph := range s.Phases {
			c := ph.Collective
			if c == nil {
				continue
			}
			hosts, err := hostset.Expand(ph.Hosts, s.Topology.HostNames())
			if err != nil || len(hosts) < 2 {
				continue
			}
			k := key{c.Kind, len(hosts), int(c.Bytes)}
			msgs, ok := shapes[k]
			if !ok {
				msgs, _ = workloads.CollectiveShape(k.kind, k.n, k.bytes)
				shapes[k] = msgs
			}
			n += msgs * c.Iterations
			desc = fmt.Sprintf("%s among %d hosts, %d an iteration, %s at most", c.Kind, len(hosts), msgs, units.Count(c.Iterations, "iteration"))
		}
		if n > most {
			most, what = n, desc
		}
	}
	if most < bigCollective {
		return ""
	}
	return fmt.Sprintf("note: an experiment of this run sends up to %.1f million collective step messages (%s); the twin spent %.0f-%.0f µs of one core a step message on a 2-vCPU machine (docs/topologies.md, \"Collectives at scale\"), so expect %s for them, and two rows of records each",
		float64(most)/1e6, what, simSecondsPerStepMin*1e6, simSecondsPerStepMax*1e6, roughly(float64(most)*simSecondsPerStepMin, float64(most)*simSecondsPerStepMax))
}

// roughly says a span of lo to hi seconds in whole minutes, or hours
// past two: "about 3 minutes", "45 to 110 minutes", "up to 2 minutes"
// when lo is under a minute.
func roughly(lo, hi float64) string {
	const twoHours = 2 * 3600
	minutes := func(s float64) int { return max(1, int(math.Round(s/60))) }
	hours := func(s float64) string { return strconv.FormatFloat(math.Round(s/360)/10, 'f', -1, 64) }
	say := func(s float64) string {
		if s >= twoHours {
			return hours(s) + " hours"
		}
		return units.Count(minutes(s), "minute")
	}
	switch {
	case hi < 60:
		return "under a minute"
	case lo < 60:
		return "up to " + say(hi)
	case say(lo) == say(hi):
		return "about " + say(hi)
	case hi < twoHours:
		return fmt.Sprintf("%d to %s", minutes(lo), say(hi))
	case lo >= twoHours:
		return hours(lo) + " to " + say(hi)
	}
	return say(lo) + " to " + say(hi)
}
