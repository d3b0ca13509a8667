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

func benchForward(b *testing.B, size int, shaped bool) { benchForwardWith(b, size, shaped, "") }

// benchForwardWith is benchForward recording postcards into postcards
// unless it is empty.
func benchForwardWith(b *testing.B, size int, shaped bool, postcards string) {
	sink := newSinkPort(int64(b.N))
	gen := &genPort{frame: makeFrame(size, 2, 5, 1), total: int64(b.N), window: 48,
		sink: sink, start: make(chan struct{}), done: make(chan struct{})}
	pl := &testPipeline{}
	pl.route[2] = 2
	cfg := Config{
		Ports:    map[uint16]string{1: "gen", 2: "sink"},
		Unshaped: !shaped,
		// Far above what the CPU forwards, so the shaper's bookkeeping
		// runs on every frame without limiting the rate.
		LinkRateBps: 400e9,
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
	if drops := d.Stats().Ports[1].Queues[5].DropPkts; drops != 0 {
		b.Fatalf("%d tail drops", drops)
	}
}
