package homa

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// Driven is an Endpoint its caller runs, as a discrete-event simulation
// does: it starts no goroutine and reads no clock of its own. The caller
// delivers packets, runs a tick every homaconf.Config.Tick and wakes the
// pacer when Timer says, all at the times of its own clock; the Endpoint
// answers by writing packets to its Conn. It is the same protocol code an
// emulated host runs (the same handlers, scheduler, pacer and policies),
// with the wall clock, the reader and timer goroutines and the waiting
// Call left out.
//
// A Driven Endpoint is not safe for concurrent use: one goroutine (the
// simulation's) makes every call, and callbacks run inside them.
type Driven struct {
	e       *Endpoint
	servers []drivenServer // in port order
	done    []*rpc         // scratch for finished Calls
	running bool           // inside settle: callbacks' calls must not re-enter it
}

type drivenServer struct {
	s       *Server
	handler func(*ServerRPC)
}

// DrivenConfig is what a Driven Endpoint needs beyond an Endpoint's
// configuration.
type DrivenConfig struct {
	// Clock returns the caller's time, the Endpoint's clock.
	Clock func() time.Duration
	// Epoch is the wall time at Clock 0, for CallInfo's times.
	Epoch time.Time
	// FirstID is the first RPC id's base (ids are FirstID+2, +4, ...),
	// chosen by the caller so that a run repeats exactly; it is made even.
	FirstID uint64
	// HeadBytes, when positive, has the Endpoint carry only each
	// message's first HeadBytes bytes, as a simulation that reads no
	// more of them wants: a message's other bytes are its length only,
	// its packets standing for them (Packet.Pad), neither copied nor kept.
	// A received message then holds its first HeadBytes bytes
	// (ServerRPC.Length and CallInfo.RespLength say its length); the
	// memory bounds charge it as though it held them all, so the protocol
	// acts alike either way. The Endpoint copies those bytes when it is
	// given a message, so the caller may reuse its buffer at once. 0
	// carries every byte.
	HeadBytes int
}

// NewDriven makes a Driven Endpoint on conn, whose WriteBatch receives
// every packet the Endpoint sends (ReadBatch is never called). The pacer
// never spins and Calls never poll: both are ways of waiting on a wall
// clock. On success it owns conn.
func NewDriven(conn Conn, cfg homaconf.Config, dc DrivenConfig, logger *slog.Logger) (*Driven, error) {
	if dc.Clock == nil {
		return nil, fmt.Errorf("homa: driven endpoint: no clock")
	}
	e, err := newEndpoint(conn, cfg, logger)
	if err != nil {
		return nil, err
	}
	e.cfg.PacerSpin, e.cfg.Poll = 0, 0
	e.try, e.pollRx = nil, nil
	e.clock, e.epoch, e.driven = dc.Clock, dc.Epoch, true
	if dc.HeadBytes > 0 {
		e.keep = uint32(min(dc.HeadBytes, math.MaxUint32))
	}
	e.nextID.Store(dc.FirstID &^ 1)
	e.state.pacer = drivenPacer{}
	return &Driven{e: e}, nil
}

// Endpoint is the Endpoint behind d, for its configuration and counters.
func (d *Driven) Endpoint() *Endpoint { return d.e }

// Deliver runs the protocol for packets that arrived now.
func (d *Driven) Deliver(pkts []Packet) {
	e := d.e
	if !e.lock() {
		return
	}
	now := e.now()
	for i := range pkts {
		e.handlePacket(now, &pkts[i])
	}
	e.unlock()
	d.settle()
}

// Pause is a PFC PAUSE frame (wire.ParsePFCFrame) that arrived now: the
// roce variant stops its data for the quanta of its data's priority, or
// resumes at quanta 0; other variants ignore it, as their hosts do.
func (d *Driven) Pause(vec uint8, quanta *[wire.PFCClasses]uint16) {
	e := d.e
	po, ok := e.proto.(pauseObeyer)
	if !ok {
		return
	}
	prio := po.pausePriority()
	if vec&(1<<prio) == 0 || !e.lock() {
		return
	}
	po.pause(e.now(), quanta[prio])
	e.unlock()
	d.settle()
}

// Tick runs the Endpoint's timers; the caller calls it every
// homaconf.Config.Tick.
func (d *Driven) Tick() {
	e := d.e
	if !e.lock() {
		return
	}
	e.onTick(e.now())
	e.unlock()
	d.settle()
}

// Timer says when the pacer wants to be woken (Wake), if it does.
func (d *Driven) Timer() (at time.Duration, armed bool) {
	e := d.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state.armedAt, e.state.armed && !e.closed
}

// Wake is the pacer's timer firing: DATA the link now has room for goes
// out.
func (d *Driven) Wake() {
	e := d.e
	if !e.lock() {
		return
	}
	e.state.armed = false
	e.unlock()
	d.settle()
}

// Call starts an RPC to dest; done runs when it completes or fails, from
// inside a later (or this) call of d's. The Endpoint reads req until then.
func (d *Driven) Call(dest netip.AddrPort, req []byte, done func(resp []byte, info CallInfo, err error)) {
	d.call(dest, req, false, done)
}

