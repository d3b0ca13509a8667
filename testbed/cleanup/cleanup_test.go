package cleanup

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// TestFindAndRemove plants what a crashed run leaves (a tagged process, a
// veth pair named after the tag, a registration whose owner is gone) and
// checks that Find sees all of it and Remove leaves nothing.
func TestFindAndRemove(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates interfaces and reads other processes' environments")
	}
	tag := fmt.Sprintf("hb%05x", os.Getpid()&0xfffff)
	registry := t.TempDir()
	sockDir := t.TempDir()

	sleeper := exec.Command("sleep", "60")
	sleeper.Env = append(os.Environ(), EnvTag+"="+tag)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(reaped) }()
	t.Cleanup(func() { _ = sleeper.Process.Kill() })

	a, b := tag+"s1e1", tag+"h1e0"
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a}, PeerName: b}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(a); err == nil {
			_ = netlink.LinkDel(l)
		}
	})

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	reg := Registration{Tag: tag, Run: "test", OwnerPID: dead.Process.Pid, Dirs: []string{sockDir}}
	path, err := Register(registry, reg)
	if err != nil {
		t.Fatal(err)
	}

	found, err := Find(registry, tag)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Fatalf("found %d tags, want 1: %v", len(found), found)
	}
	l := found[0]
	if l.Alive {
		t.Errorf("run with a finished owner reported alive")
	}
	if len(l.Procs) != 1 || l.Procs[0].PID != sleeper.Process.Pid {
		t.Errorf("procs = %+v, want the sleeper %d", l.Procs, sleeper.Process.Pid)
	}
	if len(l.Intfs) != 2 {
		t.Errorf("interfaces = %v, want %s and %s", l.Intfs, a, b)
	}
	if len(l.Files) != 2 {
		t.Errorf("files = %v, want the registration and the socket dir", l.Files)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Remove(ctx, l, time.Second, false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reaped:
	case <-time.After(5 * time.Second):
		t.Error("tagged process still running after Remove")
	}
	if InterfaceExists(a) || InterfaceExists(b) {
		t.Error("tagged interfaces left after Remove")
	}
	for _, f := range []string{path, sockDir} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left after Remove", f)
		}
	}
	again, err := Find(registry, tag)
	if err != nil || len(again) != 0 {
		t.Errorf("Find after Remove = %v, %v; want nothing", again, err)
	}
}

// TestLiveRunIsKept checks that a registered run whose owner is alive is not
// removed without force.
func TestLiveRunIsKept(t *testing.T) {
	registry := t.TempDir()
	tag := fmt.Sprintf("hb%05x", (os.Getpid()+1)&0xfffff)
	if _, err := Register(registry, Registration{Tag: tag, Run: "live"}); err != nil {
		t.Fatal(err)
	}
	found, err := Find(registry, tag)
	if err != nil || len(found) != 1 || !found[0].Alive {
		t.Fatalf("Find = %+v, %v; want one live run", found, err)
	}
	if err := Remove(context.Background(), found[0], 0, false); err == nil {
		t.Error("Remove of a live run succeeded without force")
	}
	if _, err := os.Stat(filepath.Join(registry, tag+".json")); err != nil {
		t.Errorf("registration of the live run removed: %v", err)
	}
}
