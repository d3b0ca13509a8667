//go:build !linux

package hrtime

import (
	"sync"
	"time"
)

// Timer falls back to a Go timer where there is no timerfd: correct, but
// with the runtime's millisecond granularity when idle.
type Timer struct {
	t    *time.Timer
	once sync.Once
	done chan struct{}
}

// NewTimer returns a disarmed Timer.
func NewTimer() (*Timer, error) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Timer{t: t, done: make(chan struct{})}, nil
}

// Reset arms the timer to expire after d.
func (t *Timer) Reset(d time.Duration) { t.t.Reset(d) }

// Wait blocks until the armed timer expires or the timer is closed.
func (t *Timer) Wait() error {
	select {
	case <-t.t.C:
		return nil
	case <-t.done:
		return ErrClosed
	}
}

// Sleep waits for d; it returns at once for d <= 0.
func (t *Timer) Sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t.Reset(d)
	return t.Wait()
}

// Close wakes a waiter.
func (t *Timer) Close() error {
	t.once.Do(func() { close(t.done) })
	return nil
}
