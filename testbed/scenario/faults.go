package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/homatb/homatb/internal/hostset"
)

// Directions of a loss fault, seen from the host whose link it is.
const (
	DirectionBoth     = "both"
	DirectionToHost   = "to_host"
	DirectionFromHost = "from_host"
)

// Fault is one entry of the scenario's faults list: a host's link (the
// switch port the host hangs off) or, on a leaf-spine, fat tree or rail
// fabric, a link between two switches ("l1-p2", "e3-a2", "a2-c1"), and exactly one of Loss, Down or KillAgent
// (a host's link only). Faults apply to every experiment of the scenario, and their
// times count from the start of the measurement (after the warm-up).
type Fault struct {
	// Link names the host whose link the fault is on ("h1"), or a link
	// between switches by its two ends ("l1-p2": leaf 1, spine 2; on a
	// fat tree "e1-a1" edge to aggregation, "a1-c1" aggregation to core).
	Link string `yaml:"link"`
	// Loss drops each frame with this probability for the whole experiment
	// (warm-up, measurement and drain), in Direction.
	Loss *float64 `yaml:"loss,omitempty"`
	// Direction is "both" (the default), "to_host" or "from_host"; loss only.
	Direction string `yaml:"direction,omitempty"`
	// Down drops everything on the link, both ways, for a time.
	Down *DownWindow `yaml:"down,omitempty"`
	// KillAgent kills the host's agent process (SIGKILL).
	KillAgent *KillAgent `yaml:"kill_agent,omitempty"`
	// Restart starts a killed agent again (kill_agent only).
	Restart *bool `yaml:"restart,omitempty"`
}

// DownWindow is when a link is down: For from At.
type DownWindow struct {
	At  Duration `yaml:"at"`
	For Duration `yaml:"for"`
}

// KillAgent is when an agent is killed.
type KillAgent struct {
	At Duration `yaml:"at"`
}

