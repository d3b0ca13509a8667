package mn

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: Mininet creates network namespaces and veths")
	}
	if _, err := os.Stat(Python); err != nil {
		t.Skip("needs Debian's /usr/bin/python3 with mininet (apt-get install mininet)")
	}
	if err := exec.Command(Python, "-c", "import mininet.net").Run(); err != nil {
		t.Skip("needs Debian's mininet package: apt-get install mininet")
	}
}

// TestRunnerTwoHosts builds two hosts joined by one shaped veth, runs
// commands in them, starts and signals a process, and stops, checking that
// the interfaces are gone afterwards.
func TestRunnerTwoHosts(t *testing.T) {
	needRoot(t)
	tag := fmt.Sprintf("mnt%d", os.Getpid()%100000)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var log bytes.Buffer
	r, err := Start(ctx, Options{Dir: t.TempDir(), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			r.Kill()
		}
		for _, n := range []string{tag + "a", tag + "b"} {
			_ = exec.Command("ip", "link", "del", n).Run()
		}
	})
	spec := Spec{
		Tag: tag, MTU: 1500, Shaper: "htb", BWMbit: 50,
		Hosts: []HostSpec{
			{Name: "h1", Node: tag + "h1", IP: "10.0.0.1/16", MAC: "02:00:00:00:00:01"},
			{Name: "h2", Node: tag + "h2", IP: "10.0.0.2/16", MAC: "02:00:00:00:00:02"},
		},
		Links: []LinkSpec{{A: "h1", AIntf: tag + "a", B: "h2", BIntf: tag + "b", ShapeA: true}},
	}
	built, err := r.Build(ctx, spec)
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	if built.Hosts["h1"].PID == 0 || built.Hosts["h2"].PID == 0 {
		t.Fatalf("no host pids: %+v", built)
	}
	rc, out, err := r.Cmd(ctx, "h1", 10*time.Second, "ping", "-c", "2", "-i", "0.2", "-W", "2", "10.0.0.2")
	if err != nil || rc != 0 {
		t.Fatalf("ping h1 -> h2: rc %d, %v\n%s", rc, err, out)
	}
	// The host side is shaped by htb at the link rate; offloads are off.
	_, out, err = r.Cmd(ctx, "h1", 5*time.Second, "tc", "qdisc", "show", "dev", tag+"a")
	if err != nil || !strings.Contains(out, "htb") {
		t.Errorf("no htb shaper on the host side: %v\n%s", err, out)
	}
	_, out, _ = r.Cmd(ctx, "h1", 5*time.Second, "ethtool", "-k", tag+"a")
	if !strings.Contains(out, "tcp-segmentation-offload: off") || !strings.Contains(out, "generic-receive-offload: off") {
		t.Errorf("offloads still on:\n%s", out)
	}
	// Unknown hosts are errors, not crashes.
	if _, _, err := r.Cmd(ctx, "h9", time.Second, "true"); err == nil {
		t.Error("cmd in a host that does not exist succeeded")
	}
	pid, err := r.Popen(ctx, "sleeper", "h2", "", nil, "sleep", "30")
	if err != nil || pid == 0 {
		t.Fatalf("popen: %d, %v", pid, err)
	}
	if err := r.Signal(ctx, "sleeper", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-r.Events():
		if ev.Event != "exit" || ev.Name != "sleeper" {
			t.Errorf("event %+v, want exit of sleeper", ev)
		}
	case <-time.After(5 * time.Second):
		t.Error("no exit event after SIGTERM")
	}
	stopCtx, stopCancel := context.WithTimeout(ctx, 10*time.Second)
	defer stopCancel()
	if err := r.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v\n%s", err, log.String())
	}
	stopped = true
	for _, n := range []string{tag + "a", tag + "b"} {
		if _, err := net.InterfaceByName(n); err == nil {
			t.Errorf("interface %s left after stop", n)
		}
	}
	if err := syscall.Kill(built.Hosts["h1"].PID, 0); err == nil {
		t.Errorf("host shell %d still alive after stop", built.Hosts["h1"].PID)
	}
}
