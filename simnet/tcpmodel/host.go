package tcpmodel

import (
	"errors"
	"fmt"
	"net/netip"
)

// Output transmits segment s from its host to dst, at once: the caller
// copies what it needs before returning (the model reuses s).
type Output func(dst netip.Addr, s *Segment)

// Schedule has fn(at) run at virtual time at (ns).
type Schedule func(at int64, fn func(int64))

// Net is the hosts of one simulated network, so that a connection is set
// up at both ends at once (the model has no handshake).
type Net struct {
	hosts map[netip.Addr]*Host
}

// NewNet returns an empty network.
func NewNet() *Net { return &Net{hosts: map[netip.Addr]*Host{}} }

// Host is one host's TCP: its connections, the server ports it serves and
// its counters.
type Host struct {
	net      *Net
	addr     netip.Addr
	cfg      Config
	out      Output
	schedule Schedule
	conns    map[connKey]*conn
	peers    map[netip.AddrPort]*peer
	servers  map[uint16]func(*ServerRPC)
	nextPort uint16
	closed   bool
	seg      Segment // the segment being sent, reused
	stats    Stats
}

// connKey names a connection at its host: the peer's address and port,
// and the local port.
type connKey struct {
	peer  netip.AddrPort
	local uint16
}

// peer is a client's connections to one server, used in turn (tcprpc's
// slots).
type peer struct {
	conns []*conn
	next  int
}

// Stats are a host's counters.
type Stats struct {
	Conns        uint64 // connections opened (client side)
	SegsOut      uint64 // segments sent, ACKs included
	DataSegsOut  uint64
	Retransmits  uint64 // data segments sent again
	FastRecovery uint64 // entries into SACK recovery (RACK marked a loss)
	MarkedLost   uint64 // segments RACK marked lost (a lost retransmission again)
	Probes       uint64 // tail loss probes sent
	DSACKs       uint64 // ACKs received with a D-SACK block (a segment received twice)
	Timeouts     uint64 // retransmission timeouts
	ECEAcked     uint64 // ACKs received with ECE
	CEReceived   uint64 // data segments received marked CE
	CWRReduces   uint64 // DCTCP window reductions
}

// Map is s by the names the manifest's transport counters use.
func (s Stats) Map() map[string]uint64 {
	return map[string]uint64{"conns": s.Conns, "segs_out": s.SegsOut, "data_segs_out": s.DataSegsOut,
		"retransmits": s.Retransmits, "fast_recovery": s.FastRecovery, "marked_lost": s.MarkedLost, "tlp_probes": s.Probes, "dsacks": s.DSACKs, "timeouts": s.Timeouts,
		"ece_acked": s.ECEAcked, "ce_received": s.CEReceived, "cwr_reduces": s.CWRReduces}
}

// NewHost adds the host at addr with configuration cfg; it sends through
// out and sets its timers with schedule.
func (n *Net) NewHost(addr netip.Addr, cfg Config, out Output, schedule Schedule) (*Host, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if n.hosts[addr] != nil {
		return nil, fmt.Errorf("tcpmodel: host %v added twice", addr)
	}
	h := &Host{net: n, addr: addr, cfg: cfg, out: out, schedule: schedule, conns: map[connKey]*conn{},
		peers: map[netip.AddrPort]*peer{}, servers: map[uint16]func(*ServerRPC){}, nextPort: 32768}
	n.hosts[addr] = h
	return h, nil
}

// Stats returns the host's counters.
func (h *Host) Stats() Stats { return h.stats }

// Close ends the host: its timers stop and later calls are refused. The
// outstanding calls' callbacks do not run: the caller books them.
func (h *Host) Close() { h.closed = true }

// ServerRPC is a request a server received whole.
type ServerRPC struct {
	c *conn
	// Req is the request's payload (the client's buffer: the model does
	// not copy stream bytes; do not modify it).
	Req []byte
	// Peer is the client's address and port.
	Peer netip.AddrPort
	// ReqOffset is where the request's length prefix starts in the
	// client-to-server stream; RespOffset where the response's starts in
	// the other, once replied.
	ReqOffset, RespOffset int64
	replied               bool
}

// Serve has handler take the requests that arrive on port.
func (h *Host) Serve(port uint16, handler func(*ServerRPC)) error {
	if h.servers[port] != nil {
		return fmt.Errorf("tcpmodel: port %d served twice", port)
	}
	h.servers[port] = handler
	return nil
}

