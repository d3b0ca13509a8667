//go:build linux

package homa_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homatest"
)

// rawPair starts a Homa endpoint in each namespace of v.
func rawPair(t testing.TB, v *vethPair, cfg homa.Config) (client, server *homa.Endpoint) {
	t.Helper()
	var eps [2]*homa.Endpoint
	for i := range 2 {
		var conn *homa.RawConn
		if err := inNetns(v.ns[i], func() (err error) {
			conn, err = homa.ListenRaw(v.addr[i])
			return err
		}); err != nil {
			t.Fatal(err)
		}
		e, err := homa.NewEndpoint(conn, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		eps[i] = e
	}
	return eps[0], eps[1]
}

// TestRawNamespaces runs 10,000 RPCs of mixed sizes between two namespaces
// over veth with raw sockets and checks every response.
func TestRawNamespaces(t *testing.T) {
	v := newVethPair(t, "raw", 0)
	client, se := rawPair(t, v, homa.Config{LinkBps: 10e9, UnloadedRTT: 50 * time.Microsecond})
	srv, err := se.Listen(serverPort)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	es := serveEcho(ctx, t, srv)
	dest := netip.AddrPortFrom(v.addr[1], serverPort)
	const rpcs, parallel = 10_000, 16
	start := time.Now()
	failed := homatest.MixedRPCs(ctx, client, dest, rpcs, parallel, 3)
	for i, f := range failed {
		if i < 10 {
			t.Error(f)
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d RPCs failed", len(failed), rpcs)
	}
	if d := es.Duplicates(); d != 0 {
		t.Errorf("%d requests executed twice", d)
	}
	st := client.Stats()
	t.Logf("%d RPCs in %v; client: tx %d B in %d batches, rx %d batches, resends %d, malformed %d",
		rpcs, time.Since(start).Round(time.Millisecond), st.TxBytes, st.TxBatches, st.RxBatches, st.ResendsSent, st.Malformed)
}
