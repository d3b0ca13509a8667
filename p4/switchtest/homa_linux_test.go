package switchtest

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/p4"
)

// TestHomaThroughSwitch runs 10,000 Homa RPCs of mixed sizes between the
// rack's two hosts over raw sockets, through the embedded switch
// programmed only over P4Runtime, and checks every response byte, that no
// request ran twice, and that the switch queued Homa's packets by the
// priority in their DSCP: control and unscheduled packets in queue 7,
// scheduled ones lower. (A test-only use of the host stack: p4 itself
// imports nothing of it.)
func TestHomaThroughSwitch(t *testing.T) {
	hs := newHosts(t)
	r := newRack(t, hs, nil)
	r.program(t)

	cfg := homaconf.Config{LinkBps: 1e9, UnloadedRTT: 100 * time.Microsecond}
	var eps [2]*homa.Endpoint
	for i, h := range hs {
		var conn *homa.RawConn
		if err := ns.WithNetNSPath("/var/run/netns/"+h.netns, func(ns.NetNS) (err error) {
			conn, err = homa.ListenRaw(netip.AddrFrom4([4]byte(h.ip)))
			return err
		}); err != nil {
			t.Fatalf("raw socket in %s: %v", h.netns, err)
		}
		ep, err := homa.NewEndpoint(conn, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		eps[i] = ep
	}
	const port = 700
	srv, err := eps[1].Listen(port)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	es := homatest.ServeEcho(ctx, t, srv)
	dest := netip.AddrPortFrom(netip.AddrFrom4([4]byte(hs[1].ip)), port)
	const rpcs, parallel = 10_000, 16
	homatest.CheckMixedRPCs(ctx, t, eps[0], es, dest, rpcs, parallel, 11)

	// Towards the server: requests' unscheduled bytes and the client's
	// control packets in queue 7, granted bytes of long requests lower.
	var top, below int64
	for q := range uint8(8) {
		pkts, _ := r.counter(t, p4.CounterEgressQueue, hs[1].port, q)
		if q == 7 {
			top = pkts
		} else {
			below += pkts
		}
	}
	if top == 0 || below == 0 {
		t.Errorf("egress port %d: %d packets in queue 7, %d below it; want both (priorities from DSCP)", hs[1].port, top, below)
	}
	st := eps[0].Stats()
	t.Logf("%d RPCs; port %d: %d packets in queue 7, %d below; client resends %d, malformed %d", rpcs, hs[1].port, top, below, st.ResendsSent, st.Malformed)
}
