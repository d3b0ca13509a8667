package scenario

import (
	"fmt"
	"path"
	"strings"

	"github.com/homatb/homatb/internal/hostset"
)

// Capture asks for packet captures (pcapng) of chosen experiments: at
// hosts' NICs and at the switch ports toward hosts, each frame cut to
// Snaplen bytes, each file bounded by MaxBytes (docs/dissector.md).
type Capture struct {
	// Hosts are captured at their NIC, inside their namespace.
	Hosts []string `yaml:"hosts"`
	// SwitchPorts names hosts whose ToR port (the switch's side of their
	// link) is captured.
	SwitchPorts []string `yaml:"switch_ports"`
	// Snaplen is how many bytes of each frame are kept; 0 means
	// DefaultSnaplen, which holds every homatb header.
	Snaplen int `yaml:"snaplen"`
	// MaxBytes bounds each file; frames beyond it are counted, not
	// written. 0 means DefaultCaptureBytes.
	MaxBytes ByteSize `yaml:"max_bytes"`
	// Experiments are the experiments captured, by name or shell pattern
	// ("incast-homa", "load-*"); empty means every experiment.
	Experiments []string `yaml:"experiments"`
}

// Capture limits and defaults (docs/scenarios.md).
const (
	// DefaultSnaplen keeps Ethernet, IPv4 and the largest homatb header
	// (ACK, 80 bytes) with room to spare.
	DefaultSnaplen = 128
	// MinSnaplen keeps Ethernet, IPv4 and the Homa common header.
	MinSnaplen          = 64
	MaxSnaplen          = 65535
	DefaultCaptureBytes = 16 << 20
	MinCaptureBytes     = 64 << 10
	MaxCaptureBytes     = 1 << 30
)

// SnapLen is the snaplen with the default applied.
func (c *Capture) SnapLen() int {
	if c.Snaplen == 0 {
		return DefaultSnaplen
	}
	return c.Snaplen
}

// FileBytes is the bound of each file with the default applied.
func (c *Capture) FileBytes() int64 {
	if c.MaxBytes == 0 {
		return DefaultCaptureBytes
	}
	return int64(c.MaxBytes)
}

// Captures reports whether experiment name is captured.
func (c *Capture) Captures(name string) bool {
	if c == nil {
		return false
	}
	if len(c.Experiments) == 0 {
		return true
	}
	for _, p := range c.Experiments {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// checkCapture checks the capture block: known hosts, each once, at least
// one place, snaplen and file bound within the limits, an emulated network.
func (c *checker) checkCapture(s *Scenario) {
	cp := s.Capture
	if cp == nil {
		return
	}
	if s.Topology.Kind == KindExternal {
		c.errorf("capture", "captures need the emulated network (namespaces the run builds); topology.kind external has none")
		return
	}
	if len(cp.Hosts)+len(cp.SwitchPorts) == 0 {
		c.errorf("capture", "expected hosts or switch_ports to capture at, got neither")
	}
	hosts := s.Topology.HostNames()
	known := map[string]bool{}
	for _, h := range hosts {
		known[h] = true
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"hosts", cp.Hosts}, {"switch_ports", cp.SwitchPorts}} {
		seen := map[string]bool{}
		for i, h := range list.names {
			p := fmt.Sprintf("capture.%s[%d]", list.key, i)
			switch {
			case !known[h]:
				c.errorf(p, "expected a host (%s), got %q", hostset.Describe(hosts), h)
			case seen[h]:
				c.errorf(p, "%s is listed twice", h)
			}
			seen[h] = true
		}
	}
	if n := cp.Snaplen; n != 0 && (n < MinSnaplen || n > MaxSnaplen) {
		c.errorf("capture.snaplen", "expected %d to %d bytes (%d keeps every homatb header), got %d", MinSnaplen, MaxSnaplen, DefaultSnaplen, n)
	}
	if b := int64(cp.MaxBytes); b != 0 && (b < MinCaptureBytes || b > MaxCaptureBytes) {
		c.errorf("capture.max_bytes", "expected 64KiB to 1GiB per file, got %d bytes", b)
	}
	for i, p := range cp.Experiments {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			c.errorf(fmt.Sprintf("capture.experiments[%d]", i), "expected an experiment name or pattern such as incast-homa or load-*, got %q", p)
		}
	}
}

// checkCaptureExperiments checks that each of capture.experiments names
// at least one experiment of the plan.
func (src *Source) checkCaptureExperiments(p *Plan) Errors {
	cp := p.Base.Capture
	if cp == nil {
		return nil
	}
	var errs Errors
	for i, pat := range cp.Experiments {
		matched := false
		for _, e := range p.Experiments {
			if ok, _ := path.Match(pat, e.Name); ok {
				matched = true
				break
			}
		}
		if !matched {
			names := make([]string, 0, len(p.Experiments))
			for _, e := range p.Experiments {
				names = append(names, e.Name)
			}
			if len(names) > 6 {
				names = append(names[:6], "...")
			}
			f := fmt.Sprintf("capture.experiments[%d]", i)
			errs = append(errs, &Error{File: src.File, Line: src.idx.lineOf(f), Field: f,
				Msg: fmt.Sprintf("names no experiment of the plan (%s), got %q", strings.Join(names, ", "), pat)})
		}
	}
	return errs
}
