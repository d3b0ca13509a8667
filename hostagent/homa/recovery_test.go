package homa_test

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/wire"
)

// TestRecoveryFrom: an RPC records when it began waiting for a lost
// packet, for the latency anatomy's "recovery": the client for a lost
// response packet or a lost request (restart), the server for a lost
// request packet; zero where nothing was lost. The wait begins at the last
// sign of progress before the RESEND that found the loss, so it covers the
// silence that detected it.
func TestRecoveryFrom(t *testing.T) {
	const tick = time.Millisecond
	for _, tt := range []struct {
		name string
		// lose picks the packet to drop: its source and its DATA offset.
		from   netip.Addr
		offset uint32
		size   int
		// client, server: whether each side records a wait.
		client, server bool
	}{
		{"nothing lost", netip.Addr{}, 0, 100, false, false},
		{"short request", clientAddr, 0, 100, true, false},
		{"short response", serverAddr, 0, 100, true, false},
		{"long request, a middle packet", clientAddr, 4 * 1424, 30_000, false, true},
		{"long response, a middle packet", serverAddr, 4 * 1424, 30_000, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var dropped atomic.Bool
				lc := homatest.LinkConfig{Rate: 1e9, Delay: 5 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
					d, _, err := wire.ParseData(p.Buf)
					return err == nil && src == tt.from && d.Type == wire.TypeData && d.Offset == tt.offset &&
						d.Retransmit == 0 && dropped.CompareAndSwap(false, true)
				}}
				client, srv, _ := pair(t, lc, homaconf.Config{Tick: tick})
				serverWait := make(chan time.Time, 1)
				go func() {
					rpc, err := srv.Receive(ctx)
					if err != nil {
						return
					}
					serverWait <- rpc.RecoveryFrom()
					rpc.Reply(rpc.Request())
				}()
				req := make([]byte, tt.size)
				start := time.Now()
				_, info, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), req)
				if err != nil {
					t.Fatal(err)
				}
				done := time.Now()
				sw := <-serverWait
				check := func(side string, want bool, from time.Time) {
					switch {
					case !want && !from.IsZero():
						t.Errorf("%s: recovery from %v, want none", side, from.Sub(start))
					case want && from.IsZero():
						t.Errorf("%s: no recovery recorded", side)
					case want && (from.Before(start) || from.After(done.Add(-4*tick))):
						// The wait covers the silence of ResendTicks (5)
						// ticks that found the loss, less the tick's phase.
						t.Errorf("%s: recovery from %v of a %v call, want at least its last 4 ticks in it", side, from.Sub(start), done.Sub(start))
					}
				}
				check("client", tt.client, info.RecoveryFrom)
				check("server", tt.server, sw)
				if tt.from.IsValid() && !dropped.Load() {
					t.Error("the packet to lose never went")
				}
			})
		})
	}
}
