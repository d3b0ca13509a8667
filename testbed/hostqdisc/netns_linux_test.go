//go:build linux

package hostqdisc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/internal/nsenter"
)

// pair is two namespaces joined by a veth pair, a's end shaped as Mininet
// shapes a host's link (TCIntf: an htb root, default class 1, that class
// at the link rate with a 15 kB burst).
type pair struct {
	a, b string // namespace names, also the veth ends' names
	aIP  string
	bIP  string
}

func nsPath(ns string) string { return "/var/run/netns/" + ns }

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func newPair(t *testing.T) pair {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces and qdiscs")
	}
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("needs iproute2's ip and tc")
	}
	pid := os.Getpid()
	p := pair{a: fmt.Sprintf("hq%da", pid), b: fmt.Sprintf("hq%db", pid), aIP: "10.78.0.1", bIP: "10.78.0.2"}
	for _, ns := range []string{p.a, p.b} {
		sh(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	sh(t, "ip", "link", "add", p.a, "netns", p.a, "type", "veth", "peer", "name", p.b, "netns", p.b)
	for ns, ip := range map[string]string{p.a: p.aIP, p.b: p.bIP} {
		sh(t, "ip", "-n", ns, "addr", "add", ip+"/24", "dev", ns)
		sh(t, "ip", "-n", ns, "link", "set", ns, "up")
	}
	sh(t, "ip", "netns", "exec", p.a, "tc", "qdisc", "add", "dev", p.a, "root", "handle", "5:0", "htb", "default", "1")
	sh(t, "ip", "netns", "exec", p.a, "tc", "class", "add", "dev", p.a, "parent", "5:0", "classid", "5:1", "htb", "rate", "100mbit", "burst", "15k")
	return p
}

// apply runs Apply in a's namespace.
func (p pair) apply(t *testing.T, plan *Plan) {
	t.Helper()
	if err := nsenter.Do(nsPath(p.a), func() error { return Apply(p.a, plan) }); err != nil {
		t.Fatal(err)
	}
}

func (p pair) read() (Stats, error) {
	var st Stats
	err := nsenter.Do(nsPath(p.a), func() error {
		var err error
		st, err = Read(p.a)
		return err
	})
	return st, err
}

// sendHoma sends n raw IP packets of protocol 146 with size bytes of
// payload from a to b, as the Homa engine's socket does.
func (p pair) sendHoma(t *testing.T, n, size int) {
	t.Helper()
	fd := rawSocket(t, p.a)
	defer unix.Close(fd)
	to := &unix.SockaddrInet4{Addr: [4]byte(net.ParseIP(p.bIP).To4())}
	buf := make([]byte, size)
	for range n {
		if err := unix.Sendto(fd, buf, 0, to); err != nil {
			t.Fatalf("send a Homa packet: %v", err)
		}
	}
}

// rawSocket is a raw IP socket of Homa's protocol in namespace ns.
func rawSocket(t *testing.T, ns string) int {
	t.Helper()
	var fd int
	if err := nsenter.Do(nsPath(ns), func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, HomaProtocol)
		return err
	}); err != nil {
		t.Fatalf("raw socket: %v", err)
	}
	return fd
}

// dialTCP connects from a to a listener in b, whose one connection serve
// reads (and which then closes it).
func (p pair) dialTCP(serve func(net.Conn)) (net.Conn, error) {
	var ln net.Listener
	if err := nsenter.Do(nsPath(p.b), func() error {
		var err error
		ln, err = net.Listen("tcp4", p.bIP+":0")
		return err
	}); err != nil {
		return nil, err
	}
	go func() {
		defer ln.Close()
		if c, err := ln.Accept(); err == nil {
			serve(c)
			c.Close()
		}
	}()
	var c net.Conn
	err := nsenter.Do(nsPath(p.a), func() error {
		var err error
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	})
	if err != nil {
		ln.Close()
	}
	return c, err
}