// Send starts a one-way message to dest: a request its server does not
// answer (it ends it with ServerRPC.Drop). done runs when Delivered says
// the receiver has the message whole, or when it fails. The returned id
// is the one the receiver's ServerRPC.ID reports. Until then the message
// is an RPC like any other: granted, paced, retransmitted on the
// receiver's RESENDs; only its end differs.
func (d *Driven) Send(dest netip.AddrPort, msg []byte, done func(info CallInfo, err error)) uint64 {
	return d.call(dest, msg, true, func(_ []byte, info CallInfo, err error) { done(info, err) })
}

// Delivered ends the one-way message id (Send) as its receiver now has it
// whole. It stands for an acknowledgement that costs the wire nothing: a
// simulation, which sees both hosts on one clock, calls it from the
// receiver's handler; no packet carries it. Other ids are ignored.
func (d *Driven) Delivered(id uint64) {
	e := d.e
	if !e.lock() {
		return
	}
	if r := e.state.clients[id]; r != nil && r.oneWay {
		e.finishCall(e.now(), r, nil, nil)
	}
	e.unlock()
	d.settle()
}

func (d *Driven) call(dest netip.AddrPort, req []byte, oneWay bool, done func(resp []byte, info CallInfo, err error)) uint64 {
	e := d.e
	id := e.nextID.Add(2)
	r := &rpc{id: id, client: true, oneWay: oneWay, info: callInfo{sent: e.now()}}
	if e.cfg.TraceGrants {
		r.info.grants = new([]grantEvent)
	}
	if err := e.checkLength(len(req)); err != nil {
		done(nil, e.callInfo(r), fmt.Errorf("homa: call %v: %w", dest, err))
		return id
	}
	if !e.lock() {
		done(nil, e.callInfo(r), fmt.Errorf("homa: call %v: %w", dest, ErrClosed))
		return id
	}
	r.callDone = done // kept on the RPC, not in a map by id: one look-up less a Call
	e.startCall(e.now(), r, dest, req)
	e.unlock()
	d.settle()
	return id
}

// Serve takes the requests to port: handler runs for each complete one,
// inside one of d's calls, and replies with ServerRPC.Reply, now or later.
func (d *Driven) Serve(port uint16, handler func(*ServerRPC)) error {
	s, err := d.e.Listen(port)
	if err != nil {
		return err
	}
	d.servers = append(d.servers, drivenServer{s: s, handler: handler})
	slices.SortFunc(d.servers, func(a, b drivenServer) int { return cmp.Compare(a.s.port, b.s.port) })
	return nil
}

// Close fails the outstanding Calls (their callbacks run) and closes the
// Conn.
func (d *Driven) Close() error {
	err := d.e.Close()
	d.settle()
	return err
}

// settle hands what the last event finished to the caller's callbacks:
// Calls' results and servers' requests, until a round hands nothing (a
// callback may start a Call, or a reply finish nothing new).
func (d *Driven) settle() {
	if d.running {
		return
	}
	d.running = true
	defer func() { d.running = false }()
	e := d.e
	for {
		e.mu.Lock()
		d.done = append(d.done[:0], e.state.finished...)
		clear(e.state.finished)
		e.state.finished = e.state.finished[:0]
		e.mu.Unlock()
		handed := len(d.done)
		for i, r := range d.done {
			d.done[i] = nil
			if cb := r.callDone; cb != nil {
				r.callDone = nil
				cb(r.resp, e.callInfo(r), r.err)
			}
		}
		for _, s := range d.servers {
			for sr, ok := s.s.take(); ok; sr, ok = s.s.take() {
				handed++
				s.handler(sr)
			}
		}
		if handed == 0 {
			return
		}
	}
}

// checkInOrder runs checkRPC on every RPC in id order (clients, then each
// peer's servers by peer address), the order a Driven Endpoint's ticks
// take so that a simulation repeats exactly; it returns how many server
// RPCs there are.
func (e *Endpoint) checkInOrder(now time.Duration) int {
	st := &e.state
	byID := func(a, b *rpc) int { return cmp.Compare(a.id, b.id) }
	// The tick's buffer: checkRPC may end RPCs while the tick walks it.
	rs := st.tickRPCs[:0]
	for _, r := range st.clients {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, byID)
	for _, r := range rs {
		e.checkRPC(now, r)
	}
	// A copy of the peers too: a finished call's callback may call a
	// new peer, whom this tick does not visit.
	st.tickPeers = append(st.tickPeers[:0], st.byAddr...)
	servers := 0
	for _, p := range st.tickPeers {
		if len(p.servers) == 0 {
			continue
		}
		rs = rs[:0]
		for _, r := range p.servers {
			rs = append(rs, r)
		}
		slices.SortFunc(rs, byID)
		for _, r := range rs {
			e.checkRPC(now, r)
		}
		servers += len(p.servers)
	}
	clear(rs)
	st.tickRPCs = rs[:0]
	clear(st.tickPeers)
	return servers
}

// drivenPacer is a Driven Endpoint's pacer timer: the arm time is in
// endpointState.armedAt, which the caller reads through Timer.
type drivenPacer struct{}

func (drivenPacer) Reset(time.Duration) {}
func (drivenPacer) C() <-chan time.Time { return nil }
func (drivenPacer) Close() error        { return nil }
