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

// shortUnderLoad returns the median RTT of 100-byte RPCs from one client
// while another client keeps four 1 MB requests in flight to the same
// server, so the server's downlink is the bottleneck.
func shortUnderLoad(t *testing.T, cfg homaconf.Config) time.Duration {
	var median time.Duration
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		network := homatest.NewNetwork(homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond})
		t.Cleanup(network.Close)
		bulk := attach(t, network, netip.MustParseAddr("10.0.0.3"), cfg)
		short := attach(t, network, clientAddr, cfg)
		srv, err := attach(t, network, serverAddr, cfg).Listen(serverPort)
		if err != nil {
			t.Fatal(err)
		}
		serveFixed(ctx, srv, []byte{1})
		dest := netip.AddrPortFrom(serverAddr, serverPort)
		big := make([]byte, 1_000_000)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 6 {
					if _, _, err := bulk.Call(ctx, dest, big); err != nil {
						t.Errorf("bulk: %v", err)
						return
					}
				}
			})
		}
		time.Sleep(2 * time.Millisecond) // let the bulk transfers fill the queues
		var rtts []time.Duration
		for range 200 {
			start := time.Now()
			if _, _, err := short.Call(ctx, dest, make([]byte, 100)); err != nil {
				t.Fatalf("short: %v", err)
			}
			rtts = append(rtts, time.Since(start))
			time.Sleep(50 * time.Microsecond)
		}
		wg.Wait()
		slices.Sort(rtts)
		median = rtts[len(rtts)/2]
	})
	return median
}

// TestPrioritiesMatter: with 8 levels short requests travel on the top
// unscheduled level and overtake the scheduled bulk bytes queued at the
// server's downlink; with one level they wait behind them.
func TestPrioritiesMatter(t *testing.T) {
	eight := shortUnderLoad(t, homaconf.Config{LinkBps: 1e9})
	one := shortUnderLoad(t, homaconf.Config{LinkBps: 1e9, Priorities: 1})
	t.Logf("median short RTT under load: %v with 8 priorities, %v with 1", eight, one)
	if eight*2 > one {
		t.Errorf("8 priorities gave %v, not below half of the %v with one level", eight, one)
	}
}

// TestDynamicCutoffs: a server learns cutoffs from the request sizes it
// receives, sends them to the client in CUTOFFS packets, and the client
// then spreads its unscheduled bytes over several priority levels.
func TestDynamicCutoffs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		client, srv, _ := pair(t, homatest.LinkConfig{Rate: 10e9}, homaconf.Config{LinkBps: 10e9, CutoffSamples: 200})
		serveEcho(ctx, t, srv)
		dest := netip.AddrPortFrom(serverAddr, serverPort)
		for i := range 1000 {
			// Sizes spread over 20 B .. 10 KB, so equal-byte levels exist.
			if _, _, err := client.Call(ctx, dest, make([]byte, 20+(i*7919)%10_000)); err != nil {
				t.Fatal(err)
			}
		}
		st := client.Stats()
		if st.RxPackets[5][7] == 0 { // index 5: CUTOFFS
			t.Fatalf("client received no CUTOFFS")
		}
		levels := 0
		for _, n := range st.TxPackets[0] { // index 0: DATA
			if n > 0 {
				levels++
			}
		}
		if levels < 3 {
			t.Errorf("client DATA used %d priority levels (%v), want at least 3", levels, st.TxPackets[0])
		}
	})
}
