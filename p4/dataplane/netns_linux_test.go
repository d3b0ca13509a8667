package dataplane

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"
)

// nsHost is a network namespace joined to the switch by a veth pair.
type nsHost struct {
	ns       string // namespace name
	ifSwitch string // switch-side veth, in the root namespace
	ip       net.IP
	mac      string
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// setupHosts creates two namespaces dpA<pid>, dpB<pid> with 10.199.<pid%250>.1
// and .2 on eth0, veth peers dpa<pid>/dpb<pid> in the root namespace, static
// neighbours (the test pipeline answers no ARP), and offloads off on both
// ends so every frame is one wire packet. Cleanup removes all of it.
func setupHosts(t *testing.T) [2]nsHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and AF_PACKET")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2")
	}
	pid := os.Getpid()
	net3 := pid % 250
	var hosts [2]nsHost
	for i, side := range []string{"a", "b"} {
		h := nsHost{
			ns:       fmt.Sprintf("dp%s%d", strings.ToUpper(side), pid),
			ifSwitch: fmt.Sprintf("dp%s%d", side, pid),
			ip:       net.IPv4(10, 199, byte(net3), byte(i+1)).To4(),
			mac:      fmt.Sprintf("02:dd:%02x:%02x:00:%02x", pid>>8&0xff, pid&0xff, i+1),
		}
		run(t, "ip", "netns", "add", h.ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", h.ns).Run() })
		peer := h.ifSwitch + "h"
		run(t, "ip", "link", "add", h.ifSwitch, "type", "veth", "peer", "name", peer)
		t.Cleanup(func() { exec.Command("ip", "link", "del", h.ifSwitch).Run() })
		run(t, "ip", "link", "set", peer, "netns", h.ns)
		run(t, "ip", "-n", h.ns, "link", "set", peer, "name", "eth0")
		run(t, "ip", "-n", h.ns, "link", "set", "eth0", "address", h.mac)
		run(t, "ip", "-n", h.ns, "addr", "add", h.ip.String()+"/24", "dev", "eth0")
		run(t, "ip", "-n", h.ns, "link", "set", "eth0", "up")
		run(t, "ip", "-n", h.ns, "link", "set", "lo", "up")
		run(t, "ip", "link", "set", h.ifSwitch, "up")
		if _, err := exec.LookPath("ethtool"); err == nil {
			run(t, "ip", "netns", "exec", h.ns, "ethtool", "-K", "eth0", "tx", "off", "tso", "off", "gso", "off", "gro", "off")
		}
		hosts[i] = h
	}
	for i, h := range hosts {
		o := hosts[1-i]
		run(t, "ip", "-n", h.ns, "neigh", "add", o.ip.String(), "lladdr", o.mac, "dev", "eth0")
	}
	return hosts
}

