package stats

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestInOrder: the before and after steps run in the order the jobs were
// submitted, one at a time, however long each job's work takes; at most
// n jobs are under way at once; and a failed step stops the steps after
// it, its error returned.
func TestInOrder(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		p := newInOrder(n, 0)
		r := rand.New(rand.NewPCG(1, uint64(n)))
		var befores, afters []int // appended by steps that must not overlap
		var running, most atomic.Int32
		for i := range 40 {
			d := time.Duration(r.IntN(300)) * time.Microsecond
			err := p.submit(1,
				func() error { befores = append(befores, i); return nil },
				func() error {
					now := running.Add(1)
					for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
					}
					time.Sleep(d)
					running.Add(-1)
					return nil
				},
				func() error { afters = append(afters, i); return nil })
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := p.wait(); err != nil {
			t.Fatal(err)
		}
		want := make([]int, 40)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(befores, want) || !slices.Equal(afters, want) {
			t.Errorf("n=%d: before steps %v, after steps %v, want each in submission order", n, befores, afters)
		}
		if m := most.Load(); m > int32(n) || (n > 1 && m < 2) {
			t.Errorf("n=%d: %d jobs worked at once", n, m)
		}
	}

	p := newInOrder(3, 0)
	boom := errors.New("boom")
	var after []int
	for i := range 10 {
		work := func() error { return nil }
		if i == 4 {
			work = func() error { return boom }
		}
		if err := p.submit(1, func() error { return nil }, work, func() error { after = append(after, i); return nil }); err != nil {
			if !errors.Is(err, boom) {
				t.Fatalf("submit: %v", err)
			}
			break
		}
	}
	if err := p.wait(); !errors.Is(err, boom) {
		t.Errorf("wait: %v, want boom", err)
	}
	if slices.Contains(after, 4) || len(after) > 4 {
		t.Errorf("after steps %v ran past the failed job 4", after)
	}
}

// TestInOrderMemory: jobs run at once only while their costs fit in the
// budget together, the next one's included while the caller reads its
// records; a job larger than the budget runs alone, and without a budget
// n run at once.
func TestInOrderMemory(t *testing.T) {
	for _, tc := range []struct {
		name         string
		n            int
		budget, cost int64
		want         int32 // jobs working at once, at most and at least
	}{
		{"no budget", 4, 0, 100, 4},
		{"three fit", 4, 12, 4, 3},
		{"two fit", 4, 10, 5, 2},
		{"one fits", 4, 9, 5, 1},
		{"larger than the budget", 3, 10, 20, 1},
		{"room for all", 3, 1000, 10, 3},
	} {
		p := newInOrder(tc.n, tc.budget)
		var running, most atomic.Int32
		for range 12 {
			err := p.submit(tc.cost, func() error { return nil }, func() error {
				now := running.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				running.Add(-1)
				return nil
			}, func() error { return nil })
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := p.wait(); err != nil {
			t.Fatal(err)
		}
		if m := most.Load(); m != tc.want {
			t.Errorf("%s: %d jobs worked at once, want %d", tc.name, m, tc.want)
		}
		if p.held != 0 {
			t.Errorf("%s: %d bytes still held after every job", tc.name, p.held)
		}
	}
}
