package homa_test

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
)

// TestIncastProbesOvertakeBulk mirrors scenarios/incast.yaml on the
// in-memory network: 8 senders keep one 1 MB request each outstanding to
// one server while a ninth host sends 100 B probes to it, every link at
// 100 Mbit/s. MaxIncoming lets the bulk fill most of the downlink queue,
// as TCP would; the probes' unscheduled packets go at a higher priority
// than the bulk's scheduled ones, so their P99 must stay far below what a
// FIFO queue of the same depth adds (30.7 ms), and the grants must still
// keep the server's downlink busy. With Priorities: 1 this test fails.
func TestIncastProbesOvertakeBulk(t *testing.T) {
	const (
		rate       = 100e6
		queueBytes = 256 * 1500
		bulkLen    = 1_000_000
	)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cfg := homaconf.Config{LinkBps: rate, UnloadedRTT: 400 * time.Microsecond, Overcommit: 2, MaxIncoming: 300_000}
		network := homatest.NewNetwork(homatest.LinkConfig{Rate: rate, Delay: 20 * time.Microsecond, QueueBytes: queueBytes})
		t.Cleanup(network.Close)
		srv, err := attach(t, network, serverAddr, cfg).Listen(serverPort)
		if err != nil {
			t.Fatal(err)
		}
		serveFixed(ctx, srv, make([]byte, 100))
		dest := netip.AddrPortFrom(serverAddr, serverPort)
		start := time.Now()
		deadline := start.Add(2 * time.Second)
		var wg sync.WaitGroup
		var mu sync.Mutex
		bulkDone := 0
		for i := range 8 {
			ep := attach(t, network, netip.AddrFrom4([4]byte{10, 0, 2, byte(i + 1)}), cfg)
			wg.Go(func() {
				big := make([]byte, bulkLen)
				for time.Now().Before(deadline) {
					if _, _, err := ep.Call(ctx, dest, big); err != nil {
						t.Errorf("bulk call from sender %d: %v", i, err)
						return
					}
					mu.Lock()
					bulkDone++
					mu.Unlock()
				}
			})
		}
		probe := attach(t, network, clientAddr, cfg)
		var rtts []time.Duration
		time.Sleep(200 * time.Millisecond) // let the bulk fill the queues
		for time.Now().Before(deadline) {
			begin := time.Now()
			if _, _, err := probe.Call(ctx, dest, make([]byte, 100)); err != nil {
				t.Fatalf("probe: %v", err)
			}
			rtts = append(rtts, time.Since(begin))
			time.Sleep(5 * time.Millisecond)
		}
		wg.Wait()
		elapsed := time.Since(start)
		slices.Sort(rtts)
		p99 := rtts[len(rtts)*99/100]
		fifo := time.Duration(queueBytes * 8 / rate * float64(time.Second))
		goodput := float64(bulkDone*bulkLen*8) / elapsed.Seconds() / rate
		t.Logf("%d probes: p50 %v p99 %v; %d bulk messages, goodput %.2f of the link; network %+v",
			len(rtts), rtts[len(rtts)/2], p99, bulkDone, goodput, network.Stats())
		if p99 > fifo/10 {
			t.Errorf("probe P99 %v, want at most a tenth of the %v a FIFO queue of %d bytes would add", p99, fifo, queueBytes)
		}
		// The payload ceiling is about 0.92 (headers and framing); SRPT
		// with two active messages should keep the downlink near it.
		if goodput < 0.8 {
			t.Errorf("bulk goodput %.2f of the link rate, want at least 0.80", goodput)
		}
	})
}
