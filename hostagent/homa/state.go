package homa

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// endpointState is the protocol state of an Endpoint: its RPCs, peers,
// grant scheduler, cutoffs, pacer and transmit batch. Only code holding
// Endpoint.mu touches it.
type endpointState struct {
	// handoffs counts results handed to waiting goroutines (requests to
	// servers, finished Calls), so the reader knows to yield to them.
	handoffs uint64
	clients  map[uint64]*rpc
	tombQ    []tomb // every peer's tombstones in expiry order, from tombHead on
	tombHead int
	ports    map[uint16]*Server
	peers    map[uint32]*peer // by v4(address)
	// byAddr is every peer in address order, which a Driven Endpoint's
	// tick follows (checkInOrder, with its buffers tickRPCs and
	// tickPeers).
	byAddr    []*peer
	tickRPCs  []*rpc
	tickPeers []*peer
	resends   resendLimiter // RESENDs answered per source this tick
	inHeld    uint64        // charged to incomplete inbound messages (charge)
	inBufs    bufPool       // incomplete messages' outgrown buffers (growIn)
	sendq     sendQueue
	sched     grantSched
	schedDue  bool
	cut       cutoffTable
	dynamic   bool
	sizes     []uint32 // ring of recent inbound message lengths
	sizeCap   int      // the ring's length once full (grown to, not allocated up front)
	sizePos   int
	sizeNew   int
	scratch   []uint32
	gaps      []span
	ackPeers  []*peer
	tx        []Packet
	txN       int
	// txPad is the uncarried payload of the packet being built
	// (appendBody), which txCommitTOS hands on as its Pad.
	txPad    int
	linkIdle time.Duration
	paced    bool // the pacer holds DATA for the link (pacer_late_ns)
	pacer    pacerTimer
	armed    bool
	spinning bool
	spunAt   time.Duration // clock reading of the last pacer poll
	tick     uint64
	picks    uint64
	armedAt  time.Duration // when the armed pacer timer fires
	pkt      uint32        // DATA payload per packet
	// pol is the Homa family's policy (nil for other protocols) and
	// unsched how much of a message it sends before any credit
	// (newPolicy).
	pol      policy
	unsched  uint32
	ctrlPrio uint8
	prios    int
	// finished are a Driven Endpoint's Calls that ended during the
	// current event, for its caller's callbacks.
	finished []*rpc
	// txOver is what each packet takes on the link beyond its buffer
	// (IPv4 header, frame overhead, the protocol's encapsulation).
	txOver int
	// rule turns sizes into cutoffs; weighs is its scratch. Last, with
	// the other cold fields: the hot ones keep their cache lines.
	rule   cutoffRule
	weighs []weighed
	// byNum is every peer in the order it was first seen (peer.num), for
	// the tombstones' queue (a tick's).
	byNum []*peer
}

// init readies st for an Endpoint with configuration cfg (defaults filled
// in) on conn, which reads and writes batches of up to batch packets.
func (st *endpointState) init(cfg homaconf.Config, conn Conn, batch int) {
	st.clients, st.ports, st.peers = map[uint64]*rpc{}, map[uint16]*Server{}, map[uint32]*peer{}
	// The slots' buffers are made at their first use (txBuf): a twin of
	// thousands of hosts would hold a batch of full frames for each.
	st.tx = make([]Packet, batch)
	st.pkt = cfg.PayloadPerPacket()
	st.prios = cfg.Priorities
	st.rule = ruleOf(cfg, 0)
	st.ctrlPrio = uint8(cfg.Priorities - 1)
	st.cut = cutoffTable{version: 1, cut: defaultCutoffs(cfg.Priorities, cfg.MaxMessageBytes)}
	if len(cfg.UnschedCutoffs) > 0 {
		st.cut.cut = [wire.MaxPriorities]uint32{}
		copy(st.cut.cut[:], cfg.UnschedCutoffs)
		linuxCutoffs(&st.cut.cut, cfg.Priorities)
	} else if !cfg.Basic && cfg.Priorities > 1 {
		st.dynamic = true
		st.sizeCap = 10 * cfg.CutoffSamples
	}
	st.sched = grantSched{p: schedParams{
		overcommit: cfg.Overcommit, window: cfg.WindowBytes, maxIncoming: cfg.MaxIncoming,
		basic: cfg.Basic, basicWindow: cfg.UnschedBytes, fifoPermille: cfg.FIFOGrantPermille,
		fifoBytes: roundUp(cfg.FIFOGrantBytes, st.pkt), packet: st.pkt, increment: roundUp(cfg.GrantIncrement, st.pkt), highPrio: uint8(max(0, cfg.Priorities-2)),
		boostTail: boostTail(cfg),
	}, cut: &st.cut, prios: cfg.Priorities}
	st.sched.maxSchedPrio = maxSchedPriority(&st.cut.cut, cfg.Priorities, cfg.MaxMessageBytes)
	st.pacer = newPacer(conn)
}

