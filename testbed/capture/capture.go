// Package capture writes a run's packet captures (the scenario's capture
// block): pcapng files of the frames at hosts' NICs and at the switch
// ports toward hosts, taken with an AF_PACKET socket opened in the
// interface's network namespace, each frame cut to the snaplen, each file
// bounded in size. Files go to <run>/captures/<experiment>/, with the
// Wireshark dissector that decodes homatb's packets beside them
// (docs/dissector.md).
package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/homatb/homatb/hostagent/homa/wire/dissector"
	"github.com/homatb/homatb/runfmt"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// Point is one place to capture: an interface in a network namespace.
type Point struct {
	// Name is the file's name without its extension ("h1", "s1-h1").
	Name string
	// Where says it for people ("host h1", "switch s1 port 1 (to h1)").
	Where string
	// NetNS is the namespace's path (/proc/PID/ns/net); "" is the
	// caller's own.
	NetNS string
	Intf  string
}

// Points are the capture points c names on the run's network: each host
// of c.Hosts at its NIC, in its namespace (hostNS, by host name), then the
// ToR port toward each host of c.SwitchPorts, in the switch's namespace.
func Points(c *scenario.Capture, n *topo.Network, hostNS map[string]string) ([]Point, error) {
	hosts := map[string]topo.Host{}
	for _, h := range n.Hosts {
		hosts[h.Name] = h
	}
	switches := map[string]topo.Switch{}
	for _, s := range n.Switches {
		switches[s.Name] = s
	}
	var out []Point
	for _, name := range c.Hosts {
		h, ok := hosts[name]
		if !ok {
			return nil, fmt.Errorf("capture: no host %s in the network", name)
		}
		ns := hostNS[name]
		if ns == "" {
			return nil, fmt.Errorf("capture: the network namespace of host %s is unknown", name)
		}
		out = append(out, Point{Name: name, Where: "host " + name, NetNS: ns, Intf: h.Intf})
	}
	for _, name := range c.SwitchPorts {
		h, ok := hosts[name]
		if !ok {
			return nil, fmt.Errorf("capture: no host %s in the network", name)
		}
		sw := switches[h.Switch]
		out = append(out, Point{Name: h.Switch + "-" + name, Where: fmt.Sprintf("switch %s port %d (to %s)", h.Switch, h.Port, name),
			NetNS: sw.NetNS, Intf: h.SwitchIntf})
	}
	return out, nil
}

// Namespaces maps each host the network runner built to its network
// namespace, from the host's process id (mn.Built.Hosts).
func Namespaces(hosts map[string]struct{ PID int }) map[string]string {
	out := make(map[string]string, len(hosts))
	for name, h := range hosts {
		if h.PID > 0 {
			out[name] = fmt.Sprintf("/proc/%d/ns/net", h.PID)
		}
	}
	return out
}

// Options are a Session's file settings.
type Options struct {
	// RunDir is the run directory; files go to
	// RunDir/captures/Experiment/<point>.pcapng.
	RunDir, Experiment string
	Snaplen            int
	MaxBytes           int64
}

// Session is the captures of one experiment. A nil Session captures
// nothing; its methods do nothing.
type Session struct {
	opt      Options
	caps     []*capturer
	once     sync.Once
	records  []runfmt.Capture
	warnings []string
}

// Begin starts the captures the scenario asks for in experiment name, or
// returns nil when it asks for none there. Failures do not stop the
// experiment: they show in the records' Error and in Warnings.
func Begin(runDir, name string, c *scenario.Capture, n *topo.Network, hostNS map[string]string) *Session {
	if !c.Captures(name) {
		return nil
	}
	s := &Session{opt: Options{RunDir: runDir, Experiment: name, Snaplen: c.SnapLen(), MaxBytes: c.FileBytes()}}
	points, err := Points(c, n, hostNS)
	if err != nil {
		s.warnings = append(s.warnings, err.Error())
		return s
	}
	s.Start(points)
	return s
}

// NewSession returns a Session writing with opt, for Start.
func NewSession(opt Options) *Session { return &Session{opt: opt} }

// Start opens a capture at each point and starts writing. The dissector
// is written beside the experiments' folders, once per run.
func (s *Session) Start(points []Point) {
	dir := filepath.Join(s.opt.RunDir, runfmt.CapturesDir, s.opt.Experiment)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.warnings = append(s.warnings, fmt.Sprintf("capture: %v", err))
		return
	}
	lua := filepath.Join(s.opt.RunDir, runfmt.CapturesDir, runfmt.DissectorFile)
	if _, err := os.Stat(lua); err != nil {
		if err := dissector.Write(lua); err != nil {
			s.warnings = append(s.warnings, fmt.Sprintf("capture: %v", err))
		}
	}
	for _, p := range points {
		rel := filepath.Join(runfmt.CapturesDir, s.opt.Experiment, p.Name+".pcapng")
		c := newCapturer(p, filepath.Join(s.opt.RunDir, rel), s.opt.Snaplen, s.opt.MaxBytes)
		c.rec.File = filepath.ToSlash(rel)
		if err := c.start(); err != nil {
			c.rec.Error = err.Error()
			s.warnings = append(s.warnings, fmt.Sprintf("capture at %s (%s): %v", p.Where, p.Intf, err))
		}
		s.caps = append(s.caps, c)
	}
}

// Stop ends every capture, closes the files and returns their records for
// the manifest. It may be called more than once; later calls return the
// same records.
func (s *Session) Stop() []runfmt.Capture {
	if s == nil {
		return nil
	}
	s.once.Do(func() {
		for _, c := range s.caps {
			c.stop()
			if c.rec.Error != "" && c.started {
				s.warnings = append(s.warnings, fmt.Sprintf("capture at %s: %s", c.p.Where, c.rec.Error))
			}
			if c.rec.LeftOut > 0 {
				s.warnings = append(s.warnings, fmt.Sprintf("capture at %s: %d frames left out, the file reached %d bytes (capture.max_bytes)",
					c.p.Where, c.rec.LeftOut, c.rec.MaxBytes))
			}
			if c.rec.KernelDrops > 0 {
				s.warnings = append(s.warnings, fmt.Sprintf("capture at %s: the capture socket dropped %d frames (it fell behind)",
					c.p.Where, c.rec.KernelDrops))
			}
			s.records = append(s.records, c.rec)
		}
	})
	return s.records
}

// Warnings are what went wrong or was left out, for the experiment's
// fidelity list; complete after Stop.
func (s *Session) Warnings() []string {
	if s == nil {
		return nil
	}
	return s.warnings
}
