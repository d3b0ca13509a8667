package memlimit

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	const kib = 1 << 10
	// An agent's figures from a soak, rounded: 7,000 KiB live, 5,600 KiB
	// of stacks and globals, 4,000 KiB of runtime memory outside a heap of
	// 24,000 KiB mapped.
	agent := Snapshot{Live: 7000 * kib, Stack: 400 * kib, Globals: 5200 * kib, Cycles: 20,
		Total: 28000 * kib, Heap: 24000 * kib}
	first := agent
	first.Cycles = 0
	tests := []struct {
		name    string
		s       Snapshot
		percent int
		want    int64 // 0: no limit
	}{
		{"GOGC 100", agent, 100, (7000 + 8820 + 4000) * kib},
		{"GOGC 50", agent, 50, (7000 + 4410 + 4000) * kib},
		{"GOGC off", agent, -1, 0},
		{"before the first collection", first, 100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Limit(tt.s, tt.percent)
			if ok != (tt.want != 0) || got != tt.want {
				t.Errorf("Limit = %d, %v; want %d", got, ok, tt.want)
			}
		})
	}
}

// TestFollow runs Follow in this process: after a collection the limit is
// Limit of the runtime's figures, within what the heap moved meanwhile, with
// GOGC off; when Follow ends the limit is off again and GOGC back.
func TestFollow(t *testing.T) {
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Skipf("a memory limit is set (%d): Follow leaves it", l)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		debug.SetGCPercent(p)
		t.Skipf("GOGC is %d, not the default the test assumes", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Follow(ctx, time.Millisecond)
	}()
	runtime.GC()
	deadline := time.Now().Add(5 * time.Second)
	var got int64
	for got = debug.SetMemoryLimit(-1); (got == math.MaxInt64 || gcPercent() >= 0) && time.Now().Before(deadline); got = debug.SetMemoryLimit(-1) {
		time.Sleep(time.Millisecond)
	}
	want, ok := Limit(Read(), 100)
	gogc := gcPercent()
	cancel()
	<-done
	if !ok {
		t.Fatal("no limit after a collection")
	}
	if got == math.MaxInt64 {
		t.Fatal("Follow set no limit within 5 s of a collection")
	}
	if d := got - want; d < -want/4 || d > want/4 {
		t.Errorf("limit %d, Limit of the runtime now %d", got, want)
	}
	if gogc != -1 {
		t.Errorf("GOGC %d while Follow ran, want off", gogc)
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("limit %d after Follow ended, want none", l)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC %d after Follow ended, want 100", p)
	}
}

// gcPercent reads GOGC without setting it (as debug.SetGCPercent would).
func gcPercent() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestParseAvailable reads MemAvailable and refuses what is not it.
func TestParseAvailable(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int64
		ok         bool
	}{
		{"kernel's", "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   21000000 kB\nBuffers: 5 kB\n", 21000000 << 10, true},
		{"missing (an old kernel)", "MemTotal:       24000000 kB\nMemFree:         1000 kB\n", 0, false},
		{"other unit", "MemAvailable:   21000000 MB\n", 0, false},
		{"not a number", "MemAvailable:   lots kB\n", 0, false},
	} {
		got, ok := parseAvailable(tc.text)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if a, ok := Available(); ok && a <= 0 {
		t.Errorf("Available() = %d on this machine", a)
	}
}

// TestMachine: the limit goes to 80% of the available memory, and a limit
// already set stays.
func TestMachine(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	if _, ok := Available(); !ok {
		t.Skip("no /proc/meminfo here")
	}
	debug.SetMemoryLimit(math.MaxInt64)
	Machine()
	got := debug.SetMemoryLimit(-1)
	a, _ := Available()
	if want := a / 5 * 4; got == math.MaxInt64 || math.Abs(float64(got-want)) > 0.1*float64(want) {
		t.Errorf("limit %d, want about %d (80%% of %d available)", got, want, a)
	}
	debug.SetMemoryLimit(1 << 40)
	Machine()
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("a limit set before was changed to %d", got)
	}
}