// boostTail is how few bytes left to grant boost a grant to an unscheduled
// level: one RTT of bytes when cfg.BoostTail, else none.
func boostTail(cfg homaconf.Config) uint32 {
	if cfg.BoostTail {
		return cfg.UnschedBytes
	}
	return 0
}

// lock takes the state for a caller's event; false, with the state not
// held, once the Endpoint is closed.
func (e *Endpoint) lock() bool {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return false
	}
	return true
}

// unlock ends an event: what the protocol has due (grants the scheduler
// asked for, DATA the pacer allows) and the transmit batch go out before
// the state is released. The
// pacer reads the clock afresh: the event's reading is a few µs old, and at
// 1 Gbit/s that is a third of a packet it would leave unsent.
func (e *Endpoint) unlock() {
	e.proto.send()
	e.flush()
	if e.state.spinning {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
	e.mu.Unlock()
}

// now reads the Endpoint's clock, the time since it started: the
// protocol keeps its times on it.
func (e *Endpoint) now() time.Duration {
	if e.clock != nil {
		return e.clock()
	}
	return time.Since(e.epoch)
}

// at converts a reading of the Endpoint's clock into a wall-clock time,
// for CallInfo.
func (e *Endpoint) at(d time.Duration) time.Time { return e.epoch.Add(d) }

// startCall registers the client RPC r and starts sending req, its
// request, to dest.
func (e *Endpoint) startCall(now time.Duration, r *rpc, dest netip.AddrPort, req []byte) {
	st := &e.state
	r.peer = e.peer(dest.Addr())
	r.lport, r.rport = e.cfg.ClientPort, dest.Port()
	r.heard = now
	var flags uint8
	if e.cfg.IncastControl && len(st.clients) >= e.cfg.IncastThreshold {
		flags = wire.FlagIncast
	}
	e.startOut(now, r, e.bodyOf(req), st.unsched, flags)
	st.clients[r.id] = r
}

// cancelCall aborts the client RPC r for its caller, unless it has
// finished meanwhile.
func (e *Endpoint) cancelCall(now time.Duration, r *rpc) {
	if e.state.clients[r.id] == r {
		e.finishCall(now, r, nil, fmt.Errorf("homa: call %d: %w", r.id, ErrAborted))
	}
}

// startReply starts sending resp as the response of the server RPC r;
// false if the RPC was forgotten meanwhile (its client gave it up).
func (e *Endpoint) startReply(now time.Duration, r *rpc, resp []byte) bool {
	if r.dead || r.state != srvServing {
		e.c.unknownRPC.Add(1)
		return false
	}
	unsched := e.state.unsched
	if r.incast {
		unsched = min(unsched, e.cfg.IncastUnschedBytes)
	}
	r.state = srvResponding
	r.silent = 0
	e.startOut(now, r, e.bodyOf(resp), unsched, 0)
	return true
}

// shutdown fails every outstanding Call.
func (e *Endpoint) shutdown() {
	now := e.now()
	for _, r := range e.state.clients {
		e.finishCall(now, r, nil, fmt.Errorf("homa: call %d: %w", r.id, ErrClosed))
	}
}

// peer returns the state kept for addr, creating it on first use.
func (e *Endpoint) peer(addr netip.Addr) *peer {
	k := v4(addr)
	p := e.state.peers[k]
	if p == nil {
		p = &peer{addr: addr, servers: map[uint64]*rpc{}, num: uint32(len(e.state.byNum))}
		e.state.byNum = append(e.state.byNum, p)
		if e.cfg.SharedCutoffs {
			p.cutoffs = e.state.cut // the peer's own, which it would send
		}
		e.state.peers[k] = p
		i, _ := slices.BinarySearchFunc(e.state.byAddr, k, func(q *peer, k uint32) int { return cmp.Compare(v4(q.addr), k) })
		e.state.byAddr = slices.Insert(e.state.byAddr, i, p)
	}
	return p
}

// v4 is an IPv4 address as the key of the peer map (Go's maps take a fast
// path for 32- and 64-bit keys).
func v4(addr netip.Addr) uint32 {
	b := addr.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// startOut begins sending data as r's outbound message, as its protocol
// does.
func (e *Endpoint) startOut(now time.Duration, r *rpc, b body, unsched uint32, flags uint8) {
	e.proto.startOut(now, r, b, unsched, flags)
}

// startMessage begins sending data as r's outbound DATA (the Homa
// family's startOut).
func (e *Endpoint) startMessage(now time.Duration, r *rpc, b body, unsched uint32, flags uint8) {
	n := b.length
	level, announce := e.state.pol.announces(r.peer, n)
	announce = announce && n > unsched
	if announce {
		// A message that needs grants sends no unscheduled bytes: it
		// announces itself and waits for grants from byte 0.
		unsched = 0
	}
	// A restarted request keeps its place in the send queue (enqueue
	// reorders it).
	r.out = msgOut{data: b.data, length: n, unsched: min(n, unsched), granted: min(n, unsched),
		flags: flags, birth: now, rexmit: r.out.rexmit[:0],
		queued: r.out.queued, slot: r.out.slot, seq: r.out.seq}
	if announce {
		e.sendStartMsg(now, r, level)
	}
	e.enqueue(r)
}

// enqueue queues r's outbound message if it has something to send, or
// reorders it in the queue after a change of its bytes left.
func (e *Endpoint) enqueue(r *rpc) {
	if r.out.queued || r.out.sendable() {
		e.state.sendq.add(r)
	}
}

// finishCall completes a client RPC with resp or err.
func (e *Endpoint) finishCall(now time.Duration, r *rpc, resp []byte, err error) {
	st := &e.state
	delete(st.clients, r.id)
	r.dead = true
	e.release(r)
	if r.in.tracked {
		st.sched.remove(&r.in)
		st.schedDue = true
	}
	r.info.done = now
	if err != nil {
		e.c.callsFailed.Add(1)
	} else {
		e.c.callsDone.Add(1)
		if !e.cfg.AtLeastOnce && !r.oneWay {
			e.queueAck(r.peer, ackRef{id: r.id, port: r.rport})
		}
	}
	r.resp, r.err = resp, err
	e.proto.callDone(r, err)
	if e.driven {
		st.finished = append(st.finished, r)
		return
	}
	r.done <- struct{}{}
	st.handoffs++
}

// forgetServer drops a server RPC; a tombstone keeps late duplicates of an
// executed request from running it again (at-most-once).
func (e *Endpoint) forgetServer(r *rpc, executed bool) {
	st := &e.state
	p := r.peer
	delete(p.servers, r.id)
	r.dead = true
	e.release(r)
	if r.in.tracked {
		st.sched.remove(&r.in)
		st.schedDue = true
	}
	if executed && !e.cfg.AtLeastOnce {
		exp := st.tick + 2*uint64(e.cfg.TimeoutTicks)
		p.tombs.set(r.id, exp)
		st.tombQ = append(st.tombQ, tomb{id: r.id, exp: exp, peer: p.num})
	}
}

// lookup finds the RPC a packet from addr belongs to.
func (e *Endpoint) lookup(addr netip.Addr, c *wire.Common) *rpc {
	if c.FromClient() {
		if p := e.state.peers[v4(addr)]; p != nil {
			return p.servers[c.SenderID]
		}
		return nil
	}
	return e.state.clients[c.LocalID()]
}
