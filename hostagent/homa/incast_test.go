package homa_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
)

// incastPeak runs one client with 32 outstanding RPCs to 8 servers that
// each answer with 100 KB, and returns the deepest link queue seen.
func incastPeak(t *testing.T, cfg homaconf.Config) (uint64, homa.Stats) {
	var peak uint64
	var stats homa.Stats
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		network := homatest.NewNetwork(homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond})
		defer network.Close()
		client := attach(t, network, clientAddr, cfg)
		resp := make([]byte, 100_000)
		fill(resp, 99)
		var dests []netip.AddrPort
		for i := range 8 {
			a := netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)})
			srv, err := attach(t, network, a, cfg).Listen(serverPort)
			if err != nil {
				t.Fatal(err)
			}
			serveFixed(ctx, srv, resp)
			dests = append(dests, netip.AddrPortFrom(a, serverPort))
		}
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() {
				got, _, err := client.Call(ctx, dests[i%8], []byte(fmt.Sprint(i)))
				if err != nil || !bytes.Equal(got, resp) {
					t.Errorf("rpc %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		peak, stats = network.Stats().MaxQueueBytes, client.Stats()
	})
	return peak, stats
}

// TestIncastControl: with incast control the client marks its requests
// once it has many outstanding, servers answer with one unscheduled packet
// and the client's grants pace the rest, so the queue at the client's
// downlink stays far below the burst of every server's unscheduled bytes.
func TestIncastControl(t *testing.T) {
	cfg := homaconf.Config{LinkBps: 1e9, UnschedBytes: 20_000, IncastThreshold: 4}
	off, _ := incastPeak(t, cfg)
	cfg.IncastControl = true
	on, st := incastPeak(t, cfg)
	t.Logf("peak queue: %d B without incast control, %d B with", off, on)
	if on*2 > off {
		t.Errorf("incast control left a peak queue of %d B, not below half of %d B", on, off)
	}
	if st.GrantsByPriority == [8]uint64{} {
		t.Errorf("client sent no grants for the responses")
	}
}
