package simnet

import (
	"math/rand/v2"
	"testing"
)

// TestClockOrder checks the queue runs events by time, and those of one
// time in the order they were scheduled, however they were pushed.
func TestClockOrder(t *testing.T) {
	var c Clock
	rng := rand.New(rand.NewPCG(1, 2))
	type ran struct {
		at int64
		id int
	}
	var got []ran
	const n = 5000
	for id := range n {
		at := rng.Int64N(100)
		c.At(at, func() { got = append(got, ran{c.Now(), id}) })
	}
	c.Run(1000)
	if len(got) != n {
		t.Fatalf("%d events ran, want %d", len(got), n)
	}
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		if a.at > b.at || (a.at == b.at && a.id > b.id) {
			t.Fatalf("event %d (at %d) ran after event %d (at %d)", b.id, b.at, a.id, a.at)
		}
	}
}

// BenchmarkClock is the event queue alone in a steady state of 10,000
// pending events: each event run schedules one more a random time ahead,
// as a network's frames and timers do.
func BenchmarkClock(b *testing.B) {
	var c Clock
	rng := rand.New(rand.NewPCG(1, 2))
	var fn func(int64)
	fn = func(int64) { c.AtTime(c.Now()+1+rng.Int64N(10_000), fn) }
	for range 10_000 {
		c.AtTime(rng.Int64N(10_000), fn)
	}
	b.ResetTimer()
	start := c.Events()
	for b.Loop() {
		c.Run(c.Now() + 1000)
	}
	b.ReportMetric(float64(c.Events()-start)/b.Elapsed().Seconds(), "events/s")
}

// TestClockStop: an endless chain of events stops within stopCheck events
// of Stop, from another goroutine too, and a stopped clock lets time pass
// to the end of every later Run without running an event.
func TestClockStop(t *testing.T) {
	t.Run("same goroutine", func(t *testing.T) {
		var c Clock
		var tick func()
		n := 0
		tick = func() {
			n++
			if n == 1500 {
				c.Stop()
			}
			c.At(c.Now()+1, tick)
		}
		c.At(0, tick)
		c.Run(1_000_000)
		if n != 2*stopCheck || c.Now() != 1_000_000 {
			t.Fatalf("ran %d events, clock at %d; want %d events, clock at 1000000", n, c.Now(), 2*stopCheck)
		}
		c.Run(2_000_000)
		if n != 2*stopCheck || c.Now() != 2_000_000 || c.Pending() != 1 {
			t.Fatalf("after stopping: ran %d events, clock at %d, %d pending; want none run, clock at 2000000, 1 pending", n, c.Now(), c.Pending())
		}
	})
	t.Run("other goroutine", func(t *testing.T) {
		var c Clock
		var tick func()
		started := make(chan struct{})
		tick = func() {
			if c.Events() == 1 {
				close(started)
			}
			c.At(c.Now()+1, tick)
		}
		c.At(0, tick)
		go func() {
			<-started
			c.Stop()
		}()
		c.Run(1 << 62) // endless but for Stop
		if c.Now() != 1<<62 {
			t.Fatalf("clock at %d, want %d", c.Now(), int64(1<<62))
		}
	})
}
