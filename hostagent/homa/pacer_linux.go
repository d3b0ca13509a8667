//go:build linux

package homa

import (
	"fmt"
	"time"

	"github.com/homatb/homatb/internal/hrtime"
)

// hrPacer is a pacerTimer on an hrtime.Timer: it fires on time where a Go
// timer would round a sub-millisecond wait up to a millisecond, and the
// goroutine waiting for it holds no thread meanwhile, so pacing costs one
// wake-up per wait instead of a spinning loop.
type hrPacer struct {
	t *hrtime.Timer
	c chan time.Time
}

func (c *RawConn) newPacerTimer() (pacerTimer, error) {
	t, err := hrtime.NewTimer()
	if err != nil {
		return nil, fmt.Errorf("homa: pacer: %w", err)
	}
	p := &hrPacer{t: t, c: make(chan time.Time, 1)}
	go p.forward()
	return p, nil
}

// forward passes expiries to c until the timer is closed.
func (p *hrPacer) forward() {
	for p.t.Wait() == nil {
		select {
		case p.c <- time.Time{}:
		default: // the timer goroutine has a wake-up pending already
		}
	}
}

func (p *hrPacer) Reset(d time.Duration) { p.t.Reset(d) }
func (p *hrPacer) C() <-chan time.Time   { return p.c }
func (p *hrPacer) Close() error          { return p.t.Close() }
