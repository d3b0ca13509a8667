package homa_test

import (
	"context"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
)

// TestPacerFraming sends one 1 MB message over a 1 Gbit/s link that
// charges 14 B per packet beyond the IP packet (a veth shaped by htb) or
// 42 B (an Ethernet wire), with the pacer's FrameOverhead matching it or
// not. A pacer that overcharges leaves the link idle for the difference; a
// matched one fills it to its 99% model, and neither builds a queue in
// the host beyond its backlog. Fake time: the figures are exact.
func TestPacerFraming(t *testing.T) {
	const size, link = 1_000_000, 1e9
	for _, tt := range []struct {
		name          string
		link, pacer   int
		lowest, upper float64 // bounds of goodput / link rate
		queueGrows    bool    // the pacer undercharges: the host queue outgrows its backlog
	}{
		// 1424 payload bytes per 1514 charged, at 99%: 0.931, a little
		// more for the backlog sent ahead at the start.
		{"htb link, matched", 14, 14, 0.925, 0.94, false},
		// The pacer charges 1542 where the link takes 1514: 0.914.
		{"htb link, Ethernet pacer", 14, 42, 0.905, 0.92, false},
		// 1424 per 1542, at 99%: 0.914.
		{"Ethernet link, matched", 42, 42, 0.905, 0.92, false},
		// The pacer charges 1514 where the link takes 1542: the link is
		// full (0.923) and the host queue grows by 28 B a packet.
		{"Ethernet link, htb pacer", 42, 14, 0.915, 0.93, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				cfg := homaconf.Config{LinkBps: link, FrameOverhead: tt.pacer}
				client, srv, network := pair(t, homatest.LinkConfig{Rate: link, FrameOverhead: tt.link,
					Delay: 2 * time.Microsecond}, cfg)
				serveFixed(ctx, srv, []byte{1})
				start := time.Now()
				if _, _, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), make([]byte, size)); err != nil {
					t.Fatal(err)
				}
				g := size * 8 / time.Since(start).Seconds() / link
				q := network.Stats().MaxQueueBytes
				t.Logf("goodput %.4f of the link, deepest queue %d B", g, q)
				if g < tt.lowest || g > tt.upper {
					t.Errorf("goodput %.4f of the link, want %.3f..%.3f", g, tt.lowest, tt.upper)
				}
				// The default backlog is four full packets.
				if backlog := 5 * 1500; (q > uint64(backlog)) != tt.queueGrows {
					t.Errorf("deepest link queue %d B; want it beyond the pacer's backlog (%d B): %v", q, backlog, tt.queueGrows)
				}
			})
		})
	}
}
