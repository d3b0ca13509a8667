package homa_test

import (
	"bytes"
	"context"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/wire"
)

// TestStartMsg: with StartMsg a 1 MB request and its 1 MB echo each go
// out as one START_MSG and then only granted DATA (none at the top level,
// where unscheduled bytes would go); a 100 B request still goes
// unscheduled, without a START_MSG.
func TestStartMsg(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		starts, topData := 0, 0
		lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
			mu.Lock()
			defer mu.Unlock()
			switch packetType(p) {
			case wire.TypeStartMsg:
				starts++
			case wire.TypeData:
				if d, _, err := wire.ParseData(p.Buf); err == nil && d.MessageLength == 1_000_000 && homa.Priority(p.TOS) == 7 {
					topData++
				}
			}
			return false
		}}
		client, srv, _ := pair(t, lc, homaconf.Config{StartMsg: true})
		serveEcho(ctx, t, srv)
		dest := netip.AddrPortFrom(serverAddr, serverPort)
		for _, n := range []int{100, 1_000_000} {
			req := make([]byte, n)
			fill(req, uint64(n))
			resp, info, err := client.Call(ctx, dest, req)
			if err != nil || !bytes.Equal(resp, req) {
				t.Fatalf("%d B: %v", n, err)
			}
			if n > 100 && (info.GrantsReceived == 0 || info.GrantsSent == 0) {
				t.Errorf("1 MB: %d grants received, %d sent", info.GrantsReceived, info.GrantsSent)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if starts != 2 || topData != 0 {
			t.Errorf("%d START_MSGs and %d DATA packets of the 1 MB messages at the top level, want 2 and 0", starts, topData)
		}
	})
}

// TestStartMsgLoss: mixed RPCs with StartMsg over a network that loses
// 5% of packets and, besides, the first START_MSG in each direction: every
// RPC completes with the right bytes and none runs twice.
func TestStartMsgLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		lostFrom := map[netip.Addr]bool{}
		lc := homatest.LinkConfig{Rate: 10e9, Delay: 5 * time.Microsecond, Loss: 0.05, Reorder: 0.02, Seed: 11,
			Drop: func(src netip.Addr, p homa.Packet) bool {
				if packetType(p) != wire.TypeStartMsg {
					return false
				}
				mu.Lock()
				defer mu.Unlock()
				if lostFrom[src] {
					return false
				}
				lostFrom[src] = true
				return true
			}}
		cfg := homaconf.Config{StartMsg: true, LinkBps: 10e9, Tick: 200 * time.Microsecond}
		client, srv, network := pair(t, lc, cfg)
		es := serveEcho(ctx, t, srv)
		homatest.CheckMixedRPCs(ctx, t, client, es, netip.AddrPortFrom(serverAddr, serverPort), 300, 8, 9)
		mu.Lock()
		defer mu.Unlock()
		if !lostFrom[clientAddr] || !lostFrom[serverAddr] {
			t.Errorf("no START_MSG lost from %v", lostFrom)
		}
		if network.Stats().Lost == 0 {
			t.Error("the network lost nothing")
		}
	})
}
