package testbed

import (
	"context"
	"errors"
	"fmt"
	fabdesc "github.com/homatb/homatb/internal/fabric"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/homatb/homatb/testbed/capture"
	"github.com/homatb/homatb/testbed/cleanup"
	"github.com/homatb/homatb/testbed/mn"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
	"github.com/homatb/homatb/testbed/topo"
)

// startNetwork starts the Mininet runner, with the run tag in its
// environment, and watches it for processes that exit.
func (r *run) startNetwork(ctx context.Context, log io.Writer) error {
	runner, err := r.parts.startNetwork(ctx, mn.Options{
		Dir: filepath.Join(r.dir, "mininet"), Log: log,
		Env: []string{cleanup.EnvTag + "=" + r.tag, "HOMATB_OWNER=" + strconv.Itoa(os.Getpid())},
	})
	if err != nil {
		return err
	}
	r.runner = runner
	go r.watch(ctx)
	return nil
}

// watch turns an unexpected process exit into the end of the run.
func (r *run) watch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-r.runner.Events():
			if !ok {
				r.cancel(errors.New("mininet runner ended unexpectedly (see logs/mininet.log)"))
				return
			}
			if ev.Event == "exit" && !ev.Stopping && !r.killed.Expected(ev.Name) {
				r.log.Error("process exited", "name", ev.Name, "rc", ev.RC)
				r.cancel(fmt.Errorf("%s exited with code %d during the run (see logs/%s.log)", ev.Name, ev.RC, ev.Name))
				return
			}
		}
	}
}

// buildNetwork gives the switches their ports, has the runner build the
// layout's network and start its switches, and opens each switch's
// statistics. It returns the BMv2 pipeline file ("" for the embedded
// switch).
func (r *run) buildNetwork(ctx context.Context) (string, error) {
	s := r.plan.Base
	bmv2JSON, err := switches.BMv2Pipeline(s.Switch)
	if err != nil {
		return "", err
	}
	if err := assignPorts(r.layout, bmv2JSON != ""); err != nil {
		return "", err
	}
	files := switchFiles{binary: r.opt.Binary, runDir: r.dir, sockDir: r.sockDir, bmv2JSON: bmv2JSON, pcap: s.Switch.Pcap,
		scheduling: switchSchedulingArgs(r.opt)}
	if err := files.mkdirs(); err != nil {
		return "", err
	}
	if bmv2JSON != "" {
		switches.PlaceBMv2(r.layout, files.sockDir)
	} else {
		// BMv2 has no admin socket: its statistics come from P4Runtime
		// once the controller is connected (switches.BMv2Stats).
		for _, sw := range r.layout.Switches {
			r.stats[sw.Name] = r.parts.switchStats(sw.Name, files.adminSocket(sw.Name))
		}
	}
	r.postcards = bmv2JSON == "" && s.Switch.PostcardsOn()
	spec, err := mininetSpec(r.layout, r.fab, s, files)
	if err != nil {
		return "", err
	}
	r.log.Info("building network", "hosts", len(r.layout.Hosts), "switches", len(r.layout.Switches))
	bctx, bcancel := context.WithTimeout(ctx, 90*time.Second)
	defer bcancel()
	built, err := r.runner.Build(bctx, spec)
	if err != nil {
		return "", fmt.Errorf("build network (see logs/mininet.log): %w", err)
	}
	r.hostNS = capture.Namespaces(built.Hosts)
	if bmv2JSON != "" {
		if err := switches.PrepareBMv2(r.layout, built, s, r.log); err != nil {
			return "", err
		}
	}
	return bmv2JSON, nil
}

// assignPorts gives every switch a free loopback port for P4Runtime and,
// for BMv2, one for Thrift (one per switch, so that two BMv2 switches do
// not both take 9090).
func assignPorts(n *topo.Network, thrift bool) error {
	for i := range n.Switches {
		sw := &n.Switches[i]
		var err error
		if sw.GRPCPort, err = freePort(); err != nil {
			return err
		}
		if thrift {
			if sw.ThriftPort, err = freePort(); err != nil {
				return err
			}
		}
	}
	return nil
}

// freePort asks the kernel for an unused loopback port. Another process
// could take it before the switch binds; the switch then fails to start and
// the build says so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// switchFiles are where a run's switch processes find their binary and put
// their sockets, logs, statistics and captures.
type switchFiles struct {
	binary, runDir, sockDir string
	// bmv2JSON is the BMv2 pipeline; "" runs the embedded switch.
	bmv2JSON string
	pcap     bool
	// scheduling are the embedded switch's scheduling flags.
	scheduling []string
}

func (f switchFiles) adminSocket(sw string) string {
	return filepath.Join(f.sockDir, sw+"-admin.sock")
}

func (f switchFiles) pcapDir() string {
	if !f.pcap {
		return ""
	}
	return filepath.Join(f.runDir, "pcap")
}

