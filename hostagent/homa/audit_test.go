package homa_test

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"slices"
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

// Tests of the departures from HomaModule that issue #17 found, each on
// the in-memory network under testing/synctest.

var thirdAddr = netip.MustParseAddr("10.0.0.3")

// packetType is the Homa type of p, or 0 for a malformed packet.
func packetType(p homa.Packet) wire.Type {
	c, err := wire.ParseCommon(p.Buf)
	if err != nil {
		return 0
	}
	return c.Type
}

// TestFIFOGrantUnansweredDoesNotStall: the oldest inbound message comes
// from a sender that never hears the receiver (its GRANTs and RESENDs are
// lost), so every FIFO grant to it stays unanswered. A younger sender's
// messages must still be granted at the link's pace: FIFO grants skip a
// message that far behind (homa_grant.c), and their bytes do not take
// the SRPT headroom.
func TestFIFOGrantUnansweredDoesNotStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
			ty := packetType(p)
			return src == serverAddr && p.Addr == clientAddr && (ty == wire.TypeGrant || ty == wire.TypeResend)
		}}
		cfg := homaconf.Config{FIFOGrantPermille: 200}
		deaf, srv, network := pair(t, lc, cfg)
		serveFixed(ctx, srv, []byte("ok"))
		other := attach(t, network, thirdAddr, cfg)
		dest := netip.AddrPortFrom(serverAddr, serverPort)
		go func() { _, _, _ = deaf.Call(ctx, dest, make([]byte, 1_000_000)) }()
		time.Sleep(time.Millisecond)
		start := time.Now()
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		defer ccancel()
		for i := range 3 {
			if _, _, err := other.Call(cctx, dest, make([]byte, 1_000_000)); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		// Three 1 MB messages take 26 ms at 1 Gbit/s; the deaf message
		// times out at the receiver after 100 ms.
		if d := time.Since(start); d > 40*time.Millisecond {
			t.Errorf("three 1 MB requests took %v behind a deaf sender's message, want under 40 ms", d)
		}
	})
}

// TestResendOfUnsentBytesGetsBusy: a sender's SRPT holds back a granted
// message (neither its shortest nor its oldest) while it sends a stream of
// shorter ones elsewhere, for longer than the receiver's timeout. The
// sender answers the receiver's RESENDs for the bytes it has not sent yet
// with BUSY, as Linux does, so the receiver, hearing it alive, keeps the
// request instead of timing it out.
func TestResendOfUnsentBytesGetsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		network := homatest.NewNetwork(homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond})
		t.Cleanup(network.Close)
		cfg := homaconf.Config{MaxMessageBytes: 4_000_000}
		listen := func(a netip.Addr) (*homa.Endpoint, netip.AddrPort) {
			e := attach(t, network, a, cfg)
			srv, err := e.Listen(serverPort)
			if err != nil {
				t.Fatal(err)
			}
			serveFixed(ctx, srv, []byte("ok"))
			return e, netip.AddrPortFrom(a, serverPort)
		}
		held, heldDest := listen(serverAddr)
		_, oldDest := listen(thirdAddr)
		_, shortDest := listen(netip.MustParseAddr("10.0.0.4"))
		sender := attach(t, network, clientAddr, cfg)
		// The oldest message, longer than the held one: the pacer's FIFO
		// share goes to it.
		go func() { _, _, _ = sender.Call(ctx, oldDest, make([]byte, 4_000_000)) }()
		time.Sleep(100 * time.Microsecond)
		heldErr := make(chan error, 1)
		go func() {
			_, _, err := sender.Call(ctx, heldDest, make([]byte, 1_000_000))
			heldErr <- err
		}()
		time.Sleep(200 * time.Microsecond)
		// 150 ms of shorter, fully unscheduled messages, four at a time so
		// that one is always ready: SRPT sends them first.
		var wg sync.WaitGroup
		end := time.Now().Add(150 * time.Millisecond)
		for range 4 {
			wg.Go(func() {
				for time.Now().Before(end) {
					if _, _, err := sender.Call(ctx, shortDest, make([]byte, 10_000)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := <-heldErr; err != nil {
			t.Fatalf("held call: %v", err)
		}
		st := held.Stats()
		if st.Timeouts != 0 || st.ResendsSent == 0 {
			t.Errorf("receiver timed out %d RPCs after %d RESENDs, want none after some", st.Timeouts, st.ResendsSent)
		}
		if b := sender.Stats().BusySent; b == 0 {
			t.Error("the sender sent no BUSY")
		}
	})
}

// TestBurstLossRepairedInOneRound loses 20 consecutive DATA packets of a
// 200 KB request once each: one RESEND round must ask for the whole gap,
// so the Call ends about one resend interval (5 ms here) after the
// message's own 1.7 ms, not 20 intervals later.
func TestBurstLossRepairedInOneRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var lost atomic.Int32
		lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
			d, _, err := wire.ParseData(p.Buf)
			return err == nil && src == clientAddr && d.Retransmit == 0 && d.Offset >= 50*1424 && d.Offset < 70*1424 && lost.Add(1) > 0
		}}
		client, srv, _ := pair(t, lc, homaconf.Config{})
		serveFixed(ctx, srv, []byte("ok"))
		start := time.Now()
		_, info, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), make([]byte, 200_000))
		if err != nil {
			t.Fatal(err)
		}
		if n := lost.Load(); n != 20 {
			t.Fatalf("lost %d packets, want 20", n)
		}
		d := time.Since(start)
		t.Logf("200 KB call with a burst of 20 losses: %v, %d retransmits", d, info.Retransmits)
		if d > 9*time.Millisecond {
			t.Errorf("call took %v with %d retransmits after a burst of 20 losses, want under 9 ms", d, info.Retransmits)
		}
	})
}

