//go:build linux

package linkpause

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/internal/nsenter"
	"github.com/homatb/homatb/wire"
)

// testNetns makes a network namespace removed when the test ends.
func testNetns(t *testing.T, name string) string {
	t.Helper()
	_ = exec.Command("ip", "netns", "del", name).Run() // a leftover of an interrupted run
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return name
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// link is a veth pair between two namespaces: the host's end, shaped by
// the root qdisc given, and the switch's.
type link struct {
	host, sw       string // namespaces
	hostIf, swIf   string
	hostIP, swIP   string
	hostUDP, swUDP net.PacketConn
}

func newLink(t *testing.T, qdisc ...string) *link {
	t.Helper()
	l := &link{host: testNetns(t, "hblph"), sw: testNetns(t, "hblps"), hostIf: "hblp0", swIf: "hblp1",
		hostIP: "10.252.0.1", swIP: "10.252.0.2"}
	run(t, "ip", "link", "add", l.hostIf, "netns", l.host, "type", "veth", "peer", "name", l.swIf, "netns", l.sw)
	run(t, "ip", "-n", l.host, "addr", "add", l.hostIP+"/30", "dev", l.hostIf)
	run(t, "ip", "-n", l.sw, "addr", "add", l.swIP+"/30", "dev", l.swIf)
	run(t, "ip", "-n", l.host, "link", "set", l.hostIf, "up")
	run(t, "ip", "-n", l.sw, "link", "set", l.swIf, "up")
	run(t, append([]string{"ip", "netns", "exec", l.host, "tc", "qdisc", "add", "dev", l.hostIf, "root", "handle", "5:"}, qdisc...)...)
	l.hostUDP = listenIn(t, l.host, l.hostIP+":9000")
	l.swUDP = listenIn(t, l.sw, l.swIP+":9000")
	return l
}

// listenIn opens a UDP socket in namespace ns.
func listenIn(t *testing.T, ns, addr string) net.PacketConn {
	t.Helper()
	var c net.PacketConn
	if err := nsenter.Do("/var/run/netns/"+ns, func() (err error) {
		c, err = net.ListenPacket("udp4", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sendPause sends a PFC PAUSE frame from the switch's end: quanta for the
// priorities of vector.
func (l *link) sendPause(t *testing.T, vector uint8, q uint16) {
	t.Helper()
	if err := nsenter.Do("/var/run/netns/"+l.sw, func() error {
		ifi, err := net.InterfaceByName(l.swIf)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		var quanta [wire.PFCClasses]uint16
		for p := range wire.PFCClasses {
			if vector&(1<<p) != 0 {
				quanta[p] = q
			}
		}
		frame := make([]byte, wire.PFCFrameLen)
		wire.PutPFCFrame(frame, [6]byte(ifi.HardwareAddr), vector, &quanta)
		return unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6, Addr: [8]byte(append(wire.PFCDst[:], 0, 0))})
	}); err != nil {
		t.Fatalf("send a PAUSE frame: %v", err)
	}
}

// send sends n datagrams of 1,000 bytes from the host to the switch's end.
func (l *link) send(t *testing.T, n int) {
	t.Helper()
	dst := l.swUDP.LocalAddr()
	for range n {
		if _, err := l.hostUDP.WriteTo(make([]byte, 1000), dst); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
}

// received counts the datagrams that reach the switch's end until none
// has come for quiet.
func (l *link) received(quiet time.Duration) int {
	n := 0
	buf := make([]byte, 2000)
	for {
		_ = l.swUDP.SetReadDeadline(time.Now().Add(quiet))
		if _, _, err := l.swUDP.ReadFrom(buf); err != nil {
			return n
		}
		n++
	}
}

func startIn(t *testing.T, l *link, vector uint8, bps uint64) (*Hold, error) {
	var h *Hold
	err := nsenter.Do("/var/run/netns/"+l.host, func() (err error) {
		h, err = Start(l.hostIf, vector, bps, slog.New(slog.DiscardHandler))
		return err
	})
	if err == nil {
		t.Cleanup(func() { h.Close() })
	}
	return h, err
}

func waitFor(t *testing.T, h *Hold, key string, want uint64) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); h.Stats()[key] < want; {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d after 2 s, want %d", key, h.Stats()[key], want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHold pauses a real tbf-shaped veth link with PAUSE frames from its
// other end: what the host sends while paused waits (at most the one frame
// the bucket admits goes out), nothing is dropped, and it all crosses once
// the pause is lifted by a resume or runs out; a PAUSE for a priority not
// obeyed holds nothing; Close leaves the bucket as it found it.
func TestHold(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes network namespaces and a packet socket")
	}
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("needs iproute2's tc")
	}
	const bps = 10e6
	l := newLink(t, "tbf", "rate", "10mbit", "burst", "15000", "limit", "400000")
	before := qdiscOf(t, l)
	h, err := startIn(t, l, 1<<3, bps)
	if err != nil {
		t.Fatal(err)
	}
	l.send(t, 5)
	if n := l.received(200 * time.Millisecond); n != 5 {
		t.Fatalf("before any PAUSE: %d of 5 crossed", n)
	}

	// A PAUSE for priority 2 only: not obeyed.
	l.sendPause(t, 1<<2, 0xffff)
	l.send(t, 5)
	if n := l.received(200 * time.Millisecond); n != 5 {
		t.Errorf("PAUSE for another priority: %d of 5 crossed, want all", n)
	}

	// The longest PAUSE (3.4 s at 10 Mbit/s), lifted by a resume.
	l.sendPause(t, 1<<3|1<<2, 0xffff)
	waitFor(t, h, "pfc_pauses_received", 1)
	l.send(t, 40)
	if n := l.received(300 * time.Millisecond); n > 1 {
		t.Errorf("paused: %d of 40 crossed, want at most the one frame the bucket admits", n)
	}
	l.sendPause(t, 1<<3, 0)
	waitFor(t, h, "pfc_resumes_received", 1)
	if n := l.received(300 * time.Millisecond); n < 39 {
		t.Errorf("after the resume: %d of the 40 (or 39) crossed", n)
	}

	// A PAUSE of 2,000 quanta (102 ms) that runs out.
	l.sendPause(t, 1<<3, 2000)
	waitFor(t, h, "pfc_pauses_received", 2)
	start := time.Now()
	l.send(t, 20)
	got := l.received(400 * time.Millisecond)
	if got != 20 {
		t.Errorf("a pause that runs out: %d of 20 crossed", got)
	}
	if us := h.Stats()["pfc_paused_us"]; us < 90_000 {
		t.Errorf("paused %d µs in all, want at least the 102 ms pause", us)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("the 102 ms pause held the link for %v", el)
	}
	if e := h.Stats()["pfc_hold_errors"]; e != 0 {
		t.Errorf("%d qdisc changes failed", e)
	}

	// Closed while paused: the bucket is as it was.
	l.sendPause(t, 1<<3, 0xffff)
	waitFor(t, h, "pfc_pauses_received", 3)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if after := qdiscOf(t, l); after != before {
		t.Errorf("after Close the qdisc reads\n%s\nwant as before\n%s", after, before)
	}
	l.send(t, 5)
	if n := l.received(200 * time.Millisecond); n < 5 {
		t.Errorf("after Close: %d of 5 crossed", n)
	}
	if drops := dropsOf(t, l); drops != "0" {
		t.Errorf("the bucket dropped %s packets, want none", drops)
	}
}

// TestHoldNeedsTBF refuses a link whose root qdisc cannot be held.
func TestHoldNeedsTBF(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes network namespaces")
	}
	l := newLink(t, "htb", "default", "1")
	_, err := startIn(t, l, 1<<3, 10e6)
	if err == nil || !strings.Contains(err.Error(), "expected tbf") {
		t.Errorf("Start on an htb link: %v, want an error asking for tbf", err)
	}
}

// qdiscOf is tc's line for the host end's root qdisc, without statistics.
func qdiscOf(t *testing.T, l *link) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", l.host, "tc", "qdisc", "show", "dev", l.hostIf, "root").CombinedOutput()
	if err != nil {
		t.Fatalf("tc qdisc show: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// dropsOf is the number tc's statistics give for the host end's root
// qdisc's drops.
func dropsOf(t *testing.T, l *link) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", l.host, "tc", "-s", "qdisc", "show", "dev", l.hostIf, "root").CombinedOutput()
	if err != nil {
		t.Fatalf("tc -s qdisc show: %v: %s", err, out)
	}
	s := string(out)
	i := strings.Index(s, "dropped ")
	if i < 0 {
		return fmt.Sprintf("? (%q)", s)
	}
	f := strings.FieldsFunc(s[i+len("dropped "):], func(r rune) bool { return r == ',' || r == ' ' })
	return f[0]
}
