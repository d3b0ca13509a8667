package homa

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// Endpoint is one host's Homa instance: client Calls, servers on ports,
// and the protocol state they share.
//
// The state is guarded by one mutex, and whichever goroutine has an event
// runs the protocol code itself: the reader for packets it has just read,
// a caller for its Call or Reply, the timer goroutine for ticks and pacer
// wake-ups. An earlier design gave the state to one loop goroutine fed by
// channels; that cost six goroutine hand-offs per round trip (each a futex
// wake-up of another thread) where this costs two: the request to the
// server application and the response to the caller.
type Endpoint struct {
	cfg    homaconf.Config
	conn   Conn
	log    *slog.Logger
	local  netip.Addr
	epoch  time.Time
	nextID atomic.Uint64
	c      counters

	mu   sync.Mutex    // guards state and closed
	done chan struct{} // closed by Close, under mu, once closed is set
	kick chan struct{} // wakes the timer goroutine to poll the pacer
	once sync.Once
	wg   sync.WaitGroup

	// try is the Conn when it can be read without blocking (nil
	// otherwise): by waiting goroutines when homaconf.Config.Poll is on,
	// and by the pacer while it spins. polling marks the one that holds
	// pollRx.
	try     TryReader
	polling atomic.Bool
	pollRx  *rxBatch

	closed bool
	state  endpointState // guarded by mu
	// proto is the transport the Endpoint runs, chosen when it is built.
	proto protocol

	// clock, when set, is the caller's clock (a Driven Endpoint's virtual
	// time); nil reads the wall clock since epoch.
	clock func() time.Duration
	// driven: the caller runs the Endpoint (Driven), so finished Calls
	// are listed in state.finished instead of signalled, and ticks visit
	// RPCs in id order so that a run repeats exactly.
	driven bool
	// keep is how many of a message's first bytes the Endpoint carries
	// (DrivenConfig.HeadBytes; all of them otherwise): an outbound
	// message's packets stand for the rest by their length (Packet.Pad),
	// and an inbound message's buffer holds only its first keep bytes.
	keep uint32
}

// NewEndpoint starts an Endpoint on conn. On success it owns conn and
// closes it in Close; on error the caller still owns it. A nil logger
// discards logs.
func NewEndpoint(conn Conn, cfg homaconf.Config, logger *slog.Logger) (*Endpoint, error) {
	e, err := newEndpoint(conn, cfg, logger)
	if err != nil {
		return nil, err
	}
	e.wg.Add(2)
	go e.reader()
	go e.timers()
	e.proto.start(conn)
	return e, nil
}

// newEndpoint builds an Endpoint without starting its goroutines, so
// benchmarks can drive the protocol handlers directly.
func newEndpoint(conn Conn, cfg homaconf.Config, logger *slog.Logger) (*Endpoint, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Endpoint{
		cfg: cfg, conn: conn, log: logger, local: conn.LocalAddr(), epoch: time.Now(),
		done: make(chan struct{}), kick: make(chan struct{}, 1), keep: math.MaxUint32,
	}
	// A random even base: a restarted client on the same host must not reuse
	// ids its peers still hold tombstones for (they would drop the new request
	// as a duplicate and answer RPC_UNKNOWN).
	e.nextID.Store((rand.Uint64() >> 2) << 1)
	if cfg.SequentialIDs {
		e.nextID.Store(0) // HomaModule's first id is 2
	}
	bs := max(1, conn.BatchSize())
	e.state.init(cfg, conn, bs)
	e.proto = newProtocol(e)
	e.state.txOver = homaconf.IPHeaderLen + cfg.FrameOverhead + e.proto.encapBytes()
	e.c.cutoffVersion.Store(uint64(e.state.cut.version))
	if tr, ok := conn.(TryReader); ok {
		// A waiter wants a packet or two, and an empty poll re-arms
		// every buffer of its batch: a small batch keeps the spin cheap.
		e.try, e.pollRx = tr, newRxBatch(min(bs, 8), cfg.MTU)
	}
	return e, nil
}

// Config returns the Endpoint's configuration with defaults filled in.
func (e *Endpoint) Config() homaconf.Config { return e.cfg }

// LocalAddr is the address the Endpoint sends from.
func (e *Endpoint) LocalAddr() netip.Addr { return e.local }

// Stats returns a snapshot of the Endpoint's counters.
func (e *Endpoint) Stats() Stats { return e.c.snapshot() }

// Close stops the Endpoint: outstanding Calls fail with ErrClosed and
// Server.Receive returns ErrClosed. It closes the Conn.
func (e *Endpoint) Close() error {
	var err error
	e.once.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.shutdown()
		close(e.done)
		e.mu.Unlock()
		err = e.conn.Close() // ends the reader's ReadBatch
		e.wg.Wait()
		e.state.pacer.Close()
	})
	return err
}