// TestLostLastGrantRepairedInOneRound loses the GRANT that lets a 40 KB
// request's sender send its last 30 KB (20 packets: it may send 10 KB
// unscheduled). The receiver, which granted the whole message, sees
// silence, asks for one packet of the gap and sends its GRANT again, which
// lets the sender send the rest at once: the call ends about one resend
// interval (5 ms here) after it began, not a packet per interval (20
// intervals: a RESEND grants only the packet it asks for).
func TestLostLastGrantRepairedInOneRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		const size = 40_000
		var lost atomic.Int32
		lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
			g, err := wire.ParseGrant(p.Buf)
			return err == nil && src == serverAddr && g.Type == wire.TypeGrant && g.Offset == size && lost.CompareAndSwap(0, 1)
		}}
		client, srv, _ := pair(t, lc, homaconf.Config{UnschedBytes: 10_000})
		serveFixed(ctx, srv, []byte("ok"))
		start := time.Now()
		_, info, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), make([]byte, size))
		if err != nil {
			t.Fatal(err)
		}
		if lost.Load() != 1 {
			t.Fatal("no GRANT of the whole message was lost")
		}
		d := time.Since(start)
		t.Logf("40 KB call after its last GRANT was lost: %v, %d resends", d, info.Resends)
		if d > 9*time.Millisecond {
			t.Errorf("call took %v after its last GRANT was lost, want under 9 ms", d)
		}
	})
}

// TestUnscheduledLossResentAtItsLevel: a lost packet of a message that
// was never granted (it fits in the unscheduled bytes) is asked for and
// resent at the level its unscheduled packets used, not at the lowest
// level, where it would wait behind every scheduled byte.
func TestUnscheduledLossResentAtItsLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var lost atomic.Int32
		var mu sync.Mutex
		var first, resent []uint8
		lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
			d, _, err := wire.ParseData(p.Buf)
			if err != nil || src != clientAddr {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			if d.Retransmit != 0 {
				resent = append(resent, homa.Priority(p.TOS))
				return false
			}
			first = append(first, homa.Priority(p.TOS))
			return d.Offset == 1424 && lost.Add(1) == 1
		}}
		client, srv, _ := pair(t, lc, homaconf.Config{})
		serveFixed(ctx, srv, []byte("ok"))
		if _, _, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), make([]byte, 5000)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(resent) != 1 || len(first) == 0 || resent[0] != first[0] {
			t.Errorf("first sent at levels %v, resent at %v; want the one lost packet resent at its level", first, resent)
		}
	})
}