// Reply sends a response of n bytes to sr; responses leave a connection in
// the order its requests arrived, as the agent's server writes them.
func (h *Host) Reply(now int64, sr *ServerRPC, n int) error {
	if sr.replied {
		return errors.New("tcpmodel: replied twice")
	}
	sr.replied = true
	c := sr.c
	sr.RespOffset = int64(c.sndEnd)
	c.write(now, n, nil)
	return nil
}

// Delivered ends the call whose request sr is, now, as a one-way message:
// no response goes on the stream. It stands for an acknowledgement that
// costs the wire nothing (a simulation sees both hosts on one clock); the
// request's bytes are acknowledged by TCP as any others. The call reports
// no response bytes.
func (h *Host) Delivered(now int64, sr *ServerRPC) error {
	if sr.replied {
		return errors.New("tcpmodel: replied twice")
	}
	sr.replied = true
	sr.c.peer.complete(now, msg{end: framing})
	return nil
}

// Result is what a call reports.
type Result struct {
	// RespBytes is the response's payload length.
	RespBytes int
	// ReqOut is when the request's last byte first left (ns), FirstResp
	// when the response's first byte arrived, Done when its last did.
	ReqOut, FirstResp, Done int64
	// Retrans counts the data segments the client's connection sent again
	// while the call was outstanding (tcprpc's Retrans).
	Retrans int
	// Local is the connection's client address and port; ReqOffset and
	// RespOffset place the call in its streams.
	Local                 netip.AddrPort
	ReqOffset, RespOffset int64
}

// ErrRefused is a call to a port nobody serves.
var ErrRefused = errors.New("tcpmodel: connection refused")

// Call sends req to dst on one of the host's connections to it (opened
// on first use, in turn among Config.ConnsPerPeer, or an idle one with
// Config.OpenWhenBusy), behind whatever that connection already carries.
// done runs when the response has arrived whole, or at once with an error
// if the call cannot start.
func (h *Host) Call(now int64, dst netip.AddrPort, req []byte, done func(Result, error)) {
	if h.closed {
		done(Result{}, errors.New("tcpmodel: host closed"))
		return
	}
	srv := h.net.hosts[dst.Addr()]
	p := h.peers[dst]
	if p == nil {
		if srv == nil || srv.servers[dst.Port()] == nil {
			done(Result{}, fmt.Errorf("%w: %v", ErrRefused, dst))
			return
		}
		p = &peer{}
		for range h.cfg.ConnsPerPeer {
			p.open(h, srv, dst.Port())
		}
		h.peers[dst] = p
	}
	var c *conn
	if h.cfg.OpenWhenBusy {
		if c = p.idle(); c == nil && len(p.conns) < MaxConnsPerPeer {
			c = p.open(h, srv, dst.Port())
		}
	}
	if c == nil {
		c = p.conns[p.next]
		p.next = (p.next + 1) % len(p.conns)
	}
	start := c.sndEnd
	c.calls = append(c.calls, call{done: done, reqStart: start, reqEnd: start + uint64(len(req)+framing), retrans0: c.retrans})
	c.write(now, len(req), req)
}

// open adds a connection from h to srv's port to the pool, its SYN sent.
func (p *peer) open(h *Host, srv *Host, port uint16) *conn {
	c := h.connect(srv, port)
	c.sendSYN(FlagSYN)
	p.conns = append(p.conns, c)
	return c
}

// idle returns the first of p's connections with no call outstanding, or
// nil.
func (p *peer) idle() *conn {
	for _, c := range p.conns {
		if c.ch == len(c.calls) {
			return c
		}
	}
	return nil
}

// connect opens a connection to srv's port: both ends at once.
func (h *Host) connect(srv *Host, port uint16) *conn {
	local := h.nextPort
	h.nextPort++
	if h.nextPort == 0 {
		h.nextPort = 32768
	}
	a := newConn(h, netip.AddrPortFrom(srv.addr, port), local)
	b := newConn(srv, netip.AddrPortFrom(h.addr, local), port)
	a.peer, b.peer = b, a
	a.client = true
	h.conns[connKey{a.remote, local}] = a
	srv.conns[connKey{b.remote, port}] = b
	h.stats.Conns++
	return a
}

// Deliver takes a segment that arrived from src, marked CE if ce.
func (h *Host) Deliver(now int64, src netip.Addr, s *Segment) {
	if h.closed {
		return
	}
	c := h.conns[connKey{netip.AddrPortFrom(src, s.SrcPort), s.DstPort}]
	if c == nil {
		return // no such connection: the model sends no RST
	}
	c.receive(now, s)
}

// send hands the host's reused segment to the network.
func (h *Host) send(dst netip.Addr) {
	h.stats.SegsOut++
	if h.seg.Len > 0 {
		h.stats.DataSegsOut++
	}
	h.out(dst, &h.seg)
}
