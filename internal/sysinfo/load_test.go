package sysinfo

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// burn keeps one CPU busy for d.
func burn(d time.Duration) {
	x := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 100_000 {
			x += i
		}
	}
	runtime.KeepAlive(x)
}

func TestTreeTicksCountsDescendants(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc:", err)
	}
	before := treeTicks(os.Getpid())
	burn(300 * time.Millisecond)
	if after := treeTicks(os.Getpid()); after <= before {
		t.Errorf("this process burnt 300 ms of CPU but its tree's ticks went %d -> %d", before, after)
	}
}

// TestLoadSeesOtherProcesses measures a tree of one idle child while this
// process, outside that tree, keeps a CPU busy: the load must count at
// least half a CPU as another process's.
func TestLoadSeesOtherProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc:", err)
	}
	idle := exec.Command("sleep", "5")
	if err := idle.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	defer func() { _ = idle.Process.Kill(); _ = idle.Wait() }()
	l := StartLoad(runtime.NumCPU(), idle.Process.Pid)
	burn(time.Second)
	l.End()
	if other := l.OtherCPUs(); other < 0.5 {
		t.Errorf("a process outside the tree burnt a CPU for 1 s; other CPUs %.2f, want at least 0.5", other)
	}
	if s := l.Steal(); s < 0 || s > 1 {
		t.Errorf("steal %.3f outside [0, 1]", s)
	}
	if b := l.Busy(); b <= 0 || b > 1 {
		t.Errorf("busy %.3f outside (0, 1] while a CPU burnt", b)
	}
}