// TestServerKeepsHeldResponse: a client with one active message holds a
// 1 MB response back behind a stream of shorter ones for longer than the
// server's timeout, sending that server nothing meanwhile. The server
// must not forget the response (Linux servers never time out while they
// have one to send), and the Call must then complete.
func TestServerKeepsHeldResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		network := homatest.NewNetwork(homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond})
		t.Cleanup(network.Close)
		cfg := homaconf.Config{Overcommit: 1, DisableFIFOGrants: true, TraceGrants: true}
		heldSrv := attach(t, network, serverAddr, cfg)
		srv, err := heldSrv.Listen(serverPort)
		if err != nil {
			t.Fatal(err)
		}
		serveFixed(ctx, srv, make([]byte, 1_000_000))
		var shorts []netip.AddrPort
		for i := range 4 {
			a := netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)})
			ssrv, err := attach(t, network, a, cfg).Listen(serverPort)
			if err != nil {
				t.Fatal(err)
			}
			serveFixed(ctx, ssrv, make([]byte, 200_000))
			shorts = append(shorts, netip.AddrPortFrom(a, serverPort))
		}
		client := attach(t, network, clientAddr, cfg)
		heldErr := make(chan error, 1)
		go func() {
			cctx, ccancel := context.WithTimeout(ctx, time.Second)
			defer ccancel()
			_, info, err := client.Call(cctx, netip.AddrPortFrom(serverAddr, serverPort), []byte("big"))
			var gap time.Duration
			for i := 1; i < len(info.Grants); i++ {
				gap = max(gap, info.Grants[i].At.Sub(info.Grants[i-1].At))
			}
			if gap < 120*time.Millisecond {
				t.Errorf("the client held the response back for at most %v, want more than the 100 ms timeout", gap)
			}
			heldErr <- err
		}()
		time.Sleep(time.Millisecond)
		var wg sync.WaitGroup
		end := time.Now().Add(150 * time.Millisecond)
		for _, dest := range shorts {
			wg.Go(func() {
				for time.Now().Before(end) {
					if _, _, err := client.Call(ctx, dest, []byte("small")); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := <-heldErr; err != nil {
			t.Errorf("held call: %v", err)
		}
		if n := heldSrv.Stats().Timeouts; n != 0 {
			t.Errorf("the server timed out %d RPCs", n)
		}
	})
}

// TestStaticCutoffsW4: the receiver's static cutoffs are Linux's W4 set
// (cloudlab/bin/set_cutoffs, index = priority). Unscheduled packets must
// go at the level homa_unsched_priority picks for their length, and
// grants use the scheduled levels below the lowest unscheduled one
// (max_sched_prio 3), the most urgent of four active messages level 3.
func TestStaticCutoffsW4(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		unsched := map[uint32]uint8{} // message length -> level of its first packet
		var maxGrant uint8
		lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
			mu.Lock()
			defer mu.Unlock()
			switch packetType(p) {
			case wire.TypeData:
				if d, _, err := wire.ParseData(p.Buf); err == nil && src == clientAddr && d.Offset == 0 {
					unsched[d.MessageLength] = homa.Priority(p.TOS)
				}
			case wire.TypeGrant:
				if g, err := wire.ParseGrant(p.Buf); err == nil && src == serverAddr {
					maxGrant = max(maxGrant, g.Priority)
				}
			}
			return false
		}}
		w4 := []uint32{1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000, 63488, 12288, 3008}
		network := homatest.NewNetwork(lc)
		t.Cleanup(network.Close)
		server := attach(t, network, serverAddr, homaconf.Config{UnschedCutoffs: w4, DisableFIFOGrants: true})
		srv, err := server.Listen(serverPort)
		if err != nil {
			t.Fatal(err)
		}
		serveFixed(ctx, srv, []byte("ok"))
		client := attach(t, network, clientAddr, homaconf.Config{})
		dest := netip.AddrPortFrom(serverAddr, serverPort)
		if _, _, err := client.Call(ctx, dest, make([]byte, 100)); err != nil { // learns the cutoffs
			t.Fatal(err)
		}
		for _, n := range []int{2000, 10_000, 50_000} {
			if _, _, err := client.Call(ctx, dest, make([]byte, n)); err != nil {
				t.Fatal(err)
			}
		}
		// Four senders at once, so that four messages are active.
		senders := []*homa.Endpoint{client}
		for i := range 3 {
			e := attach(t, network, netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}), homaconf.Config{})
			if _, _, err := e.Call(ctx, dest, make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
			senders = append(senders, e)
		}
		var wg sync.WaitGroup
		for i, e := range senders {
			wg.Go(func() {
				if _, _, err := e.Call(ctx, dest, make([]byte, 400_000+100_000*i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for n, want := range map[uint32]uint8{2000: 7, 10_000: 6, 50_000: 5, 400_000: 4} {
			if got, ok := unsched[n]; !ok || got != want {
				t.Errorf("unscheduled bytes of a %d B message at level %d, want %d", n, got, want)
			}
		}
		if maxGrant != 3 {
			t.Errorf("highest grant level %d, want 3 (max_sched_prio of W4)", maxGrant)
		}
	})
}

// TestControlSenderIDs: CUTOFFS and ACK packets name an RPC in sender_id,
// as Linux's do (homa_xmit_control, homa_need_ack_pkt), not 0.
func TestControlSenderIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		ids := map[wire.Type][]uint64{}
		lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
			if c, err := wire.ParseCommon(p.Buf); err == nil && (c.Type == wire.TypeCutoffs || c.Type == wire.TypeAck) {
				mu.Lock()
				ids[c.Type] = append(ids[c.Type], c.SenderID)
				mu.Unlock()
			}
			return false
		}}
		client, srv, _ := pair(t, lc, homaconf.Config{})
		serveFixed(ctx, srv, []byte("ok"))
		if _, _, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), []byte("x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the ACK goes out at the next tick
		mu.Lock()
		defer mu.Unlock()
		for _, ty := range []wire.Type{wire.TypeCutoffs, wire.TypeAck} {
			if len(ids[ty]) == 0 || slices.Contains(ids[ty], 0) {
				t.Errorf("%v packets with sender ids %v, want some, none 0", ty, ids[ty])
			}
		}
	})
}

