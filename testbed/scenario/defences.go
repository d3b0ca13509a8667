package scenario

import (
	"fmt"
	"slices"

	"github.com/homatb/homatb/internal/hostset"
)

// Untrusted says what the switch does to an untrusted host's packets: it
// re-marks their DSCP to Remark (0..63) before it picks their queue.
type Untrusted struct {
	Remark int `yaml:"remark"`
}

// SwitchMeter meters what each host's port sends into some queues
// (switch.meters): Rate with a Burst, its excess re-marked to queue 0 with
// DSCP 0 (Exceed "remark", the default) or dropped ("drop").
type SwitchMeter struct {
	// Priorities are the queues metered together (0..7, 7 served first).
	Priorities []int    `yaml:"priorities"`
	Rate       Rate     `yaml:"rate"`
	Burst      ByteSize `yaml:"burst"`
	Exceed     string   `yaml:"exceed"`
}

// Meter excess actions.
const (
	ExceedRemark = "remark"
	ExceedDrop   = "drop"
)

// Limits of the switch's defences: tor.p4's meter room per port and the
// embedded meter's largest burst.
const (
	maxSwitchMeters = 4
	maxMeterBurst   = 1 << 32
)

// DefencesOn reports whether the switch installs its defences in this
// experiment: switch.defences, true unless set false (a sweep's way to
// compare them on and off without a second run).
func (s Switch) DefencesOn() bool { return s.Defences == nil || *s.Defences }

// HasDefences reports whether the scenario asks for any switch defence.
func (s *Scenario) HasDefences() bool {
	return len(s.DSCP.Trust) > 0 || s.Switch.AntiSpoofing || len(s.Switch.Meters) > 0
}

// UntrustedHosts are the hosts dscp.trust leaves out (none without trust).
func (s *Scenario) UntrustedHosts() []string {
	if len(s.DSCP.Trust) == 0 {
		return nil
	}
	hosts := s.Topology.HostNames()
	trusted, _ := hostset.Expand(s.DSCP.Trust, hosts) // checked by checkDefences
	var out []string
	for _, h := range hosts {
		if !slices.Contains(trusted, h) {
			out = append(out, h)
		}
	}
	return out
}

// checkDefences checks dscp.trust and dscp.untrusted, switch.meters and
// switch.defences: hosts of the run, a DSCP value, queues each in one
// meter, a positive rate up to the link's and burst of at least a frame,
// a known excess action; none on an external topology, whose switch the
// run does not program.
func (c *checker) checkDefences(s *Scenario) {
	if len(s.DSCP.Trust) > 0 {
		if _, err := hostset.Expand(s.DSCP.Trust, s.Topology.HostNames()); err != nil {
			c.errorf("dscp.trust", "%v", err)
		}
	}
	if u := s.DSCP.Untrusted; u != nil {
		if len(s.DSCP.Trust) == 0 {
			c.errorf("dscp.untrusted", "untrusted applies to the hosts dscp.trust leaves out: give dscp.trust, the hosts whose DSCP the switch believes")
		}
		if u.Remark < 0 || u.Remark > 63 {
			c.errorf("dscp.untrusted.remark", "expected a DSCP value from 0 to 63, got %d", u.Remark)
		}
	}
	if len(s.Switch.Meters) > maxSwitchMeters {
		c.errorf("switch.meters", "expected at most %d meters (tor.p4's room per port), got %d", maxSwitchMeters, len(s.Switch.Meters))
	}
	seen := map[int]int{}
	for i, m := range s.Switch.Meters {
		p := fmt.Sprintf("switch.meters[%d]", i)
		if len(m.Priorities) == 0 {
			c.errorf(p+".priorities", "expected the queues to meter, such as [6, 7]")
		}
		for _, q := range m.Priorities {
			switch j, dup := seen[q]; {
			case q < 0 || q > 7:
				c.errorf(p+".priorities", "expected queues from 0 (lowest) to 7 (highest), got %d", q)
			case dup:
				c.errorf(p+".priorities", "queue %d is metered by switch.meters[%d] already: a queue may be in one meter", q, j)
			default:
				seen[q] = i
			}
		}
		switch {
		case m.Rate == 0:
			c.errorf(p+".rate", "expected the metered rate per host port, such as 5Mbit")
		case s.Link.Rate != 0 && m.Rate > s.Link.Rate:
			c.errorf(p+".rate", "%v is above the link's %v: the meter would never act", m.Rate, s.Link.Rate)
		}
		if m.Burst <= 0 || int(m.Burst) < s.Link.MTU || m.Burst > maxMeterBurst {
			c.errorf(p+".burst", "expected a burst from one MTU (%d bytes) to 4GiB, such as 15KB, got %d", s.Link.MTU, m.Burst)
		}
		if m.Exceed != "" && m.Exceed != ExceedRemark && m.Exceed != ExceedDrop {
			c.errorf(p+".exceed", "expected %q (queue 0, DSCP 0) or %q, got %q", ExceedRemark, ExceedDrop, m.Exceed)
		}
	}
	if s.Topology.Kind == KindExternal {
		for _, f := range []struct {
			path string
			set  bool
		}{{"dscp.trust", len(s.DSCP.Trust) > 0}, {"switch.anti_spoofing", s.Switch.AntiSpoofing}, {"switch.meters", len(s.Switch.Meters) > 0}} {
			if f.set {
				c.errorf(f.path, "an external topology's switch is set up by hand; the run programs no defences on it")
			}
		}
	}
	if s.Switch.Defences != nil && !s.HasDefences() {
		c.errorf("switch.defences", "turns the switch's defences on or off, but none is set: give dscp.trust, switch.anti_spoofing or switch.meters")
	}
}
