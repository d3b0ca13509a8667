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

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
	"github.com/homatb/homatb/wire/dissector"
)

// Point is one place to capture, written as one file with two pcapng
// interfaces: 0 holds the frames the point received, 1 those it sent.
type Point struct {
	// Name is the file's name without its extension ("h1", "s1-h1").
	Name string
	// Where says it for people ("host h1", "switch s1 port 1 (to h1)").
	Where string
	// In and Out name the two directions (the pcapng interfaces).
	In, Out string
	// Taps are the sockets that see the point's frames.
	Taps []Tap
}

// Tap is a capture socket on an interface in a network namespace.
type Tap struct {
	// NetNS is the namespace's path (/proc/PID/ns/net); "" is the
	// caller's own.
	NetNS, Intf string
	// Received and Sent are the pcapng interfaces (0 in, 1 out) of the
	// frames the interface received and sent; -1 leaves them out.
	Received, Sent int
}

// Points are the capture points c names on the run's network: each host
// of c.Hosts at its NIC, in its namespace (hostNS, by host name), then the
// ToR port toward each host of c.SwitchPorts. A port's received frames
// are read on the switch's side of the link; the frames it sends are read
// where they arrive, at the host's NIC, since the embedded switch sends
// with PACKET_QDISC_BYPASS, which the kernel's taps never see (on a veth
// the two ends see a frame at once).
func Points(c *scenario.Capture, n *topo.Network, hostNS map[string]string) ([]Point, error) {
	hosts := map[string]topo.Host{}
	for _, h := range n.Hosts {
		hosts[h.Name] = h
	}
	switches := map[string]topo.Switch{}
	for _, s := range n.Switches {
		switches[s.Name] = s
	}
	host := func(name string) (topo.Host, string, error) {
		h, ok := hosts[name]
		if !ok {
			return h, "", fmt.Errorf("capture: no host %s in the network", name)
		}
		ns := hostNS[name]
		if ns == "" {
			return h, "", fmt.Errorf("capture: the network namespace of host %s is unknown", name)
		}
		return h, ns, nil
	}
	var out []Point
	for _, name := range c.Hosts {
		h, ns, err := host(name)
		if err != nil {
			return nil, err
		}
		out = append(out, Point{Name: name, Where: "host " + name,
			In: fmt.Sprintf("%s in (%s)", name, h.Intf), Out: fmt.Sprintf("%s out (%s)", name, h.Intf),
			Taps: []Tap{{NetNS: ns, Intf: h.Intf, Received: 0, Sent: 1}}})
	}
	for _, name := range c.SwitchPorts {
		h, ns, err := host(name)
		if err != nil {
			return nil, err
		}
		sw := switches[h.Switch]
		port := fmt.Sprintf("%s port %d", h.Switch, h.Port)
		out = append(out, Point{Name: h.Switch + "-" + name, Where: fmt.Sprintf("switch %s (to %s)", port, name),
			In: fmt.Sprintf("%s in, from %s (%s)", port, name, h.SwitchIntf), Out: fmt.Sprintf("%s out, to %s (read at %s)", port, name, h.Intf),
			Taps: []Tap{{NetNS: sw.NetNS, Intf: h.SwitchIntf, Received: 0, Sent: -1}, {NetNS: ns, Intf: h.Intf, Received: 1, Sent: -1}}})
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
	records  []rundir.Capture
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
	dir := filepath.Join(s.opt.RunDir, rundir.CapturesDir, s.opt.Experiment)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.warnings = append(s.warnings, fmt.Sprintf("capture: %v", err))
		return
	}
	lua := filepath.Join(s.opt.RunDir, rundir.CapturesDir, rundir.DissectorFile)
	if _, err := os.Stat(lua); err != nil {
		if err := dissector.Write(lua); err != nil {
			s.warnings = append(s.warnings, fmt.Sprintf("capture: %v", err))
		}
	}
	for _, p := range points {
		rel := filepath.Join(rundir.CapturesDir, s.opt.Experiment, p.Name+".pcapng")
		c := newCapturer(p, filepath.Join(s.opt.RunDir, rel), s.opt.Snaplen, s.opt.MaxBytes)
		c.rec.File = filepath.ToSlash(rel)
		if err := c.start(); err != nil {
			c.rec.Error = err.Error()
			s.warnings = append(s.warnings, fmt.Sprintf("capture at %s: %v", p.Where, err))
		}
		s.caps = append(s.caps, c)
	}
}

// Stop ends every capture, closes the files and returns their records for
// the manifest. It may be called more than once; later calls return the
// same records.
func (s *Session) Stop() []rundir.Capture {
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
