package workloads

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Plan says which servers each client sends to: an RPC of client c picks
// one of Plan[c] uniformly at random. Hosts absent from the plan send nothing.
type Plan map[string][]string

// Pattern names a traffic pattern.
type Pattern string

// The traffic patterns.
const (
	// AllToAll: every host sends to every other host, servers chosen
	// uniformly at random per RPC (as HomaModule's cp_node does).
	AllToAll Pattern = "all-to-all"
	// ManyToOne: every host except the receiver sends to the receiver.
	ManyToOne Pattern = "many-to-one"
	// Incast: like many-to-one, with senders synchronised in bursts (the
	// schedule comes from Bursts; the plan is the same).
	Incast Pattern = "incast"
	// Permutation: each host sends to exactly one other host and receives
	// from exactly one (a random derangement).
	Permutation Pattern = "permutation"
)

// PatternSpec is a traffic pattern over a set of hosts.
type PatternSpec struct {
	Pattern Pattern
	// Receiver is the destination of many-to-one and incast.
	Receiver string
	// Senders limits many-to-one and incast to these hosts (empty: all
	// other hosts).
	Senders []string
	// Seed makes the permutation reproducible.
	Seed uint64
}

// Plan builds the client-to-servers plan for hosts (names or addresses, as
// the caller uses them in Workload.targets).
func (p PatternSpec) Plan(hosts []string) (Plan, error) {
	if len(hosts) < 2 {
		return nil, fmt.Errorf("pattern %q over %d hosts: expected at least 2", p.Pattern, len(hosts))
	}
	if dup := firstDuplicate(hosts); dup != "" {
		return nil, fmt.Errorf("pattern %q: host %q listed twice", p.Pattern, dup)
	}
	plan := Plan{}
	switch p.Pattern {
	case AllToAll:
		for _, h := range hosts {
			plan[h] = others(hosts, h)
		}
	case ManyToOne, Incast:
		if !slices.Contains(hosts, p.Receiver) {
			return nil, fmt.Errorf("pattern %q: receiver %q is not one of the hosts", p.Pattern, p.Receiver)
		}
		senders := p.Senders
		if len(senders) == 0 {
			senders = others(hosts, p.Receiver)
		}
		for _, s := range senders {
			if s == p.Receiver || !slices.Contains(hosts, s) {
				return nil, fmt.Errorf("pattern %q: sender %q must be a host other than the receiver", p.Pattern, s)
			}
			plan[s] = []string{p.Receiver}
		}
	case Permutation:
		perm := derangement(len(hosts), rand.New(rand.NewPCG(p.Seed, 0x9e3779b97f4a7c15)))
		for i, h := range hosts {
			plan[h] = []string{hosts[perm[i]]}
		}
	default:
		return nil, fmt.Errorf("pattern %q: expected %s, %s, %s or %s", p.Pattern, AllToAll, ManyToOne, Incast, Permutation)
	}
	return plan, nil
}

func others(hosts []string, self string) []string {
	out := make([]string, 0, len(hosts)-1)
	for _, h := range hosts {
		if h != self {
			out = append(out, h)
		}
	}
	return out
}

func firstDuplicate(hosts []string) string {
	seen := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		if seen[h] {
			return h
		}
		seen[h] = true
	}
	return ""
}

// derangement returns a uniformly random permutation without fixed points,
// by rejection: a random permutation is a derangement with probability
// about 1/e, so few tries are needed.
func derangement(n int, r *rand.Rand) []int {
	for {
		perm := r.Perm(n)
		ok := true
		for i, v := range perm {
			if i == v {
				ok = false
				break
			}
		}
		if ok {
			return perm
		}
	}
}

// Probe is a low-rate stream of fixed-size RPCs that measures latency
// without adding load of its own.
type Probe struct {
	Bytes   int
	RateRPS float64
}

// Sizes returns the probe's size spec in ParseSizeSpec syntax.
func (p Probe) Sizes() string { return fmt.Sprintf("fixed:%d", p.Bytes) }

// Validate checks that the probe is small and slow enough to be a probe:
// at most maxLoad of linkBps on the wire.
func (p Probe) Validate(linkBps, maxLoad float64) error {
	if p.Bytes <= 0 {
		return fmt.Errorf("probe size %d bytes: expected a positive size", p.Bytes)
	}
	if !(p.RateRPS > 0) {
		return fmt.Errorf("probe rate %v RPC/s: expected a positive rate", p.RateRPS)
	}
	d, err := ParseSizeSpec(p.Sizes())
	if err != nil {
		return err
	}
	if load := p.RateRPS * TCPOverhead().WireBytes(d) * 8 / linkBps; load > maxLoad {
		return fmt.Errorf("probe of %d bytes at %v RPC/s offers %.3f of the link: above the probe limit %.3f", p.Bytes, p.RateRPS, load, maxLoad)
	}
	return nil
}
