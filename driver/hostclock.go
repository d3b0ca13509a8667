package driver

import (
	"container/heap"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homatb/homatb/internal/hrtime"
)

// spinWindow is how close to an event's time the host clock stops
// sleeping and yields instead: even a timerfd wake-up on an idle vCPU is
// late by tens of microseconds, so the last stretch is waited out on the
// CPU.
const spinWindow = 50 * time.Microsecond

// HostClock is a Scheduler on the host's wall clock for an agent: one
// goroutine (Run) runs the events in time order, sleeping between them
// until an hrtime.Timer fires, since a Go timer rounds sub-millisecond
// waits up to a millisecond on an idle host and that lag would land in
// every open-loop RPC's latency. At may be called from any goroutine (a
// transport's completion, a server's arrival) and wakes a sleeping loop
// through a channel, which costs no system call.
type HostClock struct {
	tm *hrtime.Timer
	// fired gets a token when the timer expires (a goroutine of its own
	// waits on it), wake when At schedules while the loop sleeps.
	fired, wake chan struct{}

	mu       sync.Mutex
	q        hostEvents
	seq      uint64
	sleeping bool
	closed   bool
	exited   chan struct{}
}

// NewHostClock returns a clock whose loop Run starts.
func NewHostClock() (*HostClock, error) {
	tm, err := hrtime.NewTimer()
	if err != nil {
		return nil, fmt.Errorf("driver: host clock: %w", err)
	}
	c := &HostClock{tm: tm, fired: make(chan struct{}, 1), wake: make(chan struct{}, 1), exited: make(chan struct{})}
	go func() {
		for tm.Wait() == nil {
			select {
			case c.fired <- struct{}{}:
			default:
			}
		}
	}()
	return c, nil
}

// Now is the wall clock in Unix ns.
func (c *HostClock) Now() int64 { return time.Now().UnixNano() }

type hostEvent struct {
	at, seq   int64
	fn        func()
	cancelled atomic.Bool
}

func (e *hostEvent) Cancel() { e.cancelled.Store(true) }

// At schedules fn at t (Unix ns) from any goroutine.
func (c *HostClock) At(t int64, fn func()) Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	e := &hostEvent{at: t, seq: int64(c.seq), fn: fn}
	heap.Push(&c.q, e)
	if c.sleeping {
		select {
		case c.wake <- struct{}{}:
		default: // a wake-up is on its way
		}
	}
	return e
}

// Do runs fn on the loop and waits for it; once the loop has ended it runs
// fn at once. It must not race Close.
func (c *HostClock) Do(fn func()) {
	done := make(chan struct{})
	c.At(c.Now(), func() {
		fn()
		close(done)
	})
	select {
	case <-done:
	case <-c.exited:
		select {
		case <-done: // ran before the loop ended
		default:
			fn()
		}
	}
}

// Pass waits until t, or until done, asked on the loop every
// millisecond, reports true.
func (c *HostClock) Pass(t int64, done func() bool) {
	for c.Now() < t {
		var d bool
		if c.Do(func() { d = done() }); d {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Run runs the events until Close.
func (c *HostClock) Run() {
	defer close(c.exited)
	defer c.tm.Close()
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		now := c.Now()
		if len(c.q) > 0 && c.q[0].at <= now {
			e := heap.Pop(&c.q).(*hostEvent)
			c.mu.Unlock()
			if !e.cancelled.Load() {
				e.fn()
			}
			continue
		}
		if len(c.q) > 0 {
			wait := time.Duration(c.q[0].at - now)
			if wait <= spinWindow {
				c.mu.Unlock()
				runtime.Gosched()
				continue
			}
			c.tm.Reset(wait - spinWindow)
		}
		c.sleeping = true
		c.mu.Unlock()
		// A token left by an earlier expiry or wake-up costs one more turn
		// of the loop, nothing else.
		select {
		case <-c.fired:
		case <-c.wake:
		}
		c.mu.Lock()
		c.sleeping = false
		c.mu.Unlock()
	}
}

// Close ends Run; events not yet run never run.
func (c *HostClock) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// hostEvents is a heap of events by time, then by order of scheduling.
type hostEvents []*hostEvent

func (q hostEvents) Len() int { return len(q) }
func (q hostEvents) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q hostEvents) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *hostEvents) Push(x any)   { *q = append(*q, x.(*hostEvent)) }
func (q *hostEvents) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}