// sendTCP writes n bytes from a to b over one TCP connection and waits
// for b to have read them all.
func (p pair) sendTCP(t *testing.T, n int) {
	t.Helper()
	got := make(chan int64, 1)
	c, err := p.dialTCP(func(c net.Conn) {
		k, _ := io.Copy(io.Discard, c)
		got <- k
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case k := <-got:
		if k != int64(n) {
			t.Fatalf("b read %d bytes of %d", k, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("TCP transfer did not end in 10 s")
	}
}

// TestClassifierPlacesPackets divides a Mininet-shaped link, sends Homa
// packets (IP protocol 146) and a TCP stream across it, and reads the
// classes' counters in the kernel: every Homa packet in Homa's class,
// the TCP stream's bytes in TCP's. Taking the division away leaves the
// link's one class, and the link still carries TCP.
func TestClassifierPlacesPackets(t *testing.T) {
	p := newPair(t)
	plan, err := NewPlan(100_000_000, 1500)
	if err != nil {
		t.Fatal(err)
	}
	p.apply(t, &plan)
	p.apply(t, &plan) // a second time changes nothing
	before, err := p.read()
	if err != nil {
		t.Fatal(err)
	}
	const homaPackets, homaSize, tcpBytes = 40, 600, 300_000
	p.sendHoma(t, homaPackets, homaSize)
	p.sendTCP(t, tcpBytes)
	after, err := p.read()
	if err != nil {
		t.Fatal(err)
	}
	d := after.Map(before)
	t.Logf("class counters: %v", d)
	// Homa's frames: payload, 20 bytes of IP and 14 of Ethernet.
	if d["qdisc_homa_packets"] != homaPackets || d["qdisc_homa_bytes"] != homaPackets*(homaSize+34) {
		t.Errorf("Homa's class took %d packets, %d bytes; want exactly the %d Homa packets, %d bytes",
			d["qdisc_homa_packets"], d["qdisc_homa_bytes"], homaPackets, homaPackets*(homaSize+34))
	}
	if d["qdisc_tcp_bytes"] < tcpBytes {
		t.Errorf("TCP's class took %d bytes, fewer than the stream's %d", d["qdisc_tcp_bytes"], tcpBytes)
	}
	p.apply(t, nil)
	p.apply(t, nil)
	if _, err := p.read(); err == nil || !strings.Contains(err.Error(), "not divided") {
		t.Errorf("after taking the division away: Read gave %v, want not divided", err)
	}
	out, err := exec.Command("ip", "netns", "exec", p.a, "tc", "class", "show", "dev", p.a).CombinedOutput()
	if err != nil || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 || !strings.HasPrefix(string(out), "class htb 5:1 root ") {
		t.Errorf("classes left: %v %q, want Mininet's one class 5:1", err, out)
	}
	p.sendTCP(t, 100_000)
}

// TestProbe: this kernel has what the division needs, or the probe says
// what it lacks.
func TestProbe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a namespace and qdiscs")
	}
	if err := Probe(); err != nil {
		t.Fatalf("probe: %v", err)
	}
}

// homaDelays sends n Homa packets from a to b every gap while TCP streams
// from a to b over conns connections, and returns each packet's one-way
// delay (both ends read the one clock of this machine).
func (p pair) homaDelays(t *testing.T, n, conns int, gap time.Duration) []time.Duration {
	t.Helper()
	rfd, sfd := rawSocket(t, p.b), rawSocket(t, p.a)
	defer unix.Close(rfd)
	defer unix.Close(sfd)
	stop := make(chan struct{})
	done := make(chan struct{})
	for range conns {
		go func() {
			defer func() { done <- struct{}{} }()
			p.streamTCP(t, stop)
		}()
	}
	time.Sleep(300 * time.Millisecond) // let the streams fill what they fill
	got := make(chan []time.Duration, 1)
	go func() {
		var ds []time.Duration
		buf := make([]byte, 2048)
		tv := unix.NsecToTimeval(int64(2 * time.Second))
		unix.SetsockoptTimeval(rfd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		for len(ds) < n {
			k, _, err := unix.Recvfrom(rfd, buf, 0)
			if errors.Is(err, unix.EINTR) {
				continue // the Go runtime's preemption signal, not the timeout
			}
			if err != nil {
				break
			}
			// The IP header (20 bytes), then the send time.
			if k >= 28 {
				ds = append(ds, time.Duration(time.Now().UnixNano()-int64(binary.LittleEndian.Uint64(buf[20:28]))))
			}
		}
		got <- ds
	}()
	to := &unix.SockaddrInet4{Addr: [4]byte(net.ParseIP(p.bIP).To4())}
	msg := make([]byte, 100)
	for range n {
		binary.LittleEndian.PutUint64(msg, uint64(time.Now().UnixNano()))
		if err := unix.Sendto(sfd, msg, 0, to); err != nil {
			t.Fatal(err)
		}
		time.Sleep(gap)
	}
	ds := <-got
	close(stop)
	for range conns {
		<-done
	}
	return ds
}

// streamTCP writes from a to b until stop.
func (p pair) streamTCP(t *testing.T, stop chan struct{}) {
	c, err := p.dialTCP(func(c net.Conn) { io.Copy(io.Discard, c) })
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		select {
		case <-stop:
			return
		default:
		}
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		c.Write(buf)
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// TestHomaServedFirst streams TCP across a 10 Mbit/s link and sends Homa
// packets beside it, with the link whole (host_qdisc none: one FIFO) and
// divided: divided, Homa's packets pass TCP's queue, so their median
// one-way delay is well under half the undivided one's.
func TestHomaServedFirst(t *testing.T) {
	p := newPair(t)
	sh(t, "ip", "netns", "exec", p.a, "tc", "class", "change", "dev", p.a, "parent", "5:0", "classid", "5:1", "htb", "rate", "10mbit", "burst", "15k")
	const n, conns = 40, 4
	whole := median(p.homaDelays(t, n, conns, 10*time.Millisecond))
	plan, err := NewPlan(10_000_000, 1500)
	if err != nil {
		t.Fatal(err)
	}
	p.apply(t, &plan)
	ds := p.homaDelays(t, n, conns, 10*time.Millisecond)
	if len(ds) < n/2 {
		t.Fatalf("%d of %d Homa packets arrived across the divided link", len(ds), n)
	}
	divided := median(ds)
	t.Logf("Homa packets' median one-way delay beside %d TCP streams at 10 Mbit/s: %v on the whole link, %v divided", conns, whole, divided)
	if divided > whole/2 {
		t.Errorf("divided, Homa's packets took %v (median), the whole link's FIFO %v: Homa's class was not served first", divided, whole)
	}
}
