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

// addrPort converts a TCP address; the zero value for anything else.
func addrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	return netip.AddrPort{}
}

// Handler turns a request into a response. It runs on the connection's
// goroutine, must not retain req, and may return a shared read-only slice.
type Handler func(req []byte) []byte

// Served is what a server tells of one request it answered, for the
// latency anatomy: which connection, where in its byte streams, and when.
type Served struct {
	// Client is the connection's remote address, Local its own.
	Client, Local netip.AddrPort
	// ReqOffset and RespOffset are the offsets of the request's and the
	// response's first byte (the length prefix) in the connection's
	// client-to-server and server-to-client streams, counted from the
	// first data byte.
	ReqOffset, RespOffset int64
	ReqBytes, RespBytes   int
	// Request is when the whole request had been read, Reply when the
	// handler returned the response (before it was written).
	Request, Reply time.Time
}

// Server answers RPCs on one TCP port.
type Server struct {
	ln       net.Listener
	handler  Handler
	onServed func(*Served)
	log      *slog.Logger

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool

	served, accepted atomic.Uint64
}

// Listen starts a server on addr ("ip:port"); it runs until Close or until
// ctx is cancelled. A nil logger discards logs.
func Listen(ctx context.Context, addr string, cfg Config, h Handler, log *slog.Logger) (*Server, error) {
	return ListenServed(ctx, addr, cfg, h, nil, log)
}

// ListenServed is Listen with onServed, when not nil, called on the
// connection's goroutine with each request answered, before its response
// is written.
func ListenServed(ctx context.Context, addr string, cfg Config, h Handler, onServed func(*Served), log *slog.Logger) (*Server, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lc := net.ListenConfig{Control: cfg.control}
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp listen %s: %w", addr, err)
	}
	s := &Server{ln: ln, handler: h, onServed: onServed, log: log, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.acceptLoop()
	context.AfterFunc(ctx, func() { s.Close() })
	return s, nil
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Served counts requests answered.
func (s *Server) Served() uint64 { return s.served.Load() }

// Stats returns the server's counters.
func (s *Server) Stats() map[string]uint64 {
	return map[string]uint64{"tcp_served": s.served.Load(), "tcp_accepted": s.accepted.Load()}
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Warn("tcp accept failed", "addr", s.ln.Addr(), "err", err)
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.accepted.Add(1)
		go s.serve(c)
	}
}

// serve answers the requests of one connection in order. Responses are
// flushed when no further request is already buffered, so pipelined
// requests share system calls.
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	var buf []byte
	var info Served
	if s.onServed != nil {
		info.Client, info.Local = addrPort(c.RemoteAddr()), addrPort(c.LocalAddr())
	}
	for {
		n, err := readHeader(br)
		if err == nil {
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			buf = buf[:n]
			_, err = io.ReadFull(br, buf)
		}
		var resp []byte
		if err == nil {
			if s.onServed != nil {
				info.ReqBytes, info.Request = n, time.Now()
			}
			// Counted before the reply leaves, so a client that has its
			// response always sees it counted.
			s.served.Add(1)
			resp = s.handler(buf)
			if s.onServed != nil {
				// Told before the response leaves, as counted above.
				info.RespBytes, info.Reply = len(resp), time.Now()
				s.onServed(&info)
				info.ReqOffset += int64(headerLen + info.ReqBytes)
				info.RespOffset += int64(headerLen + info.RespBytes)
			}
			err = writeMessage(bw, resp)
		}
		if err == nil && br.Buffered() == 0 {
			err = bw.Flush()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("tcp connection ended", "peer", c.RemoteAddr(), "err", err)
			}
			return
		}
	}
}