// Kind names the fault's one action: "loss", "down" or "kill_agent" ("" if
// it has none or several, which validation rejects).
func (f Fault) Kind() string {
	kinds := f.kinds()
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

func (f Fault) kinds() []string {
	var out []string
	if f.Loss != nil {
		out = append(out, "loss")
	}
	if f.Down != nil {
		out = append(out, "down")
	}
	if f.KillAgent != nil {
		out = append(out, "kill_agent")
	}
	return out
}

// LossDirection is the loss fault's direction with the default applied.
func (f Fault) LossDirection() string {
	if f.Direction == "" {
		return DirectionBoth
	}
	return f.Direction
}

// RestartAgent reports whether a killed agent is started again.
func (f Fault) RestartAgent() bool { return f.Restart != nil && *f.Restart }

// SwitchLink splits a fault's link between two switches ("l1-p2") into
// the leaf and the spine; ok is false for a host's link.
func (f Fault) SwitchLink() (leaf, spine string, ok bool) {
	a, b, cut := strings.Cut(f.Link, "-")
	if !cut {
		return "", "", false
	}
	if strings.HasPrefix(a, "p") {
		a, b = b, a
	}
	return a, b, true
}

// checkSwitchLink checks a fault on a leaf-spine link of s's topology.
func (c *checker) checkSwitchLink(s *Scenario, p string, f Fault) {
	leaf, spine, _ := f.SwitchLink()
	t := s.Topology
	in := func(name, prefix string, n int) bool {
		i, err := strconv.Atoi(strings.TrimPrefix(name, prefix))
		return strings.HasPrefix(name, prefix) && err == nil && i >= 1 && i <= n && name == prefix+strconv.Itoa(i)
	}
	known, want := t.switchLinkKnown(leaf, spine)
	switch {
	case t.Kind == KindFatTree || t.Kind == KindRail:
		if !known && want != "" { // no want: the topology is reported already
			c.errorf(p+".link", "expected a link of the %s, %s, got %q", t.Kind, want, f.Link)
		}
		if f.KillAgent != nil {
			c.errorf(p+".kill_agent", "kill_agent kills a host's agent; %q is a link between switches", f.Link)
		}
	case t.Kind != KindLeafSpine:
		c.errorf(p+".link", "a link between switches (%q) needs a leaf-spine, fat-tree or rail topology, not %s", f.Link, t.Kind)
	case !in(leaf, "l", t.Leaves) || !in(spine, "p", t.Spines):
		c.errorf(p+".link", "expected a leaf-spine link l1..l%d-p1..p%d (leaf, spine), got %q", t.Leaves, t.Spines, f.Link)
	case f.KillAgent != nil:
		c.errorf(p+".kill_agent", "kill_agent kills a host's agent; %q is a link between switches", f.Link)
	}
}

// checkFaults checks the faults list: a host's or leaf-spine link each, exactly one
// action, times inside the measurement, and no two loss rules or kills on
// one link (they would overwrite each other).
func (c *checker) checkFaults(s *Scenario) {
	if len(s.Faults) == 0 {
		return
	}
	hosts := s.Topology.HostNames()
	known := map[string]bool{}
	for _, h := range hosts {
		known[h] = true
	}
	dur := s.Duration.D()
	lossOn, killOn := map[string]int{}, map[string]int{}
	for i, f := range s.Faults {
		p := fmt.Sprintf("faults[%d]", i)
		if _, _, sw := f.SwitchLink(); sw {
			c.checkSwitchLink(s, p, f)
		} else if !known[f.Link] {
			c.errorf(p+".link", "expected a host whose link the fault is on (%s)%s, got %q", hostset.Describe(hosts), s.Topology.switchLinkHint(), f.Link)
		}
		switch kinds := f.kinds(); len(kinds) {
		case 0:
			c.errorf(p, "expected exactly one of loss, down or kill_agent, got none")
		case 1:
			// BMv2 has no fault injector: a link goes down by its
			// interface (testbed/switches, BMv2Stats.SetFault).
			if s.Switch.Target != TargetEmbedded && kinds[0] != "down" {
				c.errorf(p+"."+kinds[0], "switch.target %q supports down only (BMv2 has no fault injector); %s needs target %q", s.Switch.Target, kinds[0], TargetEmbedded)
			}
		default:
			c.errorf(p+"."+kinds[1], "expected exactly one of loss, down or kill_agent, got %s", strings.Join(kinds, " and "))
		}
		if f.Loss != nil {
			if l := *f.Loss; !(l > 0 && l <= 1) {
				c.errorf(p+".loss", "expected a drop probability above 0 and at most 1, got %g", l)
			}
			if j, dup := lossOn[f.Link]; dup {
				c.errorf(p+".loss", "link %s already has a loss fault (faults[%d]); give one entry per link", f.Link, j)
			}
			lossOn[f.Link] = i
		}
		switch f.Direction {
		case "", DirectionBoth, DirectionToHost, DirectionFromHost:
			if f.Direction != "" && f.Loss == nil {
				c.errorf(p+".direction", "direction applies to loss only (a link that is down drops both ways)")
			}
			if _, _, sw := f.SwitchLink(); sw && f.Direction != "" && f.Direction != DirectionBoth {
				c.errorf(p+".direction", "%s is a link between switches, with no host for %q to mean: its loss is both ways (leave direction out)", f.Link, f.Direction)
			}
		default:
			c.errorf(p+".direction", "expected %q, %q or %q, got %q", DirectionBoth, DirectionToHost, DirectionFromHost, f.Direction)
		}
		if d := f.Down; d != nil {
			if d.At < 0 || d.At.D() >= dur {
				c.errorf(p+".down.at", "expected a time from 0 to below the measurement's duration (%s), got %s", dur, d.At.D())
			}
			if d.For <= 0 {
				c.errorf(p+".down.for", "expected a positive time such as 500ms, got %s", d.For.D())
			} else if end := d.At.D() + d.For.D(); d.At >= 0 && d.At.D() < dur && end > dur {
				c.errorf(p+".down.for", "the link would be down until %s, after the measurement ends (duration %s)", end, dur)
			}
		}
		if k := f.KillAgent; k != nil {
			if k.At < 0 || k.At.D() >= dur {
				c.errorf(p+".kill_agent.at", "expected a time from 0 to below the measurement's duration (%s), got %s", dur, k.At.D())
			}
			if j, dup := killOn[f.Link]; dup {
				c.errorf(p+".kill_agent", "the agent of %s is already killed by faults[%d]", f.Link, j)
			}
			killOn[f.Link] = i
		}
		if f.Restart != nil && f.KillAgent == nil {
			c.errorf(p+".restart", "restart applies to kill_agent only")
		}
	}
}
