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

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/testbed/capture"
	"github.com/homatb/homatb/testbed/cleanup"
	"github.com/homatb/homatb/testbed/mn"
	"github.com/homatb/homatb/testbed/scenario"
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
			if ev.Event == "exit" && !ev.Stopping && !r.killed.expected(ev.Name) {
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
	bmv2JSON, err := bmv2Pipeline(s.Switch)
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
		placeBMv2(r.layout, files)
	} else {
		// BMv2 has no admin socket: its statistics come from P4Runtime
		// once the controller is connected (bmv2Stats).
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
		if err := bmv2Namespaces(r.layout, built); err != nil {
			return "", err
		}
		if err := r.bmv2SendBuffers(built); err != nil {
			return "", err
		}
	}
	return bmv2JSON, nil
}

// bmv2SendBuffers gives every BMv2 port socket room for all that its port
// shaper may hold (eight queues of the run's depth), so that a full shaper
// on one port never blocks BMv2's transmit thread (raiseSendBuffers).
func (r *run) bmv2SendBuffers(built *mn.Built) error {
	bytes := p4.QueuesPerPort * bmv2QueueDepth(r.plan.Base) * bmv2FrameTruesize
	for _, sw := range r.layout.Switches {
		n, err := raiseSendBuffers(built.Switches[sw.Name].PID, bytes)
		if err != nil {
			return fmt.Errorf("BMv2 switch %s: raise its port sockets' send buffers: %w", sw.Name, err)
		}
		if n < len(sw.Ports) {
			return fmt.Errorf("BMv2 switch %s: found %d packet sockets for its %d ports", sw.Name, n, len(sw.Ports))
		}
		r.log.Info("bmv2 port send buffers", "switch", sw.Name, "sockets", n, "bytes", bytes)
	}
	return nil
}

// placeBMv2 gives every BMv2 switch its P4Runtime socket: the switch runs
// in a network namespace of its own (so that its Thrift server, which binds
// every address, is reachable from nowhere else), and a Unix socket is how
// the controller in the root namespace reaches it.
func placeBMv2(n *topo.Network, files switchFiles) {
	for i := range n.Switches {
		n.Switches[i].GRPCSocket = filepath.Join(files.sockDir, n.Switches[i].Name+"-p4rt.sock")
	}
}

// bmv2Namespaces records each BMv2 switch's network namespace, which
// simple_switch_CLI enters to reach its Thrift server.
func bmv2Namespaces(n *topo.Network, built *mn.Built) error {
	for i := range n.Switches {
		sw := &n.Switches[i]
		p, ok := built.Switches[sw.Name]
		if !ok || p.PID <= 0 {
			return fmt.Errorf("build network: the runner reported no process for BMv2 switch %s", sw.Name)
		}
		sw.NetNS = fmt.Sprintf("/proc/%d/ns/net", p.PID)
	}
	return nil
}

// bmv2PortShaper caps every BMv2 port at the link rate in the kernel while
// keeping strict priority: BMv2 limits each of a port's priority queues on
// its own, so without it a port carrying several priorities sends up to
// eight times its link rate. Its bands follow the run's DSCP policy, as
// tor.p4's dscp_to_queue table does, and hold as many packets as a BMv2
// queue.
func bmv2PortShaper(f *fabdesc.Fabric, s *scenario.Scenario) (*mn.PortShaper, error) {
	pol, err := policy(s)
	if err != nil {
		return nil, err
	}
	ps := &mn.PortShaper{RateBps: f.RateBps, MTU: f.MTU, LimitPkts: bmv2QueueDepth(s),
		DSCPQueue: map[string]int{}}
	for d, q := range pol.DSCPQueue {
		ps.DSCPQueue[strconv.Itoa(int(d))] = int(q)
	}
	return ps, nil
}

// bmv2DefaultQueueDepth is BMv2's packet limit of a queue when none is set.
const bmv2DefaultQueueDepth = 64

// bmv2QueueDepth is the packet limit of each BMv2 queue in the run, and so
// of each of the port shaper's classes.
func bmv2QueueDepth(s *scenario.Scenario) int {
	if s.Switch.QueueDepthPkts > 0 {
		return s.Switch.QueueDepthPkts
	}
	return bmv2DefaultQueueDepth
}

// bmv2Pipeline is the absolute path of p4c's tor.json when the switches
// are BMv2, else "".
func bmv2Pipeline(sw scenario.Switch) (string, error) {
	if sw.Target != scenario.TargetBMv2 {
		return "", nil
	}
	p, err := filepath.Abs(BMv2JSONPath)
	if err != nil {
		return "", fmt.Errorf("bmv2 pipeline: %w", err)
	}
	return p, nil
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
		if shaper, err = bmv2PortShaper(f, s); err != nil {
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
			ExtraArgs: append(switchBufferArgs(s.Switch), files.scheduling...), PcapDir: files.pcapDir(),
			BMv2JSON: files.bmv2JSON, ThriftPort: sw.ThriftPort,
			GRPCSocket: sw.GRPCSocket, Notifications: notify, PortShaper: shaper,
		})
	}
	return spec, nil
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

// switchBufferArgs turns the scenario's byte limits and buffer into the
// embedded switch's flags (validation keeps them off BMv2).
func switchBufferArgs(sw scenario.Switch) []string {
	var args []string
	add := func(flag string, v int64) {
		if v > 0 {
			args = append(args, flag, strconv.FormatInt(v, 10))
		}
	}
	b := sw.Buffer
	add("--queue-depth-bytes", int64(sw.QueueDepthBytes))
	add("--shared-buffer-bytes", int64(b.SharedBytes))
	if b.Alpha > 0 {
		args = append(args, "--shared-alpha", strconv.FormatFloat(b.Alpha, 'g', -1, 64))
	}
	add("--port-buffer-bytes", int64(b.PortBytes))
	add("--port-buffer-pkts", int64(b.PortPkts))
	return args
}
