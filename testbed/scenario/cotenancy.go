package scenario

import (
	"fmt"
	"strings"
)

// Cotenancy: when phases name their transports (phase.transport, a label
// of the transports list), every experiment runs all phases at once, each
// on its own transport, so that Homa's RPCs and TCP's streams share the
// hosts, their NICs and the switch ports. Phases that name none keep the
// usual meaning: one experiment per transport.

// Host queue disciplines (Scenario.HostQdisc): what sits between a host's
// transports and its NIC.
const (
	// HostQdiscNone hands every packet to the NIC's queue as its
	// transport sends it: TCP's packets fill the queue Homa's pacer
	// assumes is its own.
	HostQdiscNone = "none"
	// HostQdiscPacer is one queue per host in front of the NIC, after
	// HomaModule's homa_qdisc: it holds the NIC's backlog under a cap in
	// time, sends Homa's deferred packets in SRPT order and shares the
	// link between Homa and TCP (simnet.Qdisc has the rules).
	HostQdiscPacer = "pacer"
)

// HostQdiscs lists the values of host_qdisc.
var HostQdiscs = []string{HostQdiscNone, HostQdiscPacer}

// Shared reports whether the scenario's phases name their transports.
func (s *Scenario) Shared() bool {
	for _, ph := range s.Phases {
		if ph.Transport != "" {
			return true
		}
	}
	return false
}

// transportIndex is the index of the transports entry label names (its
// configuration label, as reports name it, or its ID), -1 for none.
func (s *Scenario) transportIndex(label string) int {
	for i, t := range s.Transports {
		if t.Config() == label || t.ID() == label {
			return i
		}
	}
	return -1
}

// Names reports whether phase ph's traffic runs on transport t.
func (ph Phase) Names(t Transport) bool {
	return ph.Transport != "" && (ph.Transport == t.Config() || ph.Transport == t.ID())
}