// TestReplyToForgottenRPC: a client that gives an RPC up answers the
// server with RPC_UNKNOWN; the server forgets it, and the application's
// Reply says so instead of returning nil.
func TestReplyToForgottenRPC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := homatest.NewNetwork(homatest.LinkConfig{Rate: 1e9})
		t.Cleanup(network.Close)
		srv, err := attach(t, network, serverAddr, homaconf.Config{}).Listen(serverPort)
		if err != nil {
			t.Fatal(err)
		}
		// A hand-made client: one DATA packet, then RPC_UNKNOWN.
		conn, err := network.NewConn(clientAddr)
		if err != nil {
			t.Fatal(err)
		}
		const id = 42
		req := []byte("forget me")
		d := wire.Data{Common: wire.Common{SPort: 0x8000, DPort: serverPort, SenderID: id}, MessageLength: uint32(len(req)), Incoming: uint32(len(req))}
		pkt := append(wire.AppendData(nil, &d), req...)
		if err := conn.WriteBatch([]homa.Packet{{Buf: pkt, Addr: serverAddr, TOS: homa.TOS(7)}}); err != nil {
			t.Fatal(err)
		}
		rpc, err := srv.Receive(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		u := wire.Common{SPort: 0x8000, DPort: serverPort, SenderID: id, Type: wire.TypeRPCUnknown}
		if err := conn.WriteBatch([]homa.Packet{{Buf: wire.AppendHeaderOnly(nil, &u), Addr: serverAddr, TOS: homa.TOS(7)}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		if err := rpc.Reply([]byte("late")); !errors.Is(err, homa.ErrPeerUnknown) {
			t.Errorf("Reply to a forgotten RPC: %v, want ErrPeerUnknown", err)
		}
	})
}

