package schedprio

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNiceCoversEveryThread renices this test binary's threads (to a
// positive value, which needs no privilege) and checks each thread, also
// one the runtime starts afterwards.
func TestNiceCoversEveryThread(t *testing.T) {
	if err := Nice(3); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // a goroutine blocked in a syscall makes the runtime start a thread
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
