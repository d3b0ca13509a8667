package homa

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// sinkConn discards writes and has nothing to read.
type sinkConn struct{ writes int }

func (c *sinkConn) ReadBatch([]Packet) (int, error) { return 0, net.ErrClosed }
func (c *sinkConn) WriteBatch(p []Packet) error {
	c.writes += len(p)
	return nil
}
func (c *sinkConn) LocalAddr() netip.Addr { return netip.MustParseAddr("10.0.0.1") }
func (c *sinkConn) BatchSize() int        { return 64 }
func (c *sinkConn) Close() error          { return nil }

// dataPath is one endpoint with a 1 MB message going out and one coming
// in, for measuring the per-packet work of the protocol without syscalls.
type dataPath struct {
	e    *Endpoint
	out  *rpc
	in   *rpc
	pkts []Packet // DATA packets of the inbound message
	next int
}

func newDataPath(tb testing.TB) *dataPath {
	e, err := newEndpoint(&sinkConn{}, homaconf.Config{}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	const n = 1_000_000
	peerAddr := netip.MustParseAddr("10.0.0.2")
	dp := &dataPath{e: e}
	dp.out = &rpc{id: 2, client: true, peer: e.peer(peerAddr), lport: 0x8000, rport: 99}
	e.startOut(0, dp.out, e.bodyOf(make([]byte, n)), n, 0)
	e.state.clients[dp.out.id] = dp.out
	// An inbound request from the peer, already fully granted.
	dp.in = &rpc{id: 4, peer: e.peer(peerAddr), lport: 99, rport: 0x8000, state: srvReceiving}
	dp.in.peer.servers[4] = dp.in
	e.state.ports[99] = &Server{e: e}
	pkt := e.state.pkt
	for off := uint32(0); off < n; off += pkt {
		d := wire.Data{Common: wire.Common{SPort: 0x8000, DPort: 99, SenderID: 4}, MessageLength: n,
			Incoming: n, CutoffVersion: e.state.cut.version, Offset: off}
		b := wire.AppendData(nil, &d)
		b = append(b, make([]byte, min(pkt, n-off))...)
		dp.pkts = append(dp.pkts, Packet{Buf: b, Addr: peerAddr, TOS: TOS(3)})
	}
	return dp
}

// step sends one DATA packet and receives one, restarting either message
// when it completes (the restart itself reuses all storage except the
// inbound buffer, allocated once per message as in real use).
func (dp *dataPath) step(now time.Duration) {
	e, o := dp.e, &dp.out.out
	if o.next == o.length {
		o.next = 0
	}
	e.sendData(now, dp.out)
	if dp.next == len(dp.pkts) {
		dp.next = 0
		dp.in.state = srvReceiving
		dp.in.in.got.reset()
		dp.in.in.received, dp.in.in.started = 0, false
		dp.in.dead = false
		dp.in.peer.servers[4] = dp.in
		e.state.ports[99] = &Server{e: e, ch: make(chan *ServerRPC, 1)}
	}
	e.handlePacket(now, &dp.pkts[dp.next])
	dp.next++
	if e.state.schedDue {
		e.grantNow()
	}
	e.flush()
}

// TestDataPathAllocs: steady-state sending and receiving of DATA
// packets allocate nothing.
func TestDataPathAllocs(t *testing.T) {
	dp := newDataPath(t)
	dp.step(0) // first packet of the inbound message allocates its buffer
	if a := testing.AllocsPerRun(500, func() { dp.step(time.Microsecond) }); a != 0 {
		t.Fatalf("%.2f allocations per packet pair, want 0", a)
	}
}

// BenchmarkDataPath reports the protocol's CPU time for one DATA packet sent
// plus one received (no syscalls); allocs/op covers both packets, and
// includes the 1 MB inbound buffer once every 703 packets.
func BenchmarkDataPath(b *testing.B) {
	dp := newDataPath(b)
	b.ReportAllocs()
	b.SetBytes(int64(2 * dp.e.state.pkt))
	for b.Loop() {
		dp.step(time.Microsecond)
	}
}

// pipeConn keeps what is written, for the test to hand to the other
// endpoint; its packets come from addr.
type pipeConn struct {
	addr netip.Addr
	q    []Packet
}

func (c *pipeConn) ReadBatch([]Packet) (int, error) { return 0, net.ErrClosed }
func (c *pipeConn) WriteBatch(p []Packet) error {
	for _, x := range p {
		c.q = append(c.q, Packet{Buf: append([]byte(nil), x.Buf...), Addr: c.addr, TOS: x.TOS})
	}
	return nil
}
func (c *pipeConn) LocalAddr() netip.Addr { return c.addr }
func (c *pipeConn) BatchSize() int        { return 64 }
func (c *pipeConn) Close() error          { return nil }

// BenchmarkRPCPath reports the protocol CPU time of one 100-byte RPC,
// both endpoints, without syscalls or goroutines: Call, the request's
// handling and delivery, Reply, the response's handling and the result
// (plus a copy of each packet in pipeConn). A tick every 60 RPCs keeps the
// tombstones at what 60,000 RPCs a second leave.
func BenchmarkRPCPath(b *testing.B) { rpcPath(b, homaconf.Config{LinkBps: 10e9}) }

// BenchmarkRoCERPCPath is BenchmarkRPCPath for the roce variant: SEND
// Only request and response, each ACKed.
func BenchmarkRoCERPCPath(b *testing.B) {
	rpcPath(b, homaconf.Config{LinkBps: 10e9, Variant: homaconf.VariantRoCE})
}

func rpcPath(b *testing.B, cfg homaconf.Config) {
	ca, sa := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	cc, sc := &pipeConn{addr: ca}, &pipeConn{addr: sa}
	c, err := newEndpoint(cc, cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	s, err := newEndpoint(sc, cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := &Server{e: s, port: 99, ch: make(chan *ServerRPC, 16), closed: make(chan struct{})}
	s.state.ports[99] = srv
	req := make([]byte, 100)
	deliver := func(from *pipeConn, to *Endpoint) {
		to.mu.Lock()
		now := to.now()
		for i := range from.q {
			to.handlePacket(now, &from.q[i])
		}
		from.q = from.q[:0]
		to.unlock()
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n++; n%60 == 0 { // a 1 ms tick at 60,000 RPCs a second
			s.mu.Lock()
			s.onTick(s.now())
			s.mu.Unlock()
			c.mu.Lock()
			c.onTick(c.now())
			c.mu.Unlock()
		}
		id := c.nextID.Add(2)
		r := &rpc{id: id, client: true, done: make(chan struct{}, 1)}
		c.mu.Lock()
		now := c.now()
		c.startCall(now, r, netip.AddrPortFrom(sa, 99), req)
		c.unlock()
		deliver(cc, s)
		sr := <-srv.ch
		s.mu.Lock()
		now = s.now()
		s.startReply(now, sr.r, sr.req)
		s.unlock()
		deliver(sc, c)
		<-r.done
	}
}