// Call sends req to the server at dest and waits for its response. The
// Endpoint reads req until Call returns; the caller owns resp. Failures
// wrap ErrTimeout, ErrPeerUnknown, ErrAborted (ctx ended), ErrClosed or
// ErrTooLarge; info is filled in either way.
func (e *Endpoint) Call(ctx context.Context, dest netip.AddrPort, req []byte) ([]byte, CallInfo, error) {
	id := e.nextID.Add(2)
	r := &rpc{id: id, client: true, info: callInfo{sent: e.now()}}
	if e.cfg.TraceGrants {
		r.info.grants = new([]grantEvent)
	}
	if err := e.checkLength(len(req)); err != nil {
		return nil, e.callInfo(r), fmt.Errorf("homa: call %v: %w", dest, err)
	}
	r.done = make(chan struct{}, 1)
	if !e.lock() {
		return nil, e.callInfo(r), fmt.Errorf("homa: call %v: %w", dest, ErrClosed)
	}
	e.startCall(e.now(), r, dest, req)
	e.unlock()
	e.poll(ctx, func() bool { return len(r.done) > 0 })
	if len(r.done) == 0 { // not polled in: wait
		select {
		case <-r.done:
			return r.resp, e.callInfo(r), r.err
		case <-ctx.Done():
		}
		// Abort unless the RPC finished meanwhile; either way, and also when
		// Close got there first, the result is set and signalled exactly once.
		if e.lock() {
			e.cancelCall(e.now(), r)
			e.unlock()
		}
	}
	<-r.done
	if errors.Is(r.err, ErrAborted) {
		r.err = fmt.Errorf("%w: %w", r.err, ctx.Err())
	}
	return r.resp, e.callInfo(r), r.err
}

// callInfo converts r's record for the caller; r is finished (or never
// started), so nothing writes it any more.
func (e *Endpoint) callInfo(r *rpc) CallInfo {
	at := func(d time.Duration) time.Time {
		if d == 0 {
			return time.Time{}
		}
		return e.at(d)
	}
	i := &r.info
	ci := CallInfo{ID: r.id, Sent: at(i.sent), RequestSent: at(i.requestSent), FirstResponse: at(i.firstResponse),
		Done: at(i.done), GrantsReceived: int(i.grantsReceived), GrantsSent: int(i.grantsSent),
		FirstGrant: at(i.firstGrant), LastGrant: at(i.lastGrant), Resends: int(i.resends),
		Retransmits: int(i.retransmits), Restarts: int(i.restarts), RecoveryFrom: at(i.recoveryFrom)}
	if r.resp != nil {
		ci.RespLength = int(r.in.length)
	}
	if i.grants != nil {
		ci.Grants = make([]GrantEvent, len(*i.grants))
		for k, g := range *i.grants {
			ci.Grants[k] = GrantEvent{At: at(g.at), Offset: g.offset, Priority: g.prio, Sent: g.sent}
		}
	}
	return ci
}

func (e *Endpoint) checkLength(n int) error {
	switch {
	case n == 0:
		return fmt.Errorf("%w: empty message", ErrTooLarge)
	case uint64(n) > uint64(e.cfg.MaxMessageBytes):
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, e.cfg.MaxMessageBytes)
	}
	return nil
}

// Listen starts serving port. Requests are taken with Server.Receive.
func (e *Endpoint) Listen(port uint16) (*Server, error) {
	if port == e.cfg.ClientPort {
		return nil, fmt.Errorf("homa: listen %d: port is the client port", port)
	}
	s := &Server{e: e, port: port, backlog: e.cfg.ServerBacklog, closed: make(chan struct{})}
	if !e.driven { // a Driven Endpoint's requests wait in pending
		s.ch = make(chan *ServerRPC, e.cfg.ServerBacklog)
	}
	if !e.lock() {
		return nil, fmt.Errorf("homa: listen %d: %w", port, ErrClosed)
	}
	defer e.mu.Unlock()
	if e.state.ports[port] != nil {
		return nil, fmt.Errorf("homa: listen %d: port in use", port)
	}
	e.state.ports[port] = s
	return s, nil
}

// Server receives the requests sent to one port.
type Server struct {
	e    *Endpoint
	port uint16
	ch   chan *ServerRPC
	// pending are a Driven Endpoint's requests, in ch's place: its caller
	// takes them in Driven.settle, on the goroutine that queued them, so
	// nothing waits on a channel, whose send and receive each take its
	// lock (2% of a simulated collective's run). They are held to ch's
	// capacity, the backlog, alike (kept here: the channel is another
	// cache line).
	pending []*ServerRPC
	backlog int
	closed  chan struct{}
	once    sync.Once
}

