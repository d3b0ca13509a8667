package tcprpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// dialTimeout bounds connection set-up to a peer.
const dialTimeout = 3 * time.Second

// Client issues RPCs to any number of servers.
type Client struct {
	cfg    Config
	log    *slog.Logger
	dialer net.Dialer

	mu     sync.Mutex
	peers  map[string]*peer
	closed bool

	dials, dialFailures, connFailures, calls atomic.Uint64
	// closedRetrans keeps the retransmissions of connections already gone.
	closedRetrans atomic.Uint64
}

// NewClient returns a client; connections are opened on first use.
// A nil logger discards logs.
func NewClient(cfg Config, log *slog.Logger) (*Client, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{cfg: cfg, log: log, peers: map[string]*peer{}}
	c.dialer = net.Dialer{Timeout: dialTimeout, Control: cfg.control}
	return c, nil
}

// peer holds the connections to one server address.
type peer struct {
	addr  string
	next  atomic.Uint32
	slots []connSlot
}

// connSlot is one of a peer's connections, redialled after a failure.
type connSlot struct {
	mu sync.Mutex
	cn *conn
}

// Result is what Call reports of one RPC.
type Result struct {
	// Bytes is the response's length.
	Bytes int
	// Retrans is the number of segments the kernel retransmitted on the
	// RPC's connection between the request's write and the response's
	// arrival (or the connection's failure): the growth of TCP_INFO
	// tcpi_total_retrans over the RPC. Requests pipelined on one
	// connection share its byte stream, so a retransmission while several
	// are outstanding counts for each of them: each waited for it. The
	// server's retransmissions of the response are counted on its own
	// socket, not here.
	Retrans int
	// FirstByte is when the response's header was read (zero on failure).
	FirstByte time.Time
	// Local is the connection's own address; ReqOffset and RespOffset
	// place the RPC in its byte streams (Served has the same).
	Local                 netip.AddrPort
	ReqOffset, RespOffset int64
}

// Call sends req to addr and waits for the response. The response bytes
// are read and discarded: the agent only times RPCs. A failed RPC still
// reports the retransmissions it saw.
func (c *Client) Call(ctx context.Context, addr string, req []byte) (Result, error) {
	p, err := c.peer(addr)
	if err != nil {
		return Result{}, err
	}
	c.calls.Add(1)
	slot := &p.slots[int(p.next.Add(1)-1)%len(p.slots)]
	cn, err := c.connect(ctx, p.addr, slot)
	if err != nil {
		return Result{}, err
	}
	pc, err := cn.send(req)
	if err != nil {
		return Result{}, err
	}
	select {
	case res := <-pc.done:
		return Result{Bytes: res.n, Retrans: res.retrans, FirstByte: res.first,
			Local: cn.local, ReqOffset: pc.offset, RespOffset: res.offset}, res.err
	case <-ctx.Done():
		// The call stays queued on the connection, whose reader drops its
		// response when it arrives; the connection stays in order.
		return Result{}, ctx.Err()
	}
}

func (c *Client) peer(addr string) (*peer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, net.ErrClosed
	}
	p := c.peers[addr]
	if p == nil {
		p = &peer{addr: addr, slots: make([]connSlot, c.cfg.ConnsPerPeer)}
		c.peers[addr] = p
	}
	return p, nil
}

// connect returns the slot's live connection, dialling it if needed.
func (c *Client) connect(ctx context.Context, addr string, slot *connSlot) (*conn, error) {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.cn != nil && slot.cn.err() == nil {
		return slot.cn, nil
	}
	c.dials.Add(1)
	nc, err := c.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		c.dialFailures.Add(1)
		return nil, fmt.Errorf("tcp dial %s: %w", addr, err)
	}
	cn := newConn(nc, func() uint64 { return retransmits(nc) }, func(err error) {
		c.connFailures.Add(1)
		c.log.Debug("tcp connection failed", "peer", addr, "err", err)
	}, &c.closedRetrans)
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		cn.close(net.ErrClosed)
		return nil, net.ErrClosed
	}
	slot.cn = cn
	return cn, nil
}

