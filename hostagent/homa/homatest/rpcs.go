package homatest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"

	"github.com/homatb/homatb/hostagent/homa"
)

// Fill writes a pattern derived from tag into b; the first 8 bytes (when
// they fit) carry the tag itself so an EchoServer can count executions.
func Fill(b []byte, tag uint64) {
	x := tag*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	if len(b) >= 8 {
		binary.BigEndian.PutUint64(b, tag)
	}
}

// EchoServer replies to each request with the request itself and counts
// how often each tag was executed.
type EchoServer struct {
	mu   sync.Mutex
	runs map[uint64]int
}

// ServeEcho serves srv until ctx ends.
func ServeEcho(ctx context.Context, t testing.TB, srv *homa.Server) *EchoServer {
	return ServeFunc(ctx, t, srv, func(req []byte) []byte { return req })
}

// ServeFunc serves srv until ctx ends, answering each request with
// respond(request) and counting executions by tag as ServeEcho does.
func ServeFunc(ctx context.Context, t testing.TB, srv *homa.Server, respond func([]byte) []byte) *EchoServer {
	es := &EchoServer{runs: map[uint64]int{}}
	go func() {
		for {
			rpc, err := srv.Receive(ctx)
			if err != nil {
				return
			}
			req := rpc.Request()
			if len(req) >= 8 {
				es.mu.Lock()
				es.runs[binary.BigEndian.Uint64(req)]++
				es.mu.Unlock()
			}
			// ErrPeerUnknown: the client restarted the RPC meanwhile.
			if err := rpc.Reply(respond(req)); err != nil && !errors.Is(err, homa.ErrClosed) && !errors.Is(err, homa.ErrPeerUnknown) {
				t.Errorf("reply: %v", err)
			}
		}
	}()
	return es
}

// Duplicates is how many requests ran more than once, in all.
func (es *EchoServer) Duplicates() int {
	es.mu.Lock()
	defer es.mu.Unlock()
	n := 0
	for _, c := range es.runs {
		n += c - 1
	}
	return n
}

// MixedRPCs issues n echo RPCs of mixed sizes (64 B to 200 KB, mostly
// short), parallel at a time, from client to dest and checks every
// response byte; it returns one line per failed RPC.
func MixedRPCs(ctx context.Context, client *homa.Endpoint, dest netip.AddrPort, n, parallel int, seed uint64) []string {
	sizes := []int{64, 100, 500, 1000, 1500, 3000, 10_000, 50_000, 200_000}
	weights := []int{20, 20, 15, 10, 10, 10, 8, 5, 2} // percent
	rng := rand.New(rand.NewPCG(seed, seed+1))
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
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	sem := make(chan struct{}, parallel)
	for i := range n {
		req := make([]byte, pick())
		Fill(req, uint64(i))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resp, _, err := client.Call(ctx, dest, req)
			if err == nil && !bytes.Equal(resp, req) {
				err = fmt.Errorf("response differs from the request")
			}
			if err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("rpc %d (%d bytes): %v", i, len(req), err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed
}

// CheckMixedRPCs runs MixedRPCs against the echo server es and fails t
// for any failed RPC (listing up to ten) or any request es ran twice.
func CheckMixedRPCs(ctx context.Context, t testing.TB, client *homa.Endpoint, es *EchoServer, dest netip.AddrPort, n, parallel int, seed uint64) {
	t.Helper()
	failed := MixedRPCs(ctx, client, dest, n, parallel, seed)
	for i, f := range failed {
		if i < 10 {
			t.Error(f)
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d RPCs failed", len(failed), n)
	}
	if d := es.Duplicates(); d != 0 {
		t.Errorf("%d requests executed twice", d)
	}
}
