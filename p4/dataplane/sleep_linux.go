package dataplane

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep blocks the calling thread for d on the kernel's
// high-resolution timer (about 50 µs of slack), unlike a Go timer.
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