// Stats returns the client's counters; tcp_retrans_segs is the kernel's
// count of retransmitted segments on the client's connections. Of its open
// connections, tcp_ecn_conns negotiated ECN and tcp_delivered_ce counts the
// segments they delivered that the network had marked CE (TCP_INFO).
func (c *Client) Stats() map[string]uint64 {
	retrans := c.closedRetrans.Load()
	var ecnConns, deliveredCE uint64
	c.eachConn(func(_ *peer, _ int, cn *conn) {
		retrans += cn.retransNow()
		e := ecnOf(cn.nc)
		ecnConns += btou(e.negotiated)
		deliveredCE += e.deliveredCE
	})
	return map[string]uint64{
		"tcp_calls":         c.calls.Load(),
		"tcp_dials":         c.dials.Load(),
		"tcp_dial_failures": c.dialFailures.Load(),
		"tcp_conn_failures": c.connFailures.Load(),
		"tcp_retrans_segs":  retrans,
		"tcp_ecn_conns":     ecnConns,
		"tcp_delivered_ce":  deliveredCE,
	}
}

// Conns appends to buf what TCP_INFO says of each open connection.
func (c *Client) Conns(buf []ConnInfo) []ConnInfo {
	c.eachConn(func(p *peer, slot int, cn *conn) {
		ci := ConnInfo{Peer: p.addr, Slot: slot}
		if connInfo(cn.nc, &ci) {
			buf = append(buf, ci)
		}
	})
	return buf
}

// eachConn calls fn with every open connection, its peer and slot, under
// the slot's lock. Slots are locked without c.mu held: connect takes them
// in the opposite order.
func (c *Client) eachConn(fn func(p *peer, slot int, cn *conn)) {
	c.mu.Lock()
	peers := make([]*peer, 0, len(c.peers))
	for _, p := range c.peers {
		peers = append(peers, p)
	}
	c.mu.Unlock()
	for _, p := range peers {
		for i := range p.slots {
			s := &p.slots[i]
			s.mu.Lock()
			if s.cn != nil && s.cn.err() == nil {
				fn(p, i, s.cn)
			}
			s.mu.Unlock()
		}
	}
}

// Close closes every connection; outstanding calls fail.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	peers := c.peers
	c.peers = map[string]*peer{}
	c.mu.Unlock()
	for _, p := range peers {
		for i := range p.slots {
			s := &p.slots[i]
			s.mu.Lock()
			if s.cn != nil {
				s.cn.close(net.ErrClosed)
			}
			s.mu.Unlock()
		}
	}
	return nil
}

type result struct {
	n       int
	offset  int64 // the response's first byte in the server-to-client stream
	retrans int
	first   time.Time // the response's header was read
	err     error
}

type pendingCall struct {
	done chan result
	// base is the connection's retransmission count when the request was
	// queued, set before the call is visible to the reader.
	base uint64
	// offset is the request's first byte in the client-to-server stream.
	offset int64
}

// conn is one client connection: writes are serialised by wmu, responses
// arrive in request order and complete the oldest pending call.
type conn struct {
	nc      net.Conn
	local   netip.AddrPort
	onFail  func(error)
	retrans *atomic.Uint64 // receives the connection's retransmissions at close
	// retransNow reads the connection's retransmission count (TCP_INFO;
	// a fake counter in tests).
	retransNow func() uint64

	wmu sync.Mutex
	bw  *bufio.Writer
	// sent counts the bytes written to the stream so far (under wmu).
	sent int64
	// writers counts senders waiting for or holding wmu: a sender that
	// sees another one behind it leaves the flush to it, so requests queued
	// together share one system call.
	writers atomic.Int32

	pmu     sync.Mutex
	pending []*pendingCall
	failed  error
	// lastRetrans is the count read when the last response arrived.
	// While nothing is pending every byte sent has been acknowledged (each
	// response acknowledges its request), so the kernel retransmits
	// nothing and the count stays put: an RPC sent on an idle connection
	// takes it as its base without a system call.
	lastRetrans uint64
}

