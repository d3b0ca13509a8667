//go:build linux

package homa

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdPacer is a pacerTimer on a timerfd parked in Go's netpoller: the
// kernel's high-resolution timer makes it readable on time, and the
// goroutine waiting for it holds no thread meanwhile, so pacing costs one
// wake-up per wait instead of a spinning loop.
type timerfdPacer struct {
	f      *os.File
	rc     syscall.RawConn
	c      chan time.Time
	buf    [8]byte
	readFn func(fd uintptr) bool
}

func (c *RawConn) newPacerTimer() (pacerTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("homa: timerfd: %w", err)
	}
	t := &timerfdPacer{f: os.NewFile(uintptr(fd), "homa-pacer"), c: make(chan time.Time, 1)}
	if t.rc, err = t.f.SyscallConn(); err != nil {
		t.f.Close()
		return nil, fmt.Errorf("homa: timerfd: %w", err)
	}
	t.readFn = func(fd uintptr) bool {
		_, err := unix.Read(int(fd), t.buf[:])
		return err != unix.EAGAIN
	}
	go t.wait()
	return t, nil
}

// wait forwards expiries to c until the timerfd is closed.
func (t *timerfdPacer) wait() {
	for {
		if err := t.rc.Read(t.readFn); err != nil {
			return
		}
		select {
		case t.c <- time.Time{}:
		default: // the loop has a wake-up pending already
		}
	}
}

func (t *timerfdPacer) Reset(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, time.Microsecond)))}
	_ = t.rc.Control(func(fd uintptr) { _ = unix.TimerfdSettime(int(fd), 0, &spec, nil) })
}

func (t *timerfdPacer) C() <-chan time.Time { return t.c }
func (t *timerfdPacer) Close() error        { return t.f.Close() }
