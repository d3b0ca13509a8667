//go:build linux

package homa_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
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
	sizes := []int{64, 100, 500, 1000, 1500, 3000, 10_000, 50_000, 200_000}
	weights := []int{20, 20, 15, 10, 10, 10, 8, 5, 2}
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func() int {
		x := rng.IntN(100)
		for i, w := range weights {
			if x < w {
				return sizes[i]
			}
			x -= w
		}
		return sizes[0]
	}
	const rpcs, parallel = 10_000, 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	sem := make(chan struct{}, parallel)
	start := time.Now()
	for i := range rpcs {
		req := make([]byte, pick())
		fill(req, uint64(i))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resp, _, err := client.Call(ctx, dest, req)
			if err == nil && !bytes.Equal(resp, req) {
				err = fmt.Errorf("wrong response")
			}
			if err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("rpc %d (%d bytes): %v", i, len(req), err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, f := range failed {
		if i < 10 {
			t.Error(f)
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d RPCs failed", len(failed), rpcs)
	}
	if d := es.duplicates(); d != 0 {
		t.Errorf("%d requests executed twice", d)
	}
	st := client.Stats()
	t.Logf("%d RPCs in %v; client: tx %d B in %d batches, rx %d batches, resends %d, malformed %d",
		rpcs, time.Since(start).Round(time.Millisecond), st.TxBytes, st.TxBatches, st.RxBatches, st.ResendsSent, st.Malformed)
}