func (f switchFiles) mkdirs() error {
	for _, d := range []string{f.sockDir, filepath.Join(f.runDir, "switch"), f.pcapDir()} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// mininetSpec is the runner's build request for the layout: each host on
// its ToR port through a link shaped on the host side, the links between
// switches, and the switch processes on their assigned ports.
func mininetSpec(n *topo.Network, f *fabdesc.Fabric, s *scenario.Scenario, files switchFiles) (mn.Spec, error) {
	spec := mn.Spec{Tag: n.Tag, MTU: f.MTU, Shaper: s.Link.Shaper, BWMbit: f.Mbit(),
		Env: map[string]string{cleanup.EnvTag: n.Tag}}
	for _, h := range n.Hosts {
		spec.Hosts = append(spec.Hosts, mn.HostSpec{Name: h.Name, Node: h.Node, IP: fmt.Sprintf("%s/%d", h.IP, h.Prefix), MAC: h.MAC})
		spec.Links = append(spec.Links, mn.LinkSpec{A: h.Name, APort: 0, AIntf: h.Intf, B: h.Switch, BPort: h.Port, BIntf: h.SwitchIntf, ShapeA: true})
	}
	for _, l := range n.Links {
		a, _ := n.Switch(l.A)
		b, _ := n.Switch(l.B)
		spec.Links = append(spec.Links, mn.LinkSpec{A: l.A, APort: l.APort, AIntf: a.Intfs[l.APort], B: l.B, BPort: l.BPort, BIntf: b.Intfs[l.BPort]})
	}
	kind := "homatb"
	var shaper *mn.PortShaper
	if files.bmv2JSON != "" {
		kind = "bmv2"
		var err error
		if shaper, err = switches.BMv2PortShaper(f, s); err != nil {
			return spec, err
		}
	}
	for _, sw := range n.Switches {
		var notify string
		if files.bmv2JSON != "" {
			notify = filepath.Join(files.sockDir, sw.Name+"-bmv2.ipc")
		}
		spec.Switches = append(spec.Switches, mn.SwitchSpec{
			Name: sw.Name, Node: sw.Node, Kind: kind, Binary: files.binary, DeviceID: sw.DeviceID, GRPCPort: sw.GRPCPort,
			LinkBps: f.RateBps, QueueDepthPkts: f.QueueDepthPkts,
			StatsFile: filepath.Join(files.runDir, "switch", sw.Name+"-final.json"),
			LogFile:   filepath.Join(files.runDir, "logs", sw.Name+".log"), AdminSocket: files.adminSocket(sw.Name),
			ExtraArgs: append(append(switches.BufferArgs(s.Switch), uplinkArgs(n, f, sw.Name)...), files.scheduling...), PcapDir: files.pcapDir(),
			BMv2JSON: files.bmv2JSON, ThriftPort: sw.ThriftPort,
			GRPCSocket: sw.GRPCSocket, Notifications: notify, PortShaper: shaper,
		})
	}
	return spec, nil
}

// uplinkArgs are switch sw's --port-rate flags for its links to other
// switches, when they run at another rate than the hosts' links
// (topology.uplink_rate, core_rate).
func uplinkArgs(n *topo.Network, f *fabdesc.Fabric, sw string) []string {
	if f.Uplink() == f.RateBps && f.Core() == f.RateBps {
		return nil
	}
	var args []string
	for _, l := range n.Links {
		rate := f.Uplink()
		if l.Core {
			rate = f.Core()
		}
		for _, end := range []struct {
			name string
			port int
		}{{l.A, l.APort}, {l.B, l.BPort}} {
			if end.name == sw {
				args = append(args, "--port-rate", fmt.Sprintf("%d:%d", end.port, rate))
			}
		}
	}
	return args
}

// schedulingArgs are the agents' flags for the run's scheduling.
func schedulingArgs(opt Options) []string {
	return schedFlags(opt, AgentRTPriority)
}

// switchSchedulingArgs are the embedded switch's.
func switchSchedulingArgs(opt Options) []string {
	return schedFlags(opt, SwitchRTPriority)
}

// schedFlags are the scheduling flags of a process that runs at rtPrio
// when the run is real-time.
func schedFlags(opt Options, rtPrio int) []string {
	var args []string
	if opt.Realtime {
		args = append(args, "--rt-priority", strconv.Itoa(rtPrio))
	}
	if opt.Slice > 0 {
		args = append(args, "--slice", opt.Slice.String())
	}
	return args
}

// attachBMv2Stats gives every BMv2 switch its statistics reader once the
// controller is connected (the counters are read over its P4Runtime
// connection). A fabric that reads no counters (tests' fakes) gets none.
func (r *run) attachBMv2Stats() {
	qc, ok := r.ctl.(switches.QueueCounterReader)
	if !ok {
		return
	}
	for _, sw := range r.layout.Switches {
		r.stats[sw.Name] = switches.NewBMv2Stats(sw, r.fab.RateBps, qc)
	}
}
