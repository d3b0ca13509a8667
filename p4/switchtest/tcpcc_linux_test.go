package switchtest

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/homatb/homatb/hostagent/tcpcc"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
	"golang.org/x/sys/unix"
)

// TCP_INFO's tcpi_options bit for a connection that negotiated ECN
// (include/uapi/linux/tcp.h; x/sys/unix lacks it).
const tcpiOptECN = 8

// queueRun is what one bulk TCP flow did to the bottleneck queue.
type queueRun struct {
	samples  []uint64 // queue 0 depth of the bottleneck port, sampled
	peak     uint64   // the switch's queue_peak register
	ecn      bool     // the sender negotiated ECN
	ce       uint32   // segments the sender saw delivered with CE (tcpi_delivered_ce)
	cwnd     uint32   // the sender's cwnd at the end
	rttUs    uint32   // its smoothed RTT at the end
	received int64    // bytes the receiver read
}

// bulkThroughSwitch runs one TCP flow from host A to host B for dur with
// congestion control cc on both ends, through a switch whose port to B is
// shaped to rate with depth packets of queue and CE marking above ecn
// packets (0: off), and samples the depth of B's queue meanwhile.
func bulkThroughSwitch(t *testing.T, cc string, rate uint64, depth, ecn int, dur time.Duration) queueRun {
	t.Helper()
	hs := newHosts(t)
	r := newRack(t, hs, func(c *dataplane.Config) {
		c.Unshaped = false
		c.PortRateBps = map[uint16]uint64{hs[0].port: 1e9, hs[1].port: rate}
		c.QueueDepthPkts = depth
	})
	r.program(t)
	if ecn > 0 {
		r.setECNThreshold(t, hs[1].port, uint32(ecn))
	}
	setCC := func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, tcpcc.KernelName(cc))
		}); err != nil {
			return err
		}
		return serr
	}

	// The listener gets the control before listen(): the kernel decides
	// whether to accept ECN from the SYN by the listener's control.
	var ln net.Listener
	if err := ns.WithNetNSPath("/var/run/netns/"+hs[1].netns, func(ns.NetNS) error {
		var err error
		ln, err = (&net.ListenConfig{Control: setCC}).Listen(context.Background(), "tcp4", net.JoinHostPort(hs[1].ip.String(), "7500"))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", hs[1].netns, err)
	}
	defer ln.Close()
	var received int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		received, _ = io.Copy(io.Discard, c)
	}()
	var conn net.Conn
	if err := ns.WithNetNSPath("/var/run/netns/"+hs[0].netns, func(ns.NetNS) error {
		var err error
		conn, err = (&net.Dialer{Control: setCC, Timeout: 5 * time.Second}).Dial("tcp4", ln.Addr().String())
		return err
	}); err != nil {
		t.Fatalf("dial from %s: %v", hs[0].netns, err)
	}

	// The sender writes in its own goroutine; this one samples the queue
	// (reading registers may fail the test, which only this goroutine can).
	var run queueRun
	deadline := time.Now().Add(dur)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		buf := make([]byte, 64<<10)
		conn.SetWriteDeadline(deadline)
		for {
			if _, err := conn.Write(buf); err != nil {
				return // the deadline
			}
		}
	}()
	warm := time.Now().Add(dur / 4) // past slow start
	for now := range time.Tick(10 * time.Millisecond) {
		if now.After(deadline) {
			break
		}
		if now.After(warm) {
			run.samples = append(run.samples, r.register(t, p4.RegisterQueueDepth, hs[1].port, 0))
		}
	}
	<-wrote
	rc, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			run.ecn = info.Options&tcpiOptECN != 0
			run.ce, run.cwnd, run.rttUs = info.Delivered_ce, info.Snd_cwnd, info.Rtt
		}
	})
	conn.Close()
	wg.Wait()
	run.peak = r.register(t, p4.RegisterQueuePeak, hs[1].port, 0)
	run.received = received
	return run
}

// The bottleneck of the queue tests: a 50 Mbit/s port with a 256-packet
// queue, and each flow's length.
const (
	rate  = 50e6
	depth = 256
	dur   = 4 * time.Second
)