// offer queues a complete request for the application; false when the
// backlog is full. Endpoint.mu is held.
func (s *Server) offer(sr *ServerRPC) bool {
	if s.e.driven {
		if len(s.pending) >= s.backlog {
			return false
		}
		s.pending = append(s.pending, sr)
		return true
	}
	select {
	case s.ch <- sr:
		return true
	default:
		return false
	}
}

// take removes and returns a Driven Endpoint's oldest pending request,
// if any (offer).
func (s *Server) take() (*ServerRPC, bool) {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	if len(s.pending) == 0 {
		return nil, false
	}
	sr := s.pending[0]
	n := copy(s.pending, s.pending[1:])
	s.pending[n] = nil
	s.pending = s.pending[:n]
	return sr, true
}

// Port is the port s serves.
func (s *Server) Port() uint16 { return s.port }

// Receive waits for the next complete request.
func (s *Server) Receive(ctx context.Context) (*ServerRPC, error) {
	s.e.poll(ctx, func() bool { return len(s.ch) > 0 })
	select {
	case r := <-s.ch:
		return r, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("homa: receive on %d: %w", s.port, ctx.Err())
	case <-s.closed:
	case <-s.e.done:
	}
	return nil, fmt.Errorf("homa: receive on %d: %w", s.port, ErrClosed)
}

// Close stops serving the port; requests not yet received are dropped.
func (s *Server) Close() error {
	s.once.Do(func() {
		close(s.closed)
		if s.e.lock() {
			if s.e.state.ports[s.port] == s {
				delete(s.e.state.ports, s.port)
			}
			s.e.mu.Unlock()
		}
	})
	return nil
}

// ServerRPC is one request handed to the application.
type ServerRPC struct {
	e       *Endpoint
	r       *rpc
	req     []byte
	length  uint32
	from    netip.AddrPort
	replied atomic.Bool
}

// Request returns the request bytes; the application owns them.
func (s *ServerRPC) Request() []byte { return s.req }

// Length is the request's length in bytes: len(Request()), unless the
// Endpoint keeps only a message's first bytes (DrivenConfig.HeadBytes).
func (s *ServerRPC) Length() int { return int(s.length) }

// Peer is the client's address and port.
func (s *ServerRPC) Peer() netip.AddrPort { return s.from }

// ID is the RPC's id as its client chose it (even), the one the client's
// CallInfo and its packets' sender id carry.
func (s *ServerRPC) ID() uint64 { return s.r.id }

// RecoveryFrom is when the server began waiting for a lost packet of the
// request (see CallInfo.RecoveryFrom), zero if it never did.
func (s *ServerRPC) RecoveryFrom() time.Time {
	// Set before the request was handed over (its channel send orders
	// the write before this read), and never after: a server RPC takes
	// no more request packets once the request is whole.
	if d := s.r.info.recoveryFrom; d != 0 {
		return s.e.at(d)
	}
	return time.Time{}
}

// Reply sends the response. The Endpoint owns resp from now on (it may
// retransmit it until the client acknowledges). It fails with
// ErrPeerUnknown when the RPC was forgotten meanwhile (its client sent
// RPC_UNKNOWN: it gave the RPC up or restarted it).
func (s *ServerRPC) Reply(resp []byte) error {
	if err := s.e.checkLength(len(resp)); err != nil {
		return fmt.Errorf("homa: reply to %v: %w", s.from, err)
	}
	if s.replied.Swap(true) {
		return fmt.Errorf("homa: reply to %v: already replied", s.from)
	}
	if !s.e.lock() {
		return fmt.Errorf("homa: reply to %v: %w", s.from, ErrClosed)
	}
	ok := s.e.startReply(s.e.now(), s.r, resp)
	s.e.unlock()
	if !ok {
		return fmt.Errorf("homa: reply to %v: the client gave the rpc up: %w", s.from, ErrPeerUnknown)
	}
	return nil
}

// Drop ends the request without a response: a one-way message (a
// simulation's Driven.Send). The server forgets the RPC at once, leaving
// a tombstone so that a late duplicate of the request is not served again;
// it counts as served.
func (s *ServerRPC) Drop() error {
	if s.replied.Swap(true) {
		return fmt.Errorf("homa: drop request from %v: already replied", s.from)
	}
	if !s.e.lock() {
		return fmt.Errorf("homa: drop request from %v: %w", s.from, ErrClosed)
	}
	if r := s.r; !r.dead && r.state == srvServing {
		s.e.forgetServer(r, true)
		s.e.c.served.Add(1)
	}
	s.e.unlock()
	return nil
}
