package switches

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	fabdesc "github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/testbed/mn"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// PrepareBMv2 finishes the BMv2 switches the runner has started: it
// records each one's network namespace and gives its port sockets room
// for all their shapers may hold.
func PrepareBMv2(n *topo.Network, built *mn.Built, s *scenario.Scenario, log *slog.Logger) error {
	if err := bmv2Namespaces(n, built); err != nil {
		return err
	}
	return bmv2SendBuffers(n, built, s, log)
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

// bmv2SendBuffers gives every BMv2 port socket room for all that its port
// shaper may hold (eight queues of the run's depth), so that a full shaper
// on one port never blocks BMv2's transmit thread (raiseSendBuffers).
func bmv2SendBuffers(n *topo.Network, built *mn.Built, s *scenario.Scenario, log *slog.Logger) error {
	bytes := p4.QueuesPerPort * BMv2QueueDepth(s) * bmv2FrameTruesize
	for _, sw := range n.Switches {
		n, err := raiseSendBuffers(built.Switches[sw.Name].PID, bytes)
		if err != nil {
			return fmt.Errorf("BMv2 switch %s: raise its port sockets' send buffers: %w", sw.Name, err)
		}
		if n < len(sw.Ports) {
			return fmt.Errorf("BMv2 switch %s: found %d packet sockets for its %d ports", sw.Name, n, len(sw.Ports))
		}
		log.Info("bmv2 port send buffers", "switch", sw.Name, "sockets", n, "bytes", bytes)
	}
	return nil
}

// PlaceBMv2 gives every BMv2 switch its P4Runtime socket: the switch runs
// in a network namespace of its own (so that its Thrift server, which binds
// every address, is reachable from nowhere else), and a Unix socket is how
// the controller in the root namespace reaches it.
func PlaceBMv2(n *topo.Network, sockDir string) {
	for i := range n.Switches {
		n.Switches[i].GRPCSocket = filepath.Join(sockDir, n.Switches[i].Name+"-p4rt.sock")
	}
}

// BMv2PortShaper caps every BMv2 port at the link rate in the kernel while
// keeping strict priority: BMv2 limits each of a port's priority queues on
// its own, so without it a port carrying several priorities sends up to
// eight times its link rate. Its bands follow the run's DSCP policy, as
// tor.p4's dscp_to_queue table does, and hold as many packets as a BMv2
// queue.
func BMv2PortShaper(f *fabdesc.Fabric, s *scenario.Scenario) (*mn.PortShaper, error) {
	pol, err := Policy(s)
	if err != nil {
		return nil, err
	}
	ps := &mn.PortShaper{RateBps: f.RateBps, MTU: f.MTU, LimitPkts: BMv2QueueDepth(s),
		DSCPQueue: map[string]int{}}
	for d, q := range pol.DSCPQueue {
		ps.DSCPQueue[strconv.Itoa(int(d))] = int(q)
	}
	return ps, nil
}

// bmv2DefaultQueueDepth is BMv2's packet limit of a queue when none is set.
const bmv2DefaultQueueDepth = 64

// BMv2QueueDepth is the packet limit of each BMv2 queue in the run, and so
// of each of the port shaper's classes.
func BMv2QueueDepth(s *scenario.Scenario) int {
	if s.Switch.QueueDepthPkts > 0 {
		return s.Switch.QueueDepthPkts
	}
	return bmv2DefaultQueueDepth
}

// BMv2Pipeline is the absolute path of p4c's tor.json when the switches
// are BMv2, else "".
func BMv2Pipeline(sw scenario.Switch) (string, error) {
	if sw.Target != scenario.TargetBMv2 {
		return "", nil
	}
	p, err := filepath.Abs(BMv2JSONPath)
	if err != nil {
		return "", fmt.Errorf("bmv2 pipeline: %w", err)
	}
	return p, nil
}

// BufferArgs turns the scenario's byte limits and buffer into the
// embedded switch's flags (validation keeps them off BMv2).
func BufferArgs(sw scenario.Switch) []string {
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
	if pfc := sw.PFC; pfc != nil {
		for _, q := range pfc.Priorities {
			args = append(args, "--pfc-priorities", strconv.Itoa(q))
		}
		add("--pfc-xoff-pkts", int64(pfc.XoffPkts))
		add("--pfc-xon-pkts", int64(pfc.XonPkts))
		add("--pfc-headroom-pkts", int64(pfc.HeadroomPkts))
	}
	return args
}

// bmv2FrameTruesize bounds what one full frame waiting in a port shaper
// charges to the socket that sent it (the frame, the skb and its slab
// rounding).
const bmv2FrameTruesize = 4096

// raiseSendBuffers lets each packet socket of process pid hold bytes of
// frames not yet on the wire. BMv2 sends through one blocking packet
// socket per port, from one transmit thread for all ports; a frame waiting
// in the port's shaper stays charged to its socket, so once a shaper holds
// more than the socket's send buffer (net.core.wmem_default, about 90 full
// frames, a sysctl no namespace can change) the thread blocks and every
// port of the switch stalls behind the one. The buffers are set from
// outside the process: pidfd_getfd duplicates its sockets and
// SO_SNDBUFFORCE (root) sets the socket both descriptors share. It returns
// how many sockets it raised.
func raiseSendBuffers(pid, bytes int) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	raised := 0
	for _, e := range ents {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(target, "socket:") {
			continue
		}
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ok, err := raiseIfPacket(pidfd, n, bytes)
		if err != nil {
			return raised, fmt.Errorf("process %d fd %d: %w", pid, n, err)
		}
		if ok {
			raised++
		}
	}
	return raised, nil
}

// raiseIfPacket sets the send buffer of the process's descriptor n when it
// is a packet socket.
func raiseIfPacket(pidfd, n, bytes int) (bool, error) {
	fd, err := unix.PidfdGetfd(pidfd, n, 0)
	if errors.Is(err, unix.EBADF) {
		return false, nil // closed since it was listed
	}
	if err != nil {
		return false, fmt.Errorf("pidfd_getfd: %w", err)
	}
	defer unix.Close(fd)
	if dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || dom != unix.AF_PACKET {
		return false, nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, bytes); err != nil {
		return false, fmt.Errorf("SO_SNDBUFFORCE %d: %w", bytes, err)
	}
	return true, nil
}
