package homa_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/wire"
)

var (
	clientAddr = netip.MustParseAddr("10.0.0.1")
	serverAddr = netip.MustParseAddr("10.0.0.2")
)

const serverPort = 99

// fill, echoServer and serveEcho are homatest's, named short for the tests here.
func fill(b []byte, tag uint64) { homatest.Fill(b, tag) }

type echoServer = homatest.EchoServer

func serveEcho(ctx context.Context, t testing.TB, srv *homa.Server) *echoServer {
	return homatest.ServeEcho(ctx, t, srv)
}

// pair builds a client and a server endpoint on one in-memory network.
func pair(t *testing.T, lc homatest.LinkConfig, cfg homaconf.Config) (client *homa.Endpoint, server *homa.Server, network *homatest.Network) {
	t.Helper()
	network = homatest.NewNetwork(lc)
	client, se := attach(t, network, clientAddr, cfg), attach(t, network, serverAddr, cfg)
	srv, err := se.Listen(serverPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(network.Close)
	return client, srv, network
}

// attach starts an endpoint at address a of network, closed in t.Cleanup.
func attach(t *testing.T, network *homatest.Network, a netip.Addr, cfg homaconf.Config) *homa.Endpoint {
	t.Helper()
	c, err := network.NewConn(a)
	if err != nil {
		t.Fatal(err)
	}
	e, err := homa.NewEndpoint(c, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestCallSizes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		client, srv, _ := pair(t, homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond}, homaconf.Config{})
		serveEcho(ctx, t, srv)
		dest := netip.AddrPortFrom(serverAddr, serverPort)
		for i, n := range []int{1, 100, 1423, 1424, 1425, 20_000, 100_000, 1_000_000} {
			req := make([]byte, n)
			fill(req, uint64(i))
			resp, info, err := client.Call(ctx, dest, req)
			if err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			if !bytes.Equal(resp, req) {
				t.Fatalf("%d bytes: response differs", n)
			}
			if info.Done.Before(info.Sent) || info.FirstResponse.IsZero() {
				t.Fatalf("%d bytes: info %+v", n, info)
			}
		}
		s := client.Stats()
		if s.CallsCompleted != 8 || s.Malformed != 0 {
			t.Fatalf("stats: %+v", s)
		}
	})
}

func TestCallErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		client, srv, _ := pair(t, homatest.LinkConfig{Rate: 1e9}, homaconf.Config{TimeoutTicks: 20})
		_ = srv // listening but never receiving: the request sits in the backlog
		tests := []struct {
			name string
			dest netip.AddrPort
			req  []byte
			ctx  func() (context.Context, context.CancelFunc)
			want error
		}{
			{"no server on port", netip.AddrPortFrom(serverAddr, 7), []byte("x"), nil, homa.ErrPeerUnknown},
			{"no host", netip.AddrPortFrom(netip.MustParseAddr("10.9.9.9"), 7), []byte("x"), nil, homa.ErrTimeout},
			{"too large", netip.AddrPortFrom(serverAddr, serverPort), make([]byte, 1_000_001), nil, homa.ErrTooLarge},
			{"empty", netip.AddrPortFrom(serverAddr, serverPort), nil, nil, homa.ErrTooLarge},
			{"cancelled", netip.AddrPortFrom(serverAddr, serverPort), []byte("x"), func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 3*time.Millisecond)
			}, homa.ErrAborted},
		}
		for _, tt := range tests {
			c, cancel := ctx, context.CancelFunc(func() {})
			if tt.ctx != nil {
				c, cancel = tt.ctx()
			}
			_, _, err := client.Call(c, tt.dest, tt.req)
			cancel()
			if !errors.Is(err, tt.want) {
				t.Errorf("%s: err %v, want %v", tt.name, err, tt.want)
			}
		}
		client.Close()
		if _, _, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), []byte("x")); !errors.Is(err, homa.ErrClosed) {
			t.Errorf("after close: err %v, want ErrClosed", err)
		}
	})
}

