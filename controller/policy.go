package controller

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/homatb/homatb/p4"
)

// Policy is the switch behaviour the controller installs besides
// forwarding: which queue each DSCP value goes to, where ECN marks, and
// which ports run a switch mode other than strict priority.
type Policy struct {
	// DSCPQueue maps DSCP values (0..63) to queues (0..7, 7 served first).
	// DSCP values not in the map use the table default, queue 0. Nil means
	// defaultDSCPQueues.
	DSCPQueue map[uint8]uint8
	// ECNThresholdPkts marks ECN-capable packets CE on every switch port
	// when their queue holds at least this many packets; 0 installs no
	// marking.
	ECNThresholdPkts uint32
	// ECNRED, when its KmaxPkts is non-zero, marks by a RED profile
	// instead of ECNThresholdPkts' step.
	ECNRED ECNProfile
	// NoARPProxy leaves the arp_proxy table empty; by default every switch
	// answers ARP for every host, so hosts need no static ARP entries.
	NoARPProxy bool
	// PortModes put sets of ports of every switch in a switch mode
	// (pFabric's rank order, NDP's trimming); ports in none keep strict
	// priority, and a port may be in one only.
	PortModes []PortMode
	// LoadBalancing spreads traffic over equal-cost paths per packet
	// (LoadBalanceSpray, the default when empty) or per flow
	// (LoadBalanceECMP).
	LoadBalancing string
	// SwitchSeeds gives every switch its own flow-hash seed under ECMP (a
	// hash of its name) so that the tiers of a fat tree choose among their
	// uplinks independently, as a fabric's switches seeded apart do;
	// false keeps every seed 0 (one hash everywhere).
	SwitchSeeds bool
	// Defences are DSCP trust, anti-spoofing and meters on host ports.
	Defences Defences
}

// ECNProfile is a RED marking profile: an ECN-capable packet finding
// fewer than KminPkts packets in its queue is not marked, one finding
// KmaxPkts or more is, and in between with a probability rising linearly
// from 0 at Kmin to Pmax at Kmax (tor.p4's set_ecn_red).
type ECNProfile struct {
	KminPkts, KmaxPkts uint32
	Pmax               float64
}

// DefaultPolicy maps class selector CSp (DSCP p<<3) to queue p, answers
// ARP, and does not mark ECN. The zero Policy means the same.
func DefaultPolicy() Policy {
	return Policy{DSCPQueue: defaultDSCPQueues()}
}

// defaultDSCPQueues maps CSp (DSCP p<<3, TOS p<<5 as Homa sets it) to queue p.
func defaultDSCPQueues() map[uint8]uint8 {
	m := make(map[uint8]uint8, p4.QueuesPerPort)
	for p := range uint8(p4.QueuesPerPort) {
		m[p<<3] = p
	}
	return m
}

// CollapsedDSCPQueues maps Homa's eight priority levels (CS0..CS7) onto
// queues 0..queues-1, keeping their order: level p goes to queue
// p*queues/8, so with 2 queues levels 0-3 share queue 0 and 4-7 queue 1.
// queues must be 1, 2, 4 or 8.
func CollapsedDSCPQueues(queues int) (map[uint8]uint8, error) {
	switch queues {
	case 1, 2, 4, 8:
	default:
		return nil, fmt.Errorf("collapse onto %d queues: want 1, 2, 4 or 8", queues)
	}
	m := make(map[uint8]uint8, p4.QueuesPerPort)
	for p := range p4.QueuesPerPort {
		m[uint8(p<<3)] = uint8(p * queues / p4.QueuesPerPort)
	}
	return m, nil
}

// ParseDSCPPolicy reads a policy name as the CLI and scenarios spell it:
// "default" (CSp -> p), "collapse:N" (N = 1, 2, 4, 8), or an explicit map
// "dscp=queue,dscp=queue,...".
func ParseDSCPPolicy(s string) (map[uint8]uint8, error) {
	switch {
	case s == "" || s == "default":
		return defaultDSCPQueues(), nil
	case strings.HasPrefix(s, "collapse:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "collapse:"))
		if err != nil {
			return nil, fmt.Errorf("dscp policy %q: %w", s, err)
		}
		return CollapsedDSCPQueues(n)
	}
	m := map[uint8]uint8{}
	for _, pair := range strings.Split(s, ",") {
		d, q, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return nil, fmt.Errorf("dscp policy %q: %q is not dscp=queue", s, pair)
		}
		dv, err := strconv.ParseUint(strings.TrimSpace(d), 0, 8)
		if err != nil {
			return nil, fmt.Errorf("dscp policy %q: dscp %q: %w", s, d, err)
		}
		qv, err := strconv.ParseUint(strings.TrimSpace(q), 0, 8)
		if err != nil {
			return nil, fmt.Errorf("dscp policy %q: queue %q: %w", s, q, err)
		}
		if _, dup := m[uint8(dv)]; dup {
			return nil, fmt.Errorf("dscp policy %q: dscp %d mapped twice", s, dv)
		}
		m[uint8(dv)] = uint8(qv)
	}
	return m, validateDSCP(m)
}

func validateDSCP(m map[uint8]uint8) error {
	for _, d := range slices.Sorted(maps.Keys(m)) {
		if d > 63 {
			return fmt.Errorf("dscp %d: outside 0..63", d)
		}
		if q := m[d]; q >= p4.QueuesPerPort {
			return fmt.Errorf("dscp %d: queue %d outside 0..%d", d, q, p4.QueuesPerPort-1)
		}
	}
	return nil
}

// Validate checks the DSCP map, the ECN threshold (a bit<19> in tor.p4),
// the port modes, the load balancing and the defences.
func (p Policy) Validate() error {
	if err := validateDSCP(p.DSCPQueue); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	if p.ECNThresholdPkts >= 1<<19 {
		return fmt.Errorf("policy: ecn threshold %d packets does not fit in 19 bits", p.ECNThresholdPkts)
	}
	if r := p.ECNRED; r.KmaxPkts != 0 {
		switch {
		case p.ECNThresholdPkts != 0:
			return fmt.Errorf("policy: both an ecn threshold and a RED profile")
		case r.KminPkts == 0 || r.KmaxPkts <= r.KminPkts || r.KmaxPkts >= 1<<19:
			return fmt.Errorf("policy: RED profile kmin %d kmax %d packets: want 0 < kmin < kmax < 2^19", r.KminPkts, r.KmaxPkts)
		case !(r.Pmax > 0 && r.Pmax <= 1):
			return fmt.Errorf("policy: RED profile pmax %v: want 0 < pmax <= 1", r.Pmax)
		}
	}
	for _, m := range p.PortModes {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
	}
	switch p.LoadBalancing {
	case "", LoadBalanceSpray, LoadBalanceECMP:
	default:
		return fmt.Errorf("policy: load balancing %q: want %q or %q", p.LoadBalancing, LoadBalanceECMP, LoadBalanceSpray)
	}
	if err := p.Defences.Validate(); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

func (p Policy) dscpQueues() map[uint8]uint8 {
	if p.DSCPQueue == nil {
		return defaultDSCPQueues()
	}
	return p.DSCPQueue
}