// udpIn opens a UDP socket bound to addr:port inside namespace name.
func udpIn(t *testing.T, name string, ip net.IP, port int) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := ns.WithNetNSPath("/var/run/netns/"+name, func(ns.NetNS) error {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: ip, Port: port})
		return err
	})
	if err != nil {
		t.Fatalf("udp socket in %s: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startSwitch runs the dataplane on the hosts' veths with the test pipeline.
func startSwitch(t *testing.T, hosts [2]nsHost, mod func(*Config)) *Dataplane {
	t.Helper()
	cfg := Config{Ports: map[uint16]string{1: hosts[0].ifSwitch, 2: hosts[1].ifSwitch}, Unshaped: true}
	if mod != nil {
		mod(&cfg)
	}
	pl := &testPipeline{}
	pl.route[1], pl.route[2] = 1, 2
	d, err := New(cfg, pl)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return d
}

func TestNamespaceForwardUDP(t *testing.T) {
	for _, spin := range []time.Duration{0, 200 * time.Microsecond} {
		t.Run(fmt.Sprintf("spin=%v", spin), func(t *testing.T) { testForwardUDP(t, spin) })
	}
}

// testForwardUDP bounces datagrams between the hosts; with spin the ports
// are received by the single polling goroutine.
func testForwardUDP(t *testing.T, spin time.Duration) {
	hosts := setupHosts(t)
	d := startSwitch(t, hosts, func(c *Config) { c.Spin = spin })
	a := udpIn(t, hosts[0].ns, hosts[0].ip, 7001)
	b := udpIn(t, hosts[1].ns, hosts[1].ip, 7002)
	const n = 100
	buf := make([]byte, 2048)
	for i := range n {
		msg := fmt.Appendf(nil, "ping %d", i)
		if _, err := a.WriteToUDP(msg, &net.UDPAddr{IP: hosts[1].ip, Port: 7002}); err != nil {
			t.Fatal(err)
		}
		b.SetReadDeadline(time.Now().Add(2 * time.Second))
		k, from, err := b.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("datagram %d not forwarded a->b: %v", i, err)
		}
		if string(buf[:k]) != string(msg) {
			t.Fatalf("got %q, want %q", buf[:k], msg)
		}
		if _, err := b.WriteToUDP(buf[:k], from); err != nil {
			t.Fatal(err)
		}
		a.SetReadDeadline(time.Now().Add(2 * time.Second))
		if k, _, err = a.ReadFromUDP(buf); err != nil || string(buf[:k]) != string(msg) {
			t.Fatalf("reply %d not forwarded b->a: %v", i, err)
		}
	}
	// A datagram can reach its host before the switch counted it sent, on
	// either port.
	s := d.Stats()
	behind := func() bool {
		for _, p := range s.Ports {
			if p.TxPkts < n {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(time.Second); behind() && time.Now().Before(deadline); s = d.Stats() {
		time.Sleep(time.Millisecond)
	}
	// Each side forwarded at least the n datagrams (IPv6 router
	// solicitations and the like may add a few, dropped by the pipeline).
	for _, p := range s.Ports {
		if p.TxPkts < n || p.RxPkts < n || p.OversizeDrops != 0 || p.TxErrors != 0 {
			t.Errorf("port %d: rx %d tx %d oversize %d tx errors %d", p.Port, p.RxPkts, p.TxPkts, p.OversizeDrops, p.TxErrors)
		}
	}
}

// probe payload: 8-byte sequence, 8-byte send time (Unix ns).
func sendProbe(c *net.UDPConn, to *net.UDPAddr, buf []byte, seq uint64) error {
	binary.BigEndian.PutUint64(buf[0:8], seq)
	binary.BigEndian.PutUint64(buf[8:16], uint64(time.Now().UnixNano()))
	_, err := c.WriteToUDP(buf, to)
	return err
}

// TestNamespacePriorityOverload floods a shaped egress port with queue-0
// traffic at twice its rate while a queue-7 probe crosses it: the probe's
// one-way delay stays within a few frame times, queue 0's grows to its
// buffer limit, and what the receiver lost is what the switch counted.
func TestNamespacePriorityOverload(t *testing.T) {
	hosts := setupHosts(t)
	const rate = 20e6 // 1442 B frames: 587 µs each
	const depth = 32
	d := startSwitch(t, hosts, func(c *Config) {
		c.Unshaped = false
		c.PortRateBps = map[uint16]uint64{1: 1e9, 2: rate}
		c.QueueDepthPkts = depth
	})
	// Priorities by TOS, as Homa marks them: 0 and 7 << 5.
	bulk := udpIn(t, hosts[0].ns, hosts[0].ip, 7100)
	probe := udpIn(t, hosts[0].ns, hosts[0].ip, 7101)
	if err := setTOS(bulk, 0); err != nil {
		t.Fatal(err)
	}
	if err := setTOS(probe, 7<<5); err != nil {
		t.Fatal(err)
	}
	sink := udpIn(t, hosts[1].ns, hosts[1].ip, 7200)
	sink.SetReadBuffer(8 << 20)
	to := &net.UDPAddr{IP: hosts[1].ip, Port: 7200}

	type rx struct {
		hi      bool
		delayUs float64
	}
	got := make(chan rx, 1<<16)
	go func() {
		buf := make([]byte, 2048)
		for {
			sink.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			k, from, err := sink.ReadFromUDP(buf)
			if err != nil {
				close(got)
				return
			}
			if k < 16 {
				continue
			}
			sent := int64(binary.BigEndian.Uint64(buf[8:16]))
			got <- rx{hi: from.Port == 7101, delayUs: float64(time.Now().UnixNano()-sent) / 1e3}
		}
	}()

	frame := 1400 // UDP payload: 1442 B Ethernet frames
	frameUs := serializationNs(frame+42, rate) / 1e3
	bulkBuf := make([]byte, frame)
	probeBuf := make([]byte, 64)
	// 800 ms at twice the port's rate, in bursts every 2 ms; a probe
	// every 10 ms.
	var bulkSent, probesSent uint64
	start := time.Now()
	for tick := 0; tick < 400; tick++ {
		for range int(2 * rate / 8 / float64(frame+66) * 0.002) {
			if err := sendProbe(bulk, to, bulkBuf, bulkSent); err != nil {
				t.Fatal(err)
			}
			bulkSent++
		}
		if tick%5 == 0 && tick > 50 { // once queue 0 is full
			if err := sendProbe(probe, to, probeBuf, probesSent); err != nil {
				t.Fatal(err)
			}
			probesSent++
		}
		time.Sleep(time.Until(start.Add(time.Duration(tick+1) * 2 * time.Millisecond)))
	}
	var hi, lo []float64
	var bulkGot uint64
	for r := range got {
		if r.hi {
			hi = append(hi, r.delayUs)
		} else {
			lo = append(lo, r.delayUs)
			bulkGot++
		}
	}
	if len(hi) != int(probesSent) {
		t.Errorf("%d of %d queue-7 probes arrived", len(hi), probesSent)
	}
	slices.Sort(hi)
	slices.Sort(lo)
	p50 := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		return v[len(v)/2]
	}
	t.Logf("frame time %.0f µs; queue 7 one-way delay p50 %.0f µs max %.0f µs; queue 0 p50 %.0f µs; bulk %d sent %d received",
		frameUs, p50(hi), hi[len(hi)-1], p50(lo), bulkSent, bulkGot)
	// The probe waits at most for the frame on the wire, plus the
	// machine's wake-up latency; allow 4 frame times.
	if p50(hi) > 4*frameUs {
		t.Errorf("queue 7 p50 delay %.0f µs, more than 4 frame times (%.0f µs)", p50(hi), 4*frameUs)
	}
	// Queue 0 stays full: its delay is near depth frame times.
	if p50(lo) < 0.7*depth*frameUs {
		t.Errorf("queue 0 p50 delay %.0f µs, want near %d frame times (%.0f µs)", p50(lo), depth, depth*frameUs)
	}
	s := d.Stats()
	var tail uint64
	for _, q := range s.Ports[1].Queues {
		tail += q.DropPkts
	}
	t.Logf("tail %d kernel %d tx errors %d, rx %d tx %d, flood took %v", tail, s.Ports[0].KernelDrops, s.Ports[1].TxErrors, s.Ports[0].RxPkts, s.Ports[1].TxPkts, time.Since(start))
	lost := bulkSent - bulkGot
	if switchLost := tail + s.Ports[0].KernelDrops + s.Ports[1].TxErrors; switchLost != lost {
		t.Errorf("hosts lost %d bulk datagrams, the switch counted %d (tail %d, kernel %d, tx %d)",
			lost, switchLost, tail, s.Ports[0].KernelDrops, s.Ports[1].TxErrors)
	}
	if s.Ports[1].Queues[0].PeakPkts != depth || tail == 0 {
		t.Errorf("queue 0 peak %d drops %d, want a full queue (%d) and drops", s.Ports[1].Queues[0].PeakPkts, tail, depth)
	}
}

func setTOS(c *net.UDPConn, tos int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = setsockoptTOS(int(fd), tos) }); err != nil {
		return err
	}
	return serr
}

func setsockoptTOS(fd, tos int) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, tos)
}
