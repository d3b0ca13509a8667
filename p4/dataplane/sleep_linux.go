package dataplane

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sleeper waits for short, exact durations on a timerfd parked in Go's
// netpoller. A Go timer fires with millisecond granularity when the machine
// is idle (the netpoller's epoll timeout), longer than a frame at 1 Gbit/s;
// nanosleep is exact but holds the goroutine's P for the whole sleep, which
// with GOMAXPROCS=1 stops every other port. A timerfd is both: the kernel's
// high-resolution timer makes it readable, and the waiting goroutine gives
// its P away meanwhile.
type sleeper struct {
	f      *os.File
	rc     syscall.RawConn
	buf    [8]byte
	readFn func(fd uintptr) bool
}

func newSleeper() (*sleeper, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	s := &sleeper{f: os.NewFile(uintptr(fd), "timerfd")}
	if s.rc, err = s.f.SyscallConn(); err != nil {
		s.f.Close()
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	s.readFn = s.read
	return s, nil
}

func (s *sleeper) read(fd uintptr) bool {
	_, err := unix.Read(int(fd), s.buf[:])
	return err != unix.EAGAIN
}

// sleep waits for d, or less if the sleeper is closed.
func (s *sleeper) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := s.rc.Control(func(fd uintptr) { _ = unix.TimerfdSettime(int(fd), 0, &spec, nil) }); err != nil {
		return
	}
	_ = s.rc.Read(s.readFn) // an error means closed: the dataplane is stopping
}

func (s *sleeper) close() error { return s.f.Close() }