// SharedTransports lists the transports the phases name, in the order of
// the transports list: those of one shared experiment.
func (s *Scenario) SharedTransports() []Transport {
	var out []Transport
	for _, t := range s.Transports {
		for _, ph := range s.Phases {
			if ph.Names(t) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// TransportName is t's name, the records' transport column.
func (t Transport) TransportName() string { return t.Name }

// Shared reports whether the experiment runs several transports at once.
func (e *Experiment) Shared() bool { return len(e.Transports) > 0 }

// AllTransports is every transport the experiment runs: Transports for a
// shared one, else Transport alone.
func (e *Experiment) AllTransports() []Transport {
	if e.Shared() {
		return e.Transports
	}
	return []Transport{e.Transport}
}

// describeTransports is "transport=LABEL", or for a shared experiment
// "transports=LABEL,LABEL" (Plan.Describe).
func (e *Experiment) describeTransports() string {
	if !e.Shared() {
		return "transport=" + e.Transport.Config()
	}
	labels := make([]string, len(e.Transports))
	for i, t := range e.Transports {
		labels[i] = t.Config()
	}
	return "transports=" + strings.Join(labels, ",")
}

// Part is the share of shared experiment e that its k-th transport carries:
// e with that transport alone and only the phases naming it, whose roles
// are planned as any experiment's. Part k's seed is offset by k, so the
// transports' clients draw different arrivals (part 0 draws those of the
// same phases run alone).
func (e *Experiment) Part(k int) *Experiment {
	t := e.Transports[k]
	s := *e.Scenario
	s.Phases = nil
	for _, ph := range e.Scenario.Phases {
		if ph.Names(t) {
			s.Phases = append(s.Phases, ph)
		}
	}
	p := *e
	p.Transport, p.Transports, p.Scenario = t, nil, &s
	p.Seed = e.Seed + uint64(k)*partSeedStride
	return &p
}

// partSeedStride spaces the seeds of a shared experiment's parts; it is
// not a multiple of the strides traffic sweeps and repetitions use.
const partSeedStride = 7777

// sharedTransport is the transport that stands for a shared experiment's
// transports in its name: their IDs joined by "+".
func sharedTransport(ts []Transport) Transport {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID()
	}
	return Transport{Name: strings.Join(ids, "+")}
}

// checkCotenancy checks host_qdisc and the phases' transports: every phase
// names one when any does, each label is in the transports list, every
// entry carries some phase's traffic, and the transports named can share
// a host.
func (c *checker) checkCotenancy(s *Scenario) {
	switch s.HostQdisc {
	case HostQdiscNone:
	case HostQdiscPacer:
		if s.Topology.Kind == KindExternal {
			c.errorf("host_qdisc", "host_qdisc %q divides the links of hosts homatb builds; an external topology's hosts are not: use host_qdisc: none", s.HostQdisc)
		} else if !c.simulate && s.Link.Shaper != "htb" {
			// The emulated pacer is classes of the link's htb (testbed/hostqdisc).
			c.errorf("link.shaper", "host_qdisc %q in emulation divides the host link's htb shaper into classes for Homa and TCP: use link.shaper: htb (got %q)", s.HostQdisc, s.Link.Shaper)
		}
	default:
		c.errorf("host_qdisc", "expected one of %s, got %q", strings.Join(HostQdiscs, ", "), s.HostQdisc)
	}
	if s.HostQdisc == HostQdiscPacer {
		for i, t := range s.Transports {
			if t.TCP.NICPriorities {
				c.errorf(fmt.Sprintf("transports[%d].tcp.nic_priorities", i), "host_qdisc %q stands in front of a NIC with one queue; nic_priorities gives the NIC the switches' eight", s.HostQdisc)
			}
		}
	}
	if !s.Shared() {
		return
	}
	for i, f := range s.Faults {
		if f.KillAgent != nil && !c.simulate {
			c.errorf(fmt.Sprintf("faults[%d].kill_agent", i), "a killed agent of a shared experiment would come back on one of its transports and book the other's RPCs under it: leave kill_agent out of phases that name their transports")
		}
	}
	labels := make([]string, len(s.Transports))
	for i, t := range s.Transports {
		labels[i] = t.Config()
	}
	named := -1 // the first phase naming a transport
	for i, ph := range s.Phases {
		if ph.Transport != "" {
			named = i
			break
		}
	}
	// engine and kernel: the phase that first named an engine transport
	// (one Homa endpoint per host) and a kernel-TCP one (one TCP per host).
	engine, kernel := -1, -1
	for i, ph := range s.Phases {
		p := fmt.Sprintf("phases[%d]", i)
		if ph.Transport == "" {
			c.errorf(p, "expected transport: one of %s, as phases[%d] names its transport (phases name all their transports or none)",
				strings.Join(labels, ", "), named)
			continue
		}
		ti := s.transportIndex(ph.Transport)
		if ti < 0 {
			c.errorf(p+".transport", "expected a label of the transports list (%s), got %q", strings.Join(labels, ", "), ph.Transport)
			continue
		}
		t := s.Transports[ti]
		switch t.Name {
		case TransportPFabric, TransportNDP:
			c.errorf(p+".transport", "%s cannot share the hosts with another transport: it puts the switches' host ports in a mode of its own (rank order, trimming) that every transport's traffic would then go through", t.Name)
			continue
		}
		other, first := engine, &engine
		if !t.Engine() {
			other, first = kernel, &kernel
		}
		switch {
		case other < 0:
			*first = i
		case s.transportIndex(s.Phases[other].Transport) != ti:
			kind := "a Homa-engine transport"
			if !t.Engine() {
				kind = "a kernel-TCP transport"
			}
			c.errorf(p+".transport", "%q and %q (phases[%d]) cannot share a host: each host runs one endpoint of %s, so one experiment takes at most one of them",
				ph.Transport, s.Phases[other].Transport, other, kind)
		}
	}
	if engine >= 0 && kernel >= 0 {
		e, k := s.Transports[s.transportIndex(s.Phases[engine].Transport)], s.Transports[s.transportIndex(s.Phases[kernel].Transport)]
		if e.Name == TransportRoCE {
			c.errorf(fmt.Sprintf("phases[%d].transport", max(engine, kernel)), "%q and %q cannot share a host: RoCE's lossless class pauses the link that %s's packets use, and its go-back-N assumes no loss that TCP's queues cause", e.Config(), k.Config(), k.Config())
		}
	}
}

// checkTransportsUsed refuses, in a scenario whose phases name their
// transports, an entry of the transports list that no phase names in any
// of the sweep's combinations (each one's scenario in combos): a sweep of
// a phase's transport uses every value's entry, each in its own
// experiments.
func (c *checker) checkTransportsUsed(base *Scenario, combos []*Scenario) {
	if !base.Shared() {
		return
	}
	for i, t := range base.Transports {
		used := false
		for _, s := range combos {
			for _, ph := range s.Phases {
				used = used || (i < len(s.Transports) && ph.Names(s.Transports[i]))
			}
		}
		if !used {
			c.errorf(fmt.Sprintf("transports[%d]", i), "transport %q carries no phase's traffic: the phases name their transports, so each entry needs a phase naming it (or leave it out)", t.Config())
		}
	}
}
