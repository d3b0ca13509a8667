package switches

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/internal/nsenter"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/testbed/topo"
)

// TestCutLinkBothWays cuts a real veth link the way a BMv2 port's link is
// cut (a switch-side interface with the port shaper in a namespace of its
// own) and checks with UDP both ways that nothing crosses while it is cut,
// that both interfaces stay up meanwhile, and that everything crosses again
// once it is mended.
func TestCutLinkBothWays(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes network namespaces and attaches an XDP program")
	}
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("needs iproute2's tc")
	}
	swNS, peerNS := testNetns(t, "hbcs"), testNetns(t, "hbcp")
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("ip", "link", "add", "hbcut0", "netns", swNS, "type", "veth", "peer", "name", "hbcut1", "netns", peerNS)
	run("ip", "-n", swNS, "addr", "add", "10.251.0.1/30", "dev", "hbcut0")
	run("ip", "-n", peerNS, "addr", "add", "10.251.0.2/30", "dev", "hbcut1")
	run("ip", "-n", swNS, "link", "set", "hbcut0", "up")
	run("ip", "-n", peerNS, "link", "set", "hbcut1", "up")
	// The port shaper's shape (mininet/homatb_mn.py): queue q's FIFO 2q:
	// under class 1:1q.
	tc := func(args ...string) { t.Helper(); run(append([]string{"ip", "netns", "exec", swNS, "tc"}, args...)...) }
	tc("qdisc", "add", "dev", "hbcut0", "root", "handle", "1:", "htb", "default", "10")
	tc("class", "add", "dev", "hbcut0", "parent", "1:", "classid", "1:1", "htb", "rate", "100mbit")
	for q := range 8 {
		tc("class", "add", "dev", "hbcut0", "parent", "1:1", "classid", fmt.Sprintf("1:1%d", q), "htb", "rate", "1mbit", "ceil", "100mbit", "prio", fmt.Sprint(7-q))
		tc("qdisc", "add", "dev", "hbcut0", "parent", fmt.Sprintf("1:1%d", q), "handle", fmt.Sprintf("2%d:", q), "pfifo", "limit", fmt.Sprint(40+q))
	}

	swConn := listenIn(t, "/var/run/netns/"+swNS, "10.251.0.1:9000")
	peerConn := listenIn(t, "/var/run/netns/"+peerNS, "10.251.0.2:9000")
	// crossed counts the datagrams of 20 sent from one end that the other
	// received (ARP first, so a cut's first packets are not an ARP's).
	crossed := func(from, to net.PacketConn) int {
		t.Helper()
		dst := to.LocalAddr()
		for range 20 {
			_, _ = from.WriteTo([]byte("homatb cut test"), dst) // a cut may refuse the send
		}
		n := 0
		buf := make([]byte, 64)
		for {
			_ = to.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, _, err := to.ReadFrom(buf); err != nil {
				return n
			}
			n++
		}
	}
	if a, b := crossed(peerConn, swConn), crossed(swConn, peerConn); a != 20 || b != 20 {
		t.Fatalf("before the cut: %d and %d of 20 crossed", a, b)
	}

	sw := topo.Switch{Name: "s1", Ports: []int{1}, Intfs: map[int]string{1: "hbcut0"}, NetNS: "/var/run/netns/" + swNS}
	b := NewBMv2Stats(sw, 100e6, fakeCounters{})
	ctx := context.Background()
	hour, now := "1h", "0s"
	if err := b.SetFault(ctx, switchstats.FaultSetting{Port: 1, DownFor: &hour}); err != nil {
		t.Fatal(err)
	}
	if a, b := crossed(peerConn, swConn), crossed(swConn, peerConn); a != 0 || b != 0 {
		t.Errorf("cut: %d of 20 reached the switch side, %d of 20 left it", a, b)
	}
	for ns, dev := range map[string]string{swNS: "hbcut0", peerNS: "hbcut1"} {
		out, _ := exec.Command("ip", "-n", ns, "-o", "link", "show", dev).CombinedOutput()
		if !strings.Contains(string(out), "state UP") {
			t.Errorf("cut: %s went down: %s", dev, out)
		}
	}
	if err := b.SetFault(ctx, switchstats.FaultSetting{Port: 1, DownFor: &now}); err != nil {
		t.Fatal(err)
	}
	if a, b := crossed(peerConn, swConn), crossed(swConn, peerConn); a != 20 || b != 20 {
		t.Errorf("mended: %d and %d of 20 crossed", a, b)
	}
	limits, err := b.fifoLimits(ctx, "hbcut0")
	if err != nil {
		t.Fatal(err)
	}
	for q, l := range limits {
		if l != 40+q {
			t.Errorf("mended: queue %d's FIFO limit %d, want %d", q, l, 40+q)
		}
	}
}

// testNetns makes a network namespace named prefix and the process id,
// deleted when the test ends.
func testNetns(t *testing.T, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s%d", prefix, os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return name
}

// listenIn opens a UDP socket on addr in the network namespace at path.
func listenIn(t *testing.T, path, addr string) net.PacketConn {
	t.Helper()
	var c net.PacketConn
	if err := nsenter.Do(path, func() error {
		var err error
		c, err = net.ListenPacket("udp4", addr)
		return err
	}); err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, path, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
