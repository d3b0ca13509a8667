package hrtime

import (
	"errors"
	"testing"
	"time"
)

func TestSleepWaitsAtLeastTheDuration(t *testing.T) {
	tm, err := NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	for _, d := range []time.Duration{0, -time.Second, 50 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		if err := tm.Sleep(d); err != nil {
			t.Fatalf("Sleep(%v): %v", d, err)
		}
		if got := time.Since(start); got < d {
			t.Errorf("Sleep(%v) returned after %v", d, got)
		}
	}
}

func TestResetReplacesEarlierSetting(t *testing.T) {
	tm, err := NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	tm.Reset(time.Hour)
	tm.Reset(time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- tm.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return 10 s after a 1 ms Reset")
	}
}

func TestCloseWakesWaiter(t *testing.T) {
	tm, err := NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	tm.Reset(time.Hour)
	done := make(chan error, 1)
	go func() { done <- tm.Wait() }()
	time.Sleep(10 * time.Millisecond) // let the waiter park
	tm.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait after Close = %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake the waiter")
	}
	if err := tm.Sleep(time.Millisecond); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sleep on a closed timer = %v, want ErrClosed", err)
	}
}

// BenchmarkLateness compares how late 200 µs waits return with a Timer and
// with a Go timer in the same run; late_us is the mean lateness. On an idle
// machine the Go timer is late by most of a millisecond (see the package
// doc); the ratio is what the benchmark is for.
func BenchmarkLateness(b *testing.B) {
	const d = 200 * time.Microsecond
	b.Run("hrtime", func(b *testing.B) {
		tm, err := NewTimer()
		if err != nil {
			b.Fatal(err)
		}
		defer tm.Close()
		var late time.Duration
		for b.Loop() {
			start := time.Now()
			_ = tm.Sleep(d)
			late += time.Since(start) - d
		}
		b.ReportMetric(float64(late.Microseconds())/float64(b.N), "late_us")
	})
	b.Run("time.Timer", func(b *testing.B) {
		t := time.NewTimer(time.Hour)
		var late time.Duration
		for b.Loop() {
			start := time.Now()
			t.Reset(d)
			<-t.C
			late += time.Since(start) - d
		}
		b.ReportMetric(float64(late.Microseconds())/float64(b.N), "late_us")
	})
}

func TestResetAndWaitDoNotAllocate(t *testing.T) {
	tm, err := NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	if n := testing.AllocsPerRun(100, func() { _ = tm.Sleep(time.Microsecond) }); n != 0 {
		t.Errorf("Sleep allocates %v times per call, want 0 (it runs per pacer wake-up)", n)
	}
}
