package mininet

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/net/ipv4"
)

// run runs a command and fails the test on an error.
func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// shaperCommands asks homatb_mn.py for the BMv2 port shaper of dev.
func shaperCommands(t *testing.T, dev string, rateBps int, limit int) [][]string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	dscp := map[string]int{}
	for q := range 8 {
		dscp[fmt.Sprint(q<<3)] = q
	}
	spec, err := json.Marshal(map[string]any{"rate_bps": rateBps, "mtu": 1500, "limit_pkts": limit, "dscp_queue": dscp})
	if err != nil {
		t.Fatal(err)
	}
	code := fmt.Sprintf("import json, sys; sys.path.insert(0, %q); from homatb_mn import shaper_commands; print(json.dumps(shaper_commands(%q, json.loads(sys.argv[1]))))", dir, dev)
	out, err := exec.Command("/usr/bin/python3", "-c", code, string(spec)).Output()
	if err != nil {
		t.Skipf("cannot load homatb_mn.py with Debian's python3 (apt-get install mininet): %v", err)
	}
	var cmds [][]string
	if err := json.Unmarshal(out, &cmds); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// udpIn opens a UDP socket bound to addr inside the namespace at path.
func udpIn(t *testing.T, path string, addr *net.UDPAddr, tos int) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := ns.WithNetNSPath(path, func(ns.NetNS) error {
		var err error
		c, err = net.ListenUDP("udp4", addr)
		return err
	}); err != nil {
		t.Fatalf("udp socket in %s: %v", path, err)
	}
	t.Cleanup(func() { c.Close() })
	if err := ipv4.NewConn(c).SetTOS(tos); err != nil {
		t.Fatalf("TOS %#x: %v", tos, err)
	}
	return c
}

// TestBMv2PortShaper checks the kernel shaper a BMv2 port gets
// (shaper_commands): offered two 8 Mbit/s UDP flows in tor.p4 queues 1 and
// 7 on a 10 Mbit/s port, which BMv2's per-queue rate limits would both let
// through, the port carries at most 1.05 x its rate, and queue 7 keeps its
// whole rate while queue 1 gets what is left (strict priority).
func TestBMv2PortShaper(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, veths and qdiscs")
	}
	const (
		rate    = 10_000_000
		payload = 1000
		wire    = payload + 8 + 20 + 14 // what the shaper counts of a frame
		pps     = 1000                  // 8 Mbit/s of payload per flow
		measure = 3 * time.Second
	)
	cmds := shaperCommands(t, "eth0", rate, 64)
	pid := os.Getpid()
	nsA, nsB := fmt.Sprintf("shpA%d", pid), fmt.Sprintf("shpB%d", pid)
	ipA, ipB := net.IPv4(10, 196, byte(pid%250), 1).To4(), net.IPv4(10, 196, byte(pid%250), 2).To4()
	for _, n := range []string{nsA, nsB} {
		run(t, "ip", "netns", "add", n)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n).Run() })
	}
	run(t, "ip", "-n", nsA, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", nsB)
	macB := "02:5e:00:00:00:02"
	for _, c := range [][]string{
		{"-n", nsA, "addr", "add", ipA.String() + "/24", "dev", "eth0"},
		{"-n", nsB, "addr", "add", ipB.String() + "/24", "dev", "eth0"},
		{"-n", nsB, "link", "set", "eth0", "address", macB},
		{"-n", nsA, "link", "set", "eth0", "up"},
		{"-n", nsB, "link", "set", "eth0", "up"},
		{"-n", nsA, "neigh", "add", ipB.String(), "lladdr", macB, "dev", "eth0", "nud", "permanent"},
	} {
		run(t, append([]string{"ip"}, c...)...)
	}
	if _, err := exec.LookPath("ethtool"); err == nil {
		run(t, "ip", "netns", "exec", nsA, "ethtool", "-K", "eth0", "tso", "off", "gso", "off", "tx", "off")
	}
	for _, c := range cmds {
		run(t, append([]string{"ip", "netns", "exec", nsA}, c...)...)
	}

	// Queue q is DSCP q<<3, TOS q<<5 (the class-selector policy).
	queues := []int{1, 7}
	var got [2]atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	start := time.Now()
	for i, q := range queues {
		rx := udpIn(t, "/var/run/netns/"+nsB, &net.UDPAddr{IP: ipB, Port: 7000 + q}, 0)
		tx := udpIn(t, "/var/run/netns/"+nsA, &net.UDPAddr{IP: ipA}, q<<5)
		wg.Add(2)
		go func() { // receiver: counts bytes after a 500 ms warm-up
			defer wg.Done()
			buf := make([]byte, 2048)
			for {
				_ = rx.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				n, err := rx.Read(buf)
				select {
				case <-stop:
					return
				default:
				}
				if err == nil && time.Since(start) > 500*time.Millisecond {
					got[i].Add(int64(n))
				}
			}
		}()
		go func() { // sender: 10 packets every 10 ms
			defer wg.Done()
			msg := make([]byte, payload)
			dst := &net.UDPAddr{IP: ipB, Port: 7000 + q}
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					for range pps / 100 {
						_, _ = tx.WriteToUDP(msg, dst)
					}
				}
			}
		}()
	}
	time.Sleep(500*time.Millisecond + measure)
	close(stop)
	wg.Wait()

	secs := measure.Seconds()
	low, high := float64(got[0].Load())*8/secs, float64(got[1].Load())*8/secs
	onWire := (low + high) * wire / payload
	t.Logf("queue 1 %.2f Mbit/s, queue 7 %.2f Mbit/s of payload; port %.2f Mbit/s on the wire (link %d Mbit/s)", low/1e6, high/1e6, onWire/1e6, rate/1_000_000)
	if onWire > 1.05*rate {
		t.Errorf("port carried %.2f Mbit/s, over 1.05 x its %d Mbit/s", onWire/1e6, rate/1_000_000)
	}
	if onWire < 0.85*rate {
		t.Errorf("port carried only %.2f Mbit/s of its %d Mbit/s with 16 Mbit/s offered", onWire/1e6, rate/1_000_000)
	}
	offered := float64(pps * payload * 8)
	if high < 0.9*offered {
		t.Errorf("queue 7 got %.2f of its %.2f Mbit/s: the shaper does not serve it first", high/1e6, offered/1e6)
	}
	if low > 0.35*offered {
		t.Errorf("queue 1 got %.2f Mbit/s, more than the link leaves it after queue 7", low/1e6)
	}
}
