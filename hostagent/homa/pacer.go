package homa

import "time"

// pacerTimer wakes the timer goroutine when the pacer lets the next DATA
// packet go.
type pacerTimer interface {
	// Reset arms the timer to fire once after d, replacing any earlier arm.
	Reset(d time.Duration)
	// C delivers the expiries.
	C() <-chan time.Time
	Close() error
}

// preciseTimerConn is a Conn that can offer a timer more precise than Go's,
// whose expiries are rounded up to about 1 ms when the process is idle:
// longer than ten packet times at 100 Mbit/s.
type preciseTimerConn interface {
	newPacerTimer() (pacerTimer, error)
}

// goTimer is a pacerTimer on time.Timer: for Conns without a precise timer,
// such as the in-memory network whose tests run on testing/synctest's fake
// clock.
type goTimer struct{ t *time.Timer }

func newGoTimer() *goTimer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &goTimer{t: t}
}

func (g *goTimer) Reset(d time.Duration) { g.t.Reset(d) }
func (g *goTimer) C() <-chan time.Time   { return g.t.C }
func (g *goTimer) Close() error          { g.t.Stop(); return nil }

// newPacer picks the conn's precise timer when it has one.
func newPacer(conn Conn) pacerTimer {
	if p, ok := conn.(preciseTimerConn); ok {
		if t, err := p.newPacerTimer(); err == nil {
			return t
		}
	}
	return newGoTimer()
}