func newConn(nc net.Conn, retransNow func() uint64, onFail func(error), retrans *atomic.Uint64) *conn {
	cn := &conn{nc: nc, local: addrPort(nc.LocalAddr()), onFail: onFail, retrans: retrans, retransNow: retransNow,
		bw: bufio.NewWriterSize(nc, 64<<10)}
	// SYN retransmissions belong to the dial, not to the first RPC.
	cn.lastRetrans = retransNow()
	go cn.readLoop()
	return cn
}

// retransSince is the growth of the retransmission count from base to now;
// a failed read (0) gives 0 rather than a wrapped difference.
func retransSince(base, now uint64) int {
	if now < base {
		return 0
	}
	return int(now - base)
}

func (cn *conn) err() error {
	cn.pmu.Lock()
	defer cn.pmu.Unlock()
	return cn.failed
}

// send queues a call and writes its request.
func (cn *conn) send(req []byte) (*pendingCall, error) {
	pc := &pendingCall{done: make(chan result, 1)}
	cn.writers.Add(1)
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	last := func() bool { return cn.writers.Add(-1) == 0 }
	cn.pmu.Lock()
	if cn.failed != nil {
		err := cn.failed
		cn.pmu.Unlock()
		if last() {
			cn.bw.Flush() // what earlier senders left; fails on a dead connection anyway
		}
		return nil, fmt.Errorf("tcp connection to %s: %w", cn.nc.RemoteAddr(), err)
	}
	pc.base = cn.lastRetrans
	if len(cn.pending) > 0 {
		// Earlier requests are unacknowledged, so the count may have moved
		// since the last response.
		pc.base = max(pc.base, cn.retransNow())
	}
	pc.offset = cn.sent
	cn.sent += int64(headerLen + len(req))
	// Queued before the write, so the reader always finds it.
	cn.pending = append(cn.pending, pc)
	cn.pmu.Unlock()
	err := writeMessage(cn.bw, req)
	if last() && err == nil {
		err = cn.bw.Flush()
	}
	if err != nil {
		err = fmt.Errorf("tcp send to %s: %w", cn.nc.RemoteAddr(), err)
		cn.close(err)
		// close failed every pending call including this one.
		return pc, nil
	}
	return pc, nil
}

// countingReader counts the reads that reach the socket.
type countingReader struct {
	r     io.Reader
	reads uint64
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

func (cn *conn) readLoop() {
	sock := &countingReader{r: cn.nc}
	br := bufio.NewReaderSize(sock, 64<<10)
	// now is the retransmission count read after the socket read that
	// brought in the responses still buffered: every one of them had
	// arrived by then, so it stands for all of them, and responses that
	// come in together cost one system call.
	var now uint64
	readAt := ^uint64(0)
	var offset int64 // the next response's first byte in the stream
	for {
		n, err := readHeader(br)
		first := time.Now()
		if err == nil {
			_, err = br.Discard(n)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			cn.close(fmt.Errorf("tcp receive from %s: %w", cn.nc.RemoteAddr(), err))
			return
		}
		// Read outside pmu so senders are not held up by the system call.
		if sock.reads != readAt {
			now, readAt = cn.retransNow(), sock.reads
		}
		cn.pmu.Lock()
		if len(cn.pending) == 0 {
			cn.pmu.Unlock()
			cn.close(fmt.Errorf("tcp receive from %s: response without a request", cn.nc.RemoteAddr()))
			return
		}
		pc := cn.pending[0]
		cn.pending[0] = nil
		cn.pending = cn.pending[1:]
		cn.lastRetrans = max(cn.lastRetrans, now)
		cn.pmu.Unlock()
		pc.done <- result{n: n, offset: offset, retrans: retransSince(pc.base, now), first: first}
		offset += int64(headerLen + n)
	}
}

// close fails the connection once: every pending call gets err.
func (cn *conn) close(err error) {
	cn.pmu.Lock()
	if cn.failed != nil {
		cn.pmu.Unlock()
		return
	}
	cn.failed = err
	pending := cn.pending
	cn.pending = nil
	cn.pmu.Unlock()
	now := cn.retransNow()
	cn.retrans.Add(now)
	cn.nc.Close()
	if !errors.Is(err, net.ErrClosed) {
		cn.onFail(err)
	}
	for _, pc := range pending {
		pc.done <- result{retrans: retransSince(pc.base, now), err: err}
	}
}
