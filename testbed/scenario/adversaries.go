package scenario

import (
	"fmt"
	"slices"
	"time"

	"github.com/homatb/homatb/hostagent/adversary/kind"
	"github.com/homatb/homatb/internal/hostset"
)

// Adversary is one entry of the scenario's adversaries list: a host of the
// run that is no workload's client or server attacks a victim host (one
// that is) with one kind of traffic (package hostagent/adversary says what
// each kind sends), at Rate from Start for For, both counted from the
// start of the measurement. Its process is its own, apart from the
// agents, and what it sends is recorded apart from the victims' books.
type Adversary struct {
	// Host is the adversary ("h11").
	Host string `yaml:"host"`
	// Kind is forged_grants, forged_resend, unsched_flood, priority_abuse
	// or malformed; none sends nothing (the attack-free entry of a sweep
	// over kinds).
	Kind string `yaml:"kind"`
	// Target is the victim ("h1").
	Target string `yaml:"target"`
	// Rate is the attack's rate on the wire's IP layer ("20Mbit").
	Rate Rate `yaml:"rate"`
	// Start and For are when the attack begins, after the warm-up, and
	// how long it lasts; For 0 means to the end of the measurement.
	Start Duration `yaml:"start"`
	For   Duration `yaml:"for"`
	// Spoof sends forged_grants and forged_resend from the target's
	// address to the hosts it exchanges messages with (Peers), naming
	// the ids victims give their first RPCs when they number them as
	// Linux does (homa sequential_ids); the other kinds ignore it.
	Spoof bool `yaml:"spoof"`
}

// Peers are the hosts of s that exchange messages with the adversary's
// target: the clients of the phases it serves and the servers of those
// it is a client of.
func (a Adversary) Peers(s *Scenario) []string {
	hosts := s.Topology.HostNames()
	seen := map[string]bool{a.Target: true}
	var out []string
	for _, ph := range s.Phases {
		cl, _ := hostset.Expand(ph.Clients, hosts)
		sv, _ := hostset.Expand(ph.Servers, hosts)
		for _, pair := range [][2][]string{{sv, cl}, {cl, sv}} {
			if !slices.Contains(pair[0], a.Target) {
				continue
			}
			for _, h := range pair[1] {
				if !seen[h] {
					seen[h] = true
					out = append(out, h)
				}
			}
		}
	}
	return out
}

// Window is when the attack runs, counted from the start of the
// measurement.
func (a Adversary) Window(s *Scenario) (start, dur time.Duration) {
	dur = a.For.D()
	if dur == 0 {
		dur = s.Duration.D() - a.Start.D()
	}
	return a.Start.D(), dur
}

// checkAdversaries checks the adversaries list: an adversary host that is
// no victim, a victim that is, a known kind, a rate up to the link's and a
// window inside the measurement; emulated runs only.
func (c *checker) checkAdversaries(s *Scenario) {
	if len(s.Adversaries) == 0 {
		return
	}
	if c.simulate {
		c.errorf("adversaries", "adversaries send real packets from a host's namespace; the simulator has none: run without --simulate")
	}
	if s.Topology.Kind == KindExternal {
		c.errorf("adversaries", "adversaries run in the emulation's hosts; an external topology's machines are not the run's to attack from")
	}
	hosts := s.Topology.HostNames()
	known := map[string]bool{}
	for _, h := range hosts {
		known[h] = true
	}
	victims := map[string]bool{}
	for _, ph := range s.Phases {
		for _, set := range [][]string{ph.Clients, ph.Servers} {
			hs, _ := hostset.Expand(set, hosts) // bad sets are checkPhases' to report
			for _, h := range hs {
				victims[h] = true
			}
		}
	}
	dur := s.Duration.D()
	for i, a := range s.Adversaries {
		p := fmt.Sprintf("adversaries[%d]", i)
		switch {
		case !known[a.Host]:
			c.errorf(p+".host", "expected a host of the run (%s), got %q", hostset.Describe(hosts), a.Host)
		case victims[a.Host]:
			c.errorf(p+".host", "%s is a client or server of a phase; an adversary is a host of its own, outside every phase's books", a.Host)
		}
		switch {
		case !known[a.Target]:
			c.errorf(p+".target", "expected the victim, a host of the run (%s), got %q", hostset.Describe(hosts), a.Target)
		case !victims[a.Target]:
			c.errorf(p+".target", "%s is no phase's client or server: expected a victim whose traffic the attack can harm", a.Target)
		}
		if k := kind.Kind(a.Kind); !k.Valid() && k != kind.None {
			c.errorf(p+".kind", "expected one of %v, or %s (no attack, a sweep's baseline), got %q", kind.All(), kind.None, a.Kind)
		}
		if a.Rate == 0 {
			c.errorf(p+".rate", "expected the attack's rate, such as 20Mbit")
		} else if a.Rate > s.Link.Rate && s.Link.Rate != 0 {
			c.errorf(p+".rate", "%v is above the link's %v: the adversary's own link would drop the rest", a.Rate, s.Link.Rate)
		}
		if a.Start < 0 || a.Start.D() >= dur {
			c.errorf(p+".start", "expected a time from 0 to below the measurement's duration (%s), got %s", dur, a.Start.D())
		}
		if a.For < 0 {
			c.errorf(p+".for", "expected a positive time such as 5s, or 0 for the rest of the measurement, got %s", a.For.D())
		} else if end := a.Start.D() + a.For.D(); a.Start >= 0 && a.Start.D() < dur && end > dur {
			c.errorf(p+".for", "the attack would last until %s, after the measurement ends (duration %s)", end, dur)
		}
	}
}