// registerOrSkip registers the BPF congestion control for the test, or
// skips it without root, in -short mode, or on a kernel that refuses.
func registerOrSkip(t *testing.T, name string) {
	t.Helper()
	if testing.Short() {
		t.Skip("seconds of bulk TCP")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: BPF congestion controls, namespaces, veths")
	}
	reg, err := tcpcc.Register(name)
	if errors.Is(err, os.ErrExist) {
		return // a homatb run has it registered: use that
	}
	if err != nil {
		t.Skipf("cannot register the BPF %s on this kernel: %v", name, err)
	}
	t.Cleanup(func() {
		if err := reg.Close(); err != nil {
			t.Error(err)
		}
	})
}

// TestDCTCPKeepsQueueNearThreshold sends one bulk TCP flow through a
// 50 Mbit/s switch port with a 256-packet queue that marks CE above 20
// packets: homatb's BPF DCTCP keeps the queue near the threshold, while
// cubic (no ECN) fills the buffer until it drops.
func TestDCTCPKeepsQueueNearThreshold(t *testing.T) {
	registerOrSkip(t, "dctcp")
	const threshold = 20
	runs := map[string]queueRun{}
	for _, cc := range []string{"dctcp", "cubic"} {
		t.Run(cc, func(t *testing.T) {
			q := bulkThroughSwitch(t, cc, rate, depth, threshold, dur)
			slices.Sort(q.samples)
			if len(q.samples) == 0 {
				t.Fatal("no queue samples")
			}
			med, p95 := q.samples[len(q.samples)/2], q.samples[len(q.samples)*95/100]
			t.Logf("%s: queue median %d, p95 %d, peak %d packets; ECN %v, %d CE-delivered, cwnd %d, srtt %d µs; %.1f Mbit/s",
				cc, med, p95, q.peak, q.ecn, q.ce, q.cwnd, q.rttUs, float64(q.received)*8/dur.Seconds()/1e6)
			runs[cc] = q
			if float64(q.received)*8/dur.Seconds() < 0.5*rate {
				t.Errorf("%s moved %.1f Mbit/s, less than half the %v Mbit/s port", cc, float64(q.received)*8/dur.Seconds()/1e6, rate/1e6)
			}
		})
	}
	d, c := runs["dctcp"], runs["cubic"]
	if len(d.samples) == 0 || len(c.samples) == 0 {
		return
	}
	if !d.ecn || d.ce == 0 {
		t.Errorf("dctcp: ECN negotiated %v, %d segments delivered with CE; want ECN and marks", d.ecn, d.ce)
	}
	if c.ecn {
		t.Error("cubic negotiated ECN (net.ipv4.tcp_ecn=1?): the comparison needs it without")
	}
	if p95 := d.samples[len(d.samples)*95/100]; p95 > 3*threshold {
		t.Errorf("dctcp: queue p95 %d packets, want at most %d (3x the threshold)", p95, 3*threshold)
	}
	if med := c.samples[len(c.samples)/2]; med < depth/2 {
		t.Errorf("cubic: queue median %d packets, want at least %d (half the buffer)", med, depth/2)
	}
	if c.peak < depth*3/4 {
		t.Errorf("cubic: queue peak %d packets, want near the %d-packet buffer", c.peak, depth)
	}
}

// TestNVKeepsQueueShort sends one bulk TCP flow with homatb's BPF TCP-NV
// through the same 50 Mbit/s port and 256-packet queue, without ECN: NV
// infers the queue from RTT and rate and keeps it near its 10-packet pad,
// far below the buffer cubic fills (TestDCTCPKeepsQueueNearThreshold).
func TestNVKeepsQueueShort(t *testing.T) {
	registerOrSkip(t, "nv")
	q := bulkThroughSwitch(t, "nv", rate, depth, 0, dur)
	if len(q.samples) == 0 {
		t.Fatal("no queue samples")
	}
	slices.Sort(q.samples)
	med, p95 := q.samples[len(q.samples)/2], q.samples[len(q.samples)*95/100]
	mbps := float64(q.received) * 8 / dur.Seconds() / 1e6
	t.Logf("nv: queue median %d, p95 %d, peak %d packets; ECN %v, cwnd %d, srtt %d µs; %.1f Mbit/s", med, p95, q.peak, q.ecn, q.cwnd, q.rttUs, mbps)
	if q.ecn {
		t.Error("nv negotiated ECN: the test is of delay alone")
	}
	if p95 > 40 {
		t.Errorf("nv: queue p95 %d packets, want at most 40 (NV's pad is 10)", p95)
	}
	if mbps < 0.5*rate/1e6 {
		t.Errorf("nv moved %.1f Mbit/s, less than half the %v Mbit/s port", mbps, rate/1e6)
	}
}
