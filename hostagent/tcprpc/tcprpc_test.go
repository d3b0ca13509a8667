package tcprpc

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/tcpcc"
)

// lengthServer answers each request with the length its first 4 bytes ask
// for (as the agent does), or echoes the length.
func lengthServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	zeros := make([]byte, 16<<20)
	s, err := Listen(t.Context(), "127.0.0.1:0", cfg, func(req []byte) []byte {
		if len(req) >= 4 {
			if n := binary.BigEndian.Uint32(req); n > 0 {
				return zeros[:n]
			}
		}
		return zeros[:len(req)]
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func request(n, resp int) []byte {
	b := make([]byte, n)
	if n >= 4 {
		binary.BigEndian.PutUint32(b, uint32(resp))
	}
	return b
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := NewClient(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCallResponseLengths(t *testing.T) {
	s := lengthServer(t, Config{})
	c := newClient(t, Config{})
	tests := []struct{ req, resp, want int }{
		{0, 0, 0}, {1, 0, 1}, {100, 0, 100}, {100, 7, 7}, {1 << 20, 0, 1 << 20}, {8, 3 << 20, 3 << 20},
	}
	retrans := 0
	for _, tc := range tests {
		got, err := c.Call(t.Context(), s.Addr().String(), request(tc.req, tc.resp))
		if err != nil {
			t.Fatalf("req %d: %v", tc.req, err)
		}
		if got.Bytes != tc.want {
			t.Errorf("req %d asking %d: response %d bytes, want %d", tc.req, tc.resp, got.Bytes, tc.want)
		}
		retrans += got.Retrans
	}
	// One RPC at a time on one connection: every retransmission (rare on
	// loopback, but a loaded host sees spurious ones) belongs to one RPC.
	if total := c.Stats()["tcp_retrans_segs"]; uint64(retrans) != total {
		t.Errorf("per-RPC retransmissions sum to %d, the connection counted %d", retrans, total)
	}
	if s.Served() != uint64(len(tests)) {
		t.Errorf("served %d, want %d", s.Served(), len(tests))
	}
}

func TestConnectionsPerPeer(t *testing.T) {
	for _, conns := range []int{1, 4} {
		s := lengthServer(t, Config{})
		c := newClient(t, Config{ConnsPerPeer: conns})
		var wg sync.WaitGroup
		errs := make(chan error, 201)
		// Stats runs alongside the calls that dial: they lock the same
		// structures (a lock-order regression once deadlocked here).
		statsDone := make(chan struct{})
		go func() {
			defer close(statsDone)
			for range 200 {
				if _, ok := c.Stats()["tcp_retrans_segs"]; !ok {
					errs <- errors.New("no tcp_retrans_segs counter")
					return
				}
			}
		}()
		for range 200 {
			wg.Go(func() {
				if _, err := c.Call(t.Context(), s.Addr().String(), request(100, 0)); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		<-statsDone
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := c.Stats()["tcp_dials"]; got != uint64(conns) {
			t.Errorf("%d connections per peer: %d dials", conns, got)
		}
		if s.Served() != 200 {
			t.Errorf("served %d of 200", s.Served())
		}
	}
}

// TestHeadOfLineBlocking holds the server on a long request: a short RPC
// queued behind it on the same connection cannot complete until it is
// released, while with a second connection it completes at once.
func TestHeadOfLineBlocking(t *testing.T) {
	for _, conns := range []int{1, 2} {
		release := make(chan struct{})
		zeros := make([]byte, 1<<20)
		s, err := Listen(t.Context(), "127.0.0.1:0", Config{}, func(req []byte) []byte {
			if len(req) > 1000 {
				<-release
			}
			return zeros[:len(req)]
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := newClient(t, Config{ConnsPerPeer: conns})
		addr := s.Addr().String()
		longDone := make(chan error, 1)
		go func() {
			_, err := c.Call(t.Context(), addr, request(1<<20, 0))
			longDone <- err
		}()
		waitPending(t, c, addr)
		shortDone := make(chan error, 1)
		go func() {
			_, err := c.Call(t.Context(), addr, request(8, 0))
			shortDone <- err
		}()
		// One connection: the short RPC must still be waiting after 100 ms.
		// Two: it must complete, within a generous 5 s on a busy machine.
		wait := 100 * time.Millisecond
		if conns == 2 {
			wait = 5 * time.Second
		}
		shortSeen := false
		select {
		case err := <-shortDone:
			shortSeen = true
			if conns == 1 {
				t.Errorf("one connection: short RPC completed (err %v) while the long one ahead of it was held", err)
			} else if err != nil {
				t.Error(err)
			}
		case <-time.After(wait):
			if conns == 2 {
				t.Errorf("two connections: short RPC waited for the long one on the other connection")
			}
		}
		close(release)
		if err := <-longDone; err != nil {
			t.Fatal(err)
		}
		if !shortSeen {
			if err := <-shortDone; err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
}

func TestCongestionControl(t *testing.T) {
	if _, err := NewClient(Config{Congestion: "nosuchcc"}, nil); err == nil || !strings.Contains(err.Error(), "kernel offers") {
		t.Errorf("unknown congestion control: error %v, want one listing what the kernel offers", err)
	}
	if _, err := NewClient(Config{ConnsPerPeer: -1}, nil); err == nil {
		t.Error("negative connections per peer accepted")
	}
	avail, err := tcpcc.Available()
	if err != nil {
		t.Skip(err)
	}
	// Without CAP_NET_ADMIN a process may set only the allowed ones.
	allowed := avail
	if os.Geteuid() != 0 {
		if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control"); err == nil {
			allowed = strings.Fields(string(b))
		}
	}
	for _, cc := range []string{"reno", "cubic", "bbr"} {
		if !slices.Contains(avail, cc) || !slices.Contains(allowed, cc) {
			continue
		}
		s := lengthServer(t, Config{Congestion: cc})
		c := newClient(t, Config{Congestion: cc})
		if _, err := c.Call(t.Context(), s.Addr().String(), request(1000, 0)); err != nil {
			t.Errorf("%s: %v", cc, err)
		}
	}
}

func TestServerGoneFailsCalls(t *testing.T) {
	s := lengthServer(t, Config{})
	c := newClient(t, Config{})
	addr := s.Addr().String()
	if _, err := c.Call(t.Context(), addr, request(10, 0)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	// The first call may be written before the reset is seen; it must still
	// fail rather than hang, and the next one fails at dial.
	for range 2 {
		if _, err := c.Call(ctx, addr, request(10, 0)); err == nil {
			t.Fatal("call to a closed server succeeded")
		}
	}
	if ctx.Err() != nil {
		t.Fatal("calls to a closed server hung until the deadline")
	}
}

func TestCallHonoursContext(t *testing.T) {
	block := make(chan struct{})
	s, err := Listen(t.Context(), "127.0.0.1:0", Config{}, func(req []byte) []byte {
		<-block
		return req
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, s.Addr().String(), request(10, 0)); err != context.DeadlineExceeded {
		t.Errorf("error %v, want the context's deadline", err)
	}
	close(block)
	s.Close()
}

// waitPending waits until the client has a call queued on its connection
// to addr.
func waitPending(t *testing.T, c *Client, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		p := c.peers[addr]
		c.mu.Unlock()
		if p != nil {
			p.slots[0].mu.Lock()
			cn := p.slots[0].cn
			p.slots[0].mu.Unlock()
			if cn != nil {
				cn.pmu.Lock()
				n := len(cn.pending)
				cn.pmu.Unlock()
				if n > 0 {
					return
				}
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatal("the long request never got queued")
}

// TestConns reads TCP_INFO of every open client connection.
func TestConns(t *testing.T) {
	s := lengthServer(t, Config{})
	c := newClient(t, Config{ConnsPerPeer: 2})
	if got := c.Conns(nil); len(got) != 0 {
		t.Fatalf("before any call: %+v", got)
	}
	for range 4 {
		if _, err := c.Call(t.Context(), s.Addr().String(), request(100000, 100)); err != nil {
			t.Fatal(err)
		}
	}
	got := c.Conns(nil)
	if len(got) != 2 {
		t.Fatalf("%d connections, want 2: %+v", len(got), got)
	}
	for _, ci := range got {
		if ci.Peer != s.Addr().String() || ci.CwndSegs == 0 || ci.SRTTus == 0 {
			t.Errorf("connection %+v: want the server's address, a window and an RTT", ci)
		}
	}
	if got[0].Slot == got[1].Slot {
		t.Errorf("two connections in one slot: %+v", got)
	}
}

// TestStreamOffsets checks that client and server place each RPC at the
// same byte offsets of its connection, pipelined or not, so the latency
// anatomy can find its segments in the switch's records.
func TestStreamOffsets(t *testing.T) {
	var mu sync.Mutex
	served := map[int64]Served{} // by request offset
	zeros := make([]byte, 1<<20)
	s, err := ListenServed(t.Context(), "127.0.0.1:0", Config{}, func(req []byte) []byte {
		return zeros[:binary.BigEndian.Uint32(req)]
	}, func(sv *Served) {
		mu.Lock()
		served[sv.ReqOffset] = *sv
		mu.Unlock()
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := newClient(t, Config{})
	sizes := []struct{ req, resp int }{{8, 100}, {3000, 5}, {4, 70000}, {100, 100}, {20000, 1}, {16, 16}}
	results := make([]Result, len(sizes))
	var wg sync.WaitGroup
	for i, sz := range sizes {
		wg.Go(func() {
			var err error
			if results[i], err = c.Call(t.Context(), s.Addr().String(), request(sz.req, sz.resp)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Requests went out in some order: their offsets must tile the stream.
	var reqOff, respOff []int64
	for i, r := range results {
		sv, ok := served[r.ReqOffset]
		if !ok {
			t.Fatalf("rpc %d: no served request at offset %d (served at %v)", i, r.ReqOffset, slices.Sorted(maps.Keys(served)))
		}
		if sv.ReqBytes != sizes[i].req || sv.RespBytes != sizes[i].resp || sv.RespOffset != r.RespOffset {
			t.Errorf("rpc %d: served %+v, client saw req %d resp %d at resp offset %d", i, sv, sizes[i].req, sizes[i].resp, r.RespOffset)
		}
		if sv.Client != r.Local || !r.Local.IsValid() {
			t.Errorf("rpc %d: server saw client %v, client's address %v", i, sv.Client, r.Local)
		}
		if sv.Reply.Before(sv.Request) {
			t.Errorf("rpc %d: reply %v before request %v", i, sv.Reply, sv.Request)
		}
		reqOff, respOff = append(reqOff, r.ReqOffset), append(respOff, r.RespOffset)
	}
	slices.Sort(reqOff)
	slices.Sort(respOff)
	var wantReq, wantResp int64
	for i := range reqOff {
		if reqOff[i] != wantReq || respOff[i] != wantResp {
			t.Fatalf("offsets %v / %v do not tile the streams", reqOff, respOff)
		}
		// Responses come back in request order, so the i-th request
		// offset's RPC owns the i-th response offset.
		sv := served[reqOff[i]]
		wantReq += int64(headerLen + sv.ReqBytes)
		wantResp += int64(headerLen + sv.RespBytes)
	}
}
