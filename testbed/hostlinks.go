package testbed

import (
	"fmt"
	"maps"

	"github.com/homatb/homatb/internal/nsenter"
	"github.com/homatb/homatb/testbed/hostqdisc"
	"github.com/homatb/homatb/testbed/scenario"
)

// pacerNote is the fidelity note of an emulated experiment with
// host_qdisc: pacer.
const pacerNote = "host_qdisc pacer: each host's link shaper (htb) divided into a class for Homa (IP protocol 146) and one for every other packet, each guaranteed half the link rate and allowed all of it, Homa's served first; the engine's own pacer keeps Homa's backlog (docs/scenarios.md, \"The host queue\"); counters qdisc_* per host"

// divideHostLinks puts every host's link in the state the experiment's
// host_qdisc asks for, in an emulated run (the twin models its own host
// queue): divided between Homa and TCP (pacer), or, if an earlier
// experiment divided it, whole again (none). Divided, it reads the
// classes' counters for the end to difference.
func (x *experimentRun) divideHostLinks() error {
	r := x.r
	pacer := x.e.Scenario.HostQdisc == scenario.HostQdiscPacer
	if r.sim != nil || (!pacer && !r.linksDivided) {
		return nil
	}
	var plan *hostqdisc.Plan
	if pacer {
		p, err := hostqdisc.NewPlan(r.fab.RateBps, r.fab.MTU)
		if err != nil {
			return err
		}
		plan = &p
		x.qdisc0 = map[string]hostqdisc.Stats{}
		x.rec.Fidelity = append(x.rec.Fidelity, pacerNote)
	}
	for _, h := range r.layout.Hosts {
		ns, ok := r.hostNS[h.Name]
		if !ok {
			return fmt.Errorf("host_qdisc %s: host %s has no namespace to reach its link in", x.e.Scenario.HostQdisc, h.Name)
		}
		err := nsenter.Do(ns, func() error {
			if err := hostqdisc.Apply(h.Intf, plan); err != nil {
				return err
			}
			if plan == nil {
				return nil
			}
			st, err := hostqdisc.Read(h.Intf)
			x.qdisc0[h.Name] = st
			return err
		})
		if err != nil {
			return fmt.Errorf("host_qdisc %s on %s: %w", x.e.Scenario.HostQdisc, h.Name, err)
		}
	}
	r.linksDivided = pacer
	return nil
}

// addQdiscCounters adds each used host's class counters since the start
// (qdisc_homa_bytes, …) to its transport counters; a host whose classes
// cannot be read gets a fidelity warning instead.
func (x *experimentRun) addQdiscCounters() {
	if x.qdisc0 == nil {
		return
	}
	for _, h := range x.roles.Used {
		host, _ := x.r.layout.Host(h)
		var st hostqdisc.Stats
		err := nsenter.Do(x.r.hostNS[h], func() error {
			var err error
			st, err = hostqdisc.Read(host.Intf)
			return err
		})
		x.mu.Lock()
		if err != nil {
			x.rec.Fidelity = append(x.rec.Fidelity, fmt.Sprintf("host %s: no host queue counters: %v", h, err))
		} else if hc, ok := x.byHost[h]; ok {
			maps.Copy(hc.Transport, st.Map(x.qdisc0[h]))
		}
		x.mu.Unlock()
	}
}