// TestUnscheduledLevelPerPacket: the first message to a receiver goes out
// before its CUTOFFS arrive; like Linux the sender picks each unscheduled
// packet's level when it sends it, so the packets the pacer holds until
// after the CUTOFFS use the level they name (W4: 6 for 10 KB), not the
// top level the first packets used. A sender told that every host shares
// its cutoffs (shared_cutoffs, the twin's cutoffs fixed from the
// workload) uses them from the first packet.
func TestUnscheduledLevelPerPacket(t *testing.T) {
	w4 := []uint32{1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000, 63488, 12288, 3008}
	for _, tc := range []struct {
		name                string
		client              homaconf.Config
		wantFirst, wantLast uint8
	}{
		{"linux", homaconf.Config{}, 7, 6},
		{"shared cutoffs", homaconf.Config{UnschedCutoffs: w4, SharedCutoffs: true}, 6, 6},
		// Graduated (the Homa paper's simulator): each packet at the level
		// of the bytes left, so the last ones (at most 3,008 B left) climb
		// to the top.
		{"graduated", homaconf.Config{UnschedCutoffs: w4, SharedCutoffs: true, Graduated: true}, 6, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var mu sync.Mutex
				byOffset := map[uint32]uint8{}
				lc := homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond, Drop: func(src netip.Addr, p homa.Packet) bool {
					if d, _, err := wire.ParseData(p.Buf); err == nil && src == clientAddr && d.Retransmit == 0 {
						mu.Lock()
						byOffset[d.Offset] = homa.Priority(p.TOS)
						mu.Unlock()
					}
					return false
				}}
				network := homatest.NewNetwork(lc)
				t.Cleanup(network.Close)
				srv, err := attach(t, network, serverAddr, homaconf.Config{UnschedCutoffs: w4}).Listen(serverPort)
				if err != nil {
					t.Fatal(err)
				}
				serveFixed(ctx, srv, []byte("ok"))
				client := attach(t, network, clientAddr, tc.client)
				if _, _, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), make([]byte, 10_000)); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				var levels []uint8 // in the order of the message's bytes
				for _, off := range slices.Sorted(maps.Keys(byOffset)) {
					levels = append(levels, byOffset[off])
				}
				if len(levels) < 2 || levels[0] != tc.wantFirst || levels[len(levels)-1] != tc.wantLast {
					t.Errorf("levels of the first message's packets %v, want %d first and %d last", levels, tc.wantFirst, tc.wantLast)
				}
			})
		})
	}
}

// TestAbandonedResponseFreed: a client gives a Call up while the server's
// 1 MB response waits for its grants. The server never times a response
// out (Linux), but after a timeout's worth of silence it asks with
// NEED_ACK; the client, no longer knowing the RPC, ACKs and the server
// frees it.
func TestAbandonedResponseFreed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		network := homatest.NewNetwork(homatest.LinkConfig{Rate: 1e9, Delay: 2 * time.Microsecond})
		t.Cleanup(network.Close)
		server := attach(t, network, serverAddr, homaconf.Config{})
		srv, err := server.Listen(serverPort)
		if err != nil {
			t.Fatal(err)
		}
		serveFixed(ctx, srv, make([]byte, 1_000_000))
		client := attach(t, network, clientAddr, homaconf.Config{})
		cctx, ccancel := context.WithTimeout(ctx, 50*time.Microsecond)
		defer ccancel()
		if _, _, err := client.Call(cctx, netip.AddrPortFrom(serverAddr, serverPort), []byte("x")); !errors.Is(err, homa.ErrAborted) {
			t.Fatalf("call: %v, want ErrAborted", err)
		}
		time.Sleep(300 * time.Millisecond)
		if st := server.Stats(); st.Acked != 1 || st.Timeouts != 0 {
			t.Errorf("server acked %d RPCs and timed out %d, want 1 and 0", st.Acked, st.Timeouts)
		}
	})
}