// TestLoss runs many concurrent RPCs of mixed sizes over a lossy,
// reordering network: every one must complete with the right content and,
// in at-most-once mode, no request may run twice.
func TestLoss(t *testing.T) {
	for _, tt := range []struct {
		loss        float64
		atLeastOnce bool
	}{{0.01, false}, {0.10, false}, {0.10, true}} {
		t.Run(fmt.Sprintf("loss=%v,at_least_once=%v", tt.loss, tt.atLeastOnce), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				lc := homatest.LinkConfig{Rate: 10e9, Delay: 5 * time.Microsecond, Loss: tt.loss, Reorder: 0.02, Seed: 7}
				cfg := homaconf.Config{AtLeastOnce: tt.atLeastOnce, LinkBps: 10e9, Tick: 200 * time.Microsecond}
				client, srv, network := pair(t, lc, cfg)
				es := serveEcho(ctx, t, srv)
				dest := netip.AddrPortFrom(serverAddr, serverPort)
				rng := rand.New(rand.NewPCG(1, 2))
				sizes := []int{10, 500, 3000, 15_000, 70_000, 300_000}
				const rpcs, parallel = 300, 16
				var wg sync.WaitGroup
				errs := make(chan error, rpcs)
				sem := make(chan struct{}, parallel)
				for i := range rpcs {
					req := make([]byte, sizes[rng.IntN(len(sizes))])
					fill(req, uint64(i))
					sem <- struct{}{}
					wg.Go(func() {
						defer func() { <-sem }()
						resp, _, err := client.Call(ctx, dest, req)
						switch {
						case err != nil:
							errs <- fmt.Errorf("rpc %d (%d bytes): %w", i, len(req), err)
						case !bytes.Equal(resp, req):
							errs <- fmt.Errorf("rpc %d (%d bytes): wrong response", i, len(req))
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				if n := network.Stats().Lost; tt.loss > 0 && n == 0 {
					t.Errorf("network lost no packets")
				}
				if d := es.Duplicates(); !tt.atLeastOnce && d != 0 {
					t.Errorf("%d requests executed twice in at-most-once mode", d)
				}
				st := client.Stats()
				t.Logf("net %+v; client resends %d retransmits %d restarts %d; duplicates %d",
					network.Stats(), st.ResendsSent, st.Retransmits, st.Restarts, es.Duplicates())
			})
		})
	}
}

// TestPoll runs RPCs over a lossy in-memory network with waiters polling
// the Conn (Config.Poll), so packets are handled by the reader and by
// waiting Calls and Receives at once: every response must still be right,
// no request may run twice, and waiters must have read some batches. It
// runs on the real clock: a polling waiter never blocks, so the fake
// clock of testing/synctest would not advance past its budget.
func TestPoll(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	lc := homatest.LinkConfig{Rate: 10e9, Delay: 5 * time.Microsecond, Loss: 0.01, Reorder: 0.02, Seed: 3}
	cfg := homaconf.Config{LinkBps: 10e9, Tick: time.Millisecond, Poll: 200 * time.Microsecond}
	client, srv, network := pair(t, lc, cfg)
	es := serveEcho(ctx, t, srv)
	homatest.CheckMixedRPCs(ctx, t, client, es, netip.AddrPortFrom(serverAddr, serverPort), 500, 4, 5)
	if n := network.Stats().Lost; n == 0 {
		t.Error("network lost no packets")
	}
	if st := client.Stats(); st.PolledBatches == 0 {
		t.Errorf("no batch was read by a waiting Call: %+v", st)
	}
}

// TestRequestLostRepeatedly loses a request five times before the server
// sees it: each time the client's RESEND meets RPC_UNKNOWN and it starts
// again, and the Call must still succeed; such restarts do not count as the
// refusals that end a Call to a port nobody serves.
func TestRequestLostRepeatedly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var lost atomic.Int32
		lc := homatest.LinkConfig{Rate: 1e9, Delay: 5 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
			c, err := wire.ParseCommon(p.Buf)
			return err == nil && src == clientAddr && c.Type == wire.TypeData && lost.Add(1) <= 5
		}}
		client, srv, _ := pair(t, lc, homaconf.Config{})
		serveEcho(ctx, t, srv)
		req := []byte("lost five times")
		resp, info, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), req)
		if err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("call: %q, %v", resp, err)
		}
		if info.Restarts != 5 {
			t.Errorf("%d restarts, want 5 (one per lost request)", info.Restarts)
		}
	})
}

// serveFixed answers every request on srv with resp until ctx ends.
func serveFixed(ctx context.Context, srv *homa.Server, resp []byte) {
	go func() {
		for {
			rpc, err := srv.Receive(ctx)
			if err != nil {
				return
			}
			_ = rpc.Reply(resp)
		}
	}()
}

// TestCallInfoGrants: a 1 MB request and a 1 MB response each need grants;
// CallInfo counts them and, with TraceGrants, lists each one in order:
// offsets growing to the message's length, times within the Call, the
// received ones for the request and the sent ones for the response.
func TestCallInfoGrants(t *testing.T) {
	const size = 1_000_000
	for _, trace := range []bool{false, true} {
		t.Run(fmt.Sprintf("trace=%v", trace), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				client, srv, _ := pair(t, homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond}, homaconf.Config{TraceGrants: trace})
				resp := make([]byte, size)
				serveFixed(ctx, srv, resp)
				_, info, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), make([]byte, size))
				if err != nil {
					t.Fatal(err)
				}
				if info.GrantsReceived == 0 || info.GrantsSent == 0 || info.FirstGrant.IsZero() || info.LastGrant.Before(info.FirstGrant) {
					t.Fatalf("grants received %d sent %d, first %v last %v", info.GrantsReceived, info.GrantsSent, info.FirstGrant, info.LastGrant)
				}
				if !trace {
					if info.Grants != nil {
						t.Errorf("%d grants traced without TraceGrants", len(info.Grants))
					}
					return
				}
				var last [2]uint32 // by direction: received, sent
				var n [2]int
				var firstIn, lastIn time.Time
				for i, g := range info.Grants {
					d := 0
					if g.Sent {
						d = 1
					} else {
						if firstIn.IsZero() {
							firstIn = g.At
						}
						lastIn = g.At
					}
					if g.Offset < last[d] || g.At.Before(info.Sent) || g.At.After(info.Done) || g.Priority > 7 {
						t.Fatalf("grant %d %+v after offset %d, outside the call %v .. %v", i, g, last[d], info.Sent, info.Done)
					}
					last[d] = g.Offset
					n[d]++
				}
				if n[0] != info.GrantsReceived || n[1] != info.GrantsSent || last[0] != size || last[1] != size {
					t.Errorf("traced %d received (to offset %d) and %d sent (to %d); counted %d and %d of %d-byte messages",
						n[0], last[0], n[1], last[1], info.GrantsReceived, info.GrantsSent, size)
				}
				if !firstIn.Equal(info.FirstGrant) || !lastIn.Equal(info.LastGrant) {
					t.Errorf("received grants traced %v .. %v, counted first %v last %v", firstIn, lastIn, info.FirstGrant, info.LastGrant)
				}
			})
		})
	}
}
