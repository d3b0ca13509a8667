package dataplane

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkForward forwards b.N frames through the whole dataplane (ingress
// pipeline, traffic manager, scheduler, egress) between in-memory ports;
// one op is one forwarded frame, so -benchmem's allocs/op is the heap
// allocations per forwarded frame.
func BenchmarkForward(b *testing.B) {
	for _, size := range []int{64, 1500} {
		for _, shaped := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dB/shaped=%v", size, shaped), func(b *testing.B) {
				benchForward(b, size, shaped)
			})
		}
	}
}

// BenchmarkForwardModes is BenchmarkForward (1500-byte frames, shaped)
// on a port in each switch mode, with Homa DATA frames: rank_order with a
// buffer that never overflows (every frame the same rank, the costliest
// insertion), trim_above with a threshold the benchmark's window passes,
// so many frames are trimmed (trimmed/op).
func BenchmarkForwardModes(b *testing.B) {
	for _, tc := range []struct {
		name string
		mode Mode
		arg  uint32
	}{
		{"strict_priority", ModeStrictPriority, 0},
		{"rank_order", ModeRankOrder, 1 << 30},
		{"trim_above", ModeTrimAbove, 4},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchForwardWith(b, benchOpts{size: 1500, shaped: true, mode: tc.mode, modeArg: tc.arg, homa: true})
		})
	}
}

// BenchmarkForwardPFC is BenchmarkForward (1500-byte frames, shaped) with
// the frames' priority lossless: each is counted against its ingress port
// and uncounted as it leaves, its XOFF (1024, above the benchmark's
// window of 48) never reached.
func BenchmarkForwardPFC(b *testing.B) {
	benchForwardWith(b, benchOpts{size: 1500, shaped: true, pfc: PFC{Priorities: 1 << 5, XoffPkts: 1024, XonPkts: 512}})
}

func benchForward(b *testing.B, size int, shaped bool) {
	benchForwardWith(b, benchOpts{size: size, shaped: shaped})
}

// benchOpts are the settings of one forwarding benchmark.
type benchOpts struct {
	size   int
	shaped bool
	// postcards is the file to record postcards into; empty: none.
	postcards string
	// mode and modeArg are the egress port's switch mode.
	mode    Mode
	modeArg uint32
	// homa sends Homa DATA frames instead of UDP ones.
	homa bool
	// pfc is the switch's PFC (zero: off).
	pfc PFC
}

// benchForwardWith is benchForward with the settings of o.
func benchForwardWith(b *testing.B, o benchOpts) {
	size, shaped, postcards := o.size, o.shaped, o.postcards
	frame := makeFrame(size, 2, 5, 1)
	if o.homa {
		frame = makeHomaData(size, 2, 5, 1000, 1)
	}
	sink := newSinkPort(int64(b.N))
	gen := &genPort{frame: frame, total: int64(b.N), window: 48,
		sink: sink, start: make(chan struct{}), done: make(chan struct{})}
	pl := &testPipeline{mode: o.mode, modeArg: o.modeArg}
	pl.route[2] = 2
	cfg := Config{
		Ports:    map[uint16]string{1: "gen", 2: "sink"},
		Unshaped: !shaped,
		// Far above what the CPU forwards, so the shaper's bookkeeping
		// runs on every frame without limiting the rate.
		LinkRateBps: 400e9,
		PFC:         o.pfc,
	}
	d, err := NewWithPorts(cfg, pl, map[uint16]Port{1: gen, 2: sink})
	if err != nil {
		b.Fatal(err)
	}
	if postcards != "" {
		if err := d.StartPostcards(postcards); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	time.Sleep(10 * time.Millisecond) // let the goroutines park
	b.ReportAllocs()
	b.ResetTimer()
	close(gen.start)
	select {
	case <-sink.all:
	case <-time.After(time.Minute):
		b.Fatalf("forwarded %d of %d", sink.got.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
	if postcards != "" {
		s, err := d.StopPostcards()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(s.Dropped)/float64(b.N), "dropped/op")
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	out := d.Stats().Ports[1]
	for _, q := range out.Queues {
		if q.DropPkts != 0 {
			b.Fatalf("%d tail drops in queue %d", q.DropPkts, q.Queue)
		}
	}
	if o.mode == ModeTrimAbove {
		b.ReportMetric(float64(out.TrimmedPkts)/float64(b.N), "trimmed/op")
	}
}
