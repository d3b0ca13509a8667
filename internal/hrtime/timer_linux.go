//go:build linux

package hrtime

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Timer is a one-shot timer with microsecond precision. Arm it with Reset
// and block in Wait, or use Sleep for both; one goroutine at a time may
// wait. Close wakes a waiter with ErrClosed.
type Timer struct {
	f      *os.File
	rc     syscall.RawConn
	buf    [8]byte
	spec   unix.ItimerSpec
	readFn func(fd uintptr) bool // preallocated, as is setFn: Reset and
	setFn  func(fd uintptr)      // Wait run on hot paths
}

// NewTimer returns a disarmed Timer.
func NewTimer() (*Timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("hrtime: timerfd_create: %w", err)
	}
	t := &Timer{f: os.NewFile(uintptr(fd), "hrtime")}
	if t.rc, err = t.f.SyscallConn(); err != nil {
		t.f.Close()
		return nil, fmt.Errorf("hrtime: timerfd: %w", err)
	}
	// Neither call can block (the timerfd is non-blocking), so both are
	// raw system calls: through the Go scheduler's blocking path each
	// would wake its monitor thread after an idle spell, a context switch
	// per timer on a shared machine (docs/emulation.md).
	t.readFn = func(fd uintptr) bool {
		_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&t.buf[0])), uintptr(len(t.buf)))
		return e != unix.EAGAIN
	}
	t.setFn = func(fd uintptr) {
		_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
	}
	return t, nil
}

// Reset arms the timer to expire after d (at least a microsecond, since a
// zero timerfd value disarms it), replacing any earlier setting. Only one
// goroutine may call Reset or Sleep at a time.
func (t *Timer) Reset(d time.Duration) {
	t.spec.Value = unix.NsecToTimespec(int64(max(d, time.Microsecond)))
	_ = t.rc.Control(t.setFn)
}

// Wait blocks until the armed timer expires; it returns ErrClosed once the
// timer is closed. An expiry nobody waited for is consumed by the next Wait.
func (t *Timer) Wait() error {
	if err := t.rc.Read(t.readFn); err != nil {
		return ErrClosed
	}
	return nil
}

// Sleep waits for d; it returns at once for d <= 0.
func (t *Timer) Sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t.Reset(d)
	return t.Wait()
}

// Close releases the timerfd and wakes a waiter.
func (t *Timer) Close() error { return t.f.Close() }
