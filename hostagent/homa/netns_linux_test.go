//go:build linux

package homa_test

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/homatb/homatb/internal/nsenter"
)

// vethPair is two network namespaces joined by a veth link, each end with
// one address; names carry the package and PID so concurrent test runs of
// other packages cannot clash.
type vethPair struct {
	ns   [2]string
	addr [2]netip.Addr
	dev  [2]string
}

func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newVethPair creates the namespaces (removed in t.Cleanup). With shape >
// 0 both ends get an htb qdisc limiting egress to shape bit/s, the host's
// "NIC". Offloads are turned off so every frame is one packet.
func newVethPair(t testing.TB, tag string, shape uint64) *vethPair {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and raw sockets")
	}
	pid := os.Getpid()
	v := &vethPair{
		ns:   [2]string{fmt.Sprintf("homa-%s-%d-a", tag, pid), fmt.Sprintf("homa-%s-%d-b", tag, pid)},
		addr: [2]netip.Addr{netip.MustParseAddr("10.146.0.1"), netip.MustParseAddr("10.146.0.2")},
		dev:  [2]string{fmt.Sprintf("hm%d%sa", pid%100000, tag[:1]), fmt.Sprintf("hm%d%sb", pid%100000, tag[:1])},
	}
	for _, ns := range v.ns {
		ipCmd(t, "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	ipCmd(t, "link", "add", v.dev[0], "netns", v.ns[0], "type", "veth", "peer", "name", v.dev[1], "netns", v.ns[1])
	for i := range 2 {
		ipCmd(t, "-n", v.ns[i], "addr", "add", v.addr[i].String()+"/24", "dev", v.dev[i])
		ipCmd(t, "-n", v.ns[i], "link", "set", v.dev[i], "up")
		ipCmd(t, "-n", v.ns[i], "link", "set", "lo", "up")
		// Offloads off: best effort, ethtool may be missing.
		_ = exec.Command("ip", "netns", "exec", v.ns[i], "ethtool", "-K", v.dev[i], "tso", "off", "gso", "off", "gro", "off").Run()
		if shape > 0 {
			rate := fmt.Sprintf("%dbit", shape)
			ipCmd(t, "-n", v.ns[i], "link", "set", v.dev[i], "txqueuelen", "1000")
			if out, err := exec.Command("tc", "-n", v.ns[i], "qdisc", "add", "dev", v.dev[i], "root", "handle", "1:", "htb", "default", "1").CombinedOutput(); err != nil {
				t.Fatalf("tc htb: %v: %s", err, out)
			}
			if out, err := exec.Command("tc", "-n", v.ns[i], "class", "add", "dev", v.dev[i], "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil", rate, "burst", "15k", "cburst", "15k").CombinedOutput(); err != nil {
				t.Fatalf("tc class: %v: %s", err, out)
			}
		}
	}
	return v
}

// inNetns runs fn on an OS thread in namespace ns. Sockets created by
// fn stay in ns.
func inNetns(ns string, fn func() error) error {
	return nsenter.Do("/var/run/netns/"+ns, fn)
}
