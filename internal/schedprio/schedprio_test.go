package schedprio

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// policies returns each thread's scheduling policy.
func policies(t *testing.T) map[int]uint32 {
	t.Helper()
	out := map[int]uint32{}
	if err := eachThread(func(tid int) error {
		a, err := unix.SchedGetAttr(tid, 0)
		if err == nil {
			out[tid] = a.Policy
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRealtimeAndBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SCHED_FIFO needs root")
	}
	if err := Realtime(0); err == nil {
		t.Error("priority 0 accepted")
	}
	if err := Realtime(5); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Normal() })
	for tid, p := range policies(t) {
		if p != unix.SCHED_FIFO {
			t.Errorf("thread %d: policy %d after Realtime, want SCHED_FIFO", tid, p)
		}
	}
	if err := Normal(); err != nil {
		t.Fatal(err)
	}
	for tid, p := range policies(t) {
		if p != unix.SCHED_NORMAL {
			t.Errorf("thread %d: policy %d after Normal, want SCHED_OTHER", tid, p)
		}
	}
}
