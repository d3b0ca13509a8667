package schedprio

import (
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNiceCoversEveryThread renices this test binary's threads (to a
// positive value, which needs no privilege) and checks each thread, also
// one the runtime starts afterwards.
func TestNiceCoversEveryThread(t *testing.T) {
	if err := Nice(3); err != nil {
		t.Fatal(err)
	}
	blockInSyscall()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		// getpriority returns 20 - nice.
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
		if err != nil {
			continue // the thread has exited
		}
		if nice := 20 - prio; nice != 3 {
			t.Errorf("thread %d has nice %d, want 3", tid, nice)
		}
	}
}

// TestSliceCoversEveryThread asks for a short slice and checks every
// thread reports it and kept its nice value, also a thread the runtime
// starts afterwards (which inherits it from its creator).
func TestSliceCoversEveryThread(t *testing.T) {
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil || a.Runtime == 0 {
		t.Skipf("this kernel reports no time slice (sched_getattr: %v): EEVDF slices need Linux 6.12", err)
	}
	if err := Nice(2); err != nil {
		t.Fatal(err)
	}
	const want = 300 * time.Microsecond
	if err := Slice(want); err != nil {
		t.Fatal(err)
	}
	blockInSyscall()
	if err := eachThread(func(tid int) error {
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			return nil // the thread has exited
		}
		if time.Duration(a.Runtime) != want || a.Nice != 2 {
			t.Errorf("thread %d: slice %v nice %d, want %v and 2", tid, time.Duration(a.Runtime), a.Nice, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, MinSlice - 1, MaxSlice + 1} {
		if err := Slice(d); err == nil {
			t.Errorf("Slice(%v) accepted", d)
		}
	}
}

// blockInSyscall has a goroutine block in a read, which makes the runtime
// start a thread for the others, and returns when it is done.
func blockInSyscall() {
	done := make(chan struct{})
	go func() {
		var p [2]int
		if err := unix.Pipe(p[:]); err == nil {
			defer unix.Close(p[0])
			defer unix.Close(p[1])
			go func() { _, _ = unix.Write(p[1], []byte{1}) }()
			var b [1]byte
			_, _ = unix.Read(p[0], b[:])
		}
		close(done)
	}()
	<-done
}
