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
		p := newInOrder(n)
		r := rand.New(rand.NewPCG(1, uint64(n)))
		var befores, afters []int // appended by steps that must not overlap
		var running, most atomic.Int32
		for i := range 40 {
			d := time.Duration(r.IntN(300)) * time.Microsecond
			err := p.submit(
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

	p := newInOrder(3)
	boom := errors.New("boom")
	var after []int
	for i := range 10 {
		work := func() error { return nil }
		if i == 4 {
			work = func() error { return boom }
		}
		if err := p.submit(func() error { return nil }, work, func() error { after = append(after, i); return nil }); err != nil {
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
