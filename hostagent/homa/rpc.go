package homa

import (
	"math"
	"net/netip"
	"slices"
	"time"
)

// rpcState is where an RPC is in its life.
type rpcState uint8

const (
	clientActive  rpcState = iota // request going out, response coming in
	srvReceiving                  // server: request coming in
	srvServing                    // server: request handed to the application
	srvResponding                 // server: response going out
	srvAwaitAck                   // server: response fully sent, waiting for an ACK
)

// resendReq is a byte range to retransmit and the priority to use.
type resendReq struct {
	span
	prio uint8
}

// msgOut is an outbound message as the sender sees it.
type msgOut struct {
	// data is the message's bytes the Endpoint carries: all of them, or
	// its first Endpoint.keep (body).
	data      []byte
	length    uint32
	next      uint32 // next byte to send for the first time
	granted   uint32 // bytes that may be sent
	unsched   uint32
	schedPrio uint8 // from the latest GRANT
	flags     uint8
	queued    bool   // in the endpoint's send queue
	pulled    uint32 // NDP: the receiver's PULL count used so far
	// spare counts NDP PULLs that found nothing to send (no NACKed packet
	// held, no new byte left): the next NACK spends one at once.
	spare uint32
	// slot is the message's index in the send queue's heap, and seq the
	// queue's count of enqueues when it joined (the last tie-break; it
	// wraps only after 4 billion messages of one host). They and owed are
	// 32 bits to fill what was padding: an rpc above 568 bytes moves to
	// the next allocation size class (Go's 8-byte malloc header), 128
	// more bytes per RPC (TestRPCSize).
	slot   int32
	seq    uint32
	owed   uint32 // the bytes rexmit asks for (left, per packet)
	rexmit []resendReq
	birth  time.Duration
}

// body is an outbound message as the Endpoint keeps it: its length and
// the bytes of it the Endpoint carries (msgOut.data).
type body struct {
	data   []byte
	length uint32
}

// bodyOf is msg as the Endpoint keeps it: whole, or, when it keeps only
// a message's first bytes, a copy of them, so that the caller may reuse
// its buffer at once.
func (e *Endpoint) bodyOf(msg []byte) body {
	n := uint32(len(msg))
	if e.keep == math.MaxUint32 {
		return body{data: msg, length: n}
	}
	return body{data: slices.Clone(msg[:min(n, e.keep)]), length: n}
}

// appendBody appends bytes [off, off+n) of o's message to the packet
// being built in buf; those the Endpoint does not carry become the
// packet's Pad (txCommitTOS).
func (e *Endpoint) appendBody(buf []byte, o *msgOut, off, n uint32) []byte {
	have := uint32(len(o.data))
	if off < have {
		buf = append(buf, o.data[off:min(off+n, have)]...)
	}
	if end := off + n; end > have {
		e.state.txPad += int(end - max(off, have))
	}
	return buf
}

// keepBody writes payload, the bytes of an inbound message from offset
// off, into buf, which holds the message's first bytes the Endpoint
// keeps (all of them, or its first Endpoint.keep).
func keepBody(buf []byte, off uint32, payload []byte) {
	if off < uint32(len(buf)) {
		copy(buf[off:], payload)
	}
}

// bodyBuf is an inbound message's buffer for a message of n bytes: the
// bytes of it the Endpoint keeps.
func (e *Endpoint) bodyBuf(n uint32) []byte { return make([]byte, min(n, e.keep)) }

func (o *msgOut) sendable() bool {
	return len(o.rexmit) > 0 || (o.next < o.granted && o.next < o.length)
}

// left is what the message still has to send: its bytes not yet sent and
// those asked for again. The pacer's SRPT order and its bypass for nearly
// done messages count both: a message whose every byte went out once but
// which owes a long retransmission is not nearly done (counting only new
// bytes put such messages first and past the pacer, so that after heavy
// loss, as pFabric's drops, their resends filled the NIC queue ahead of
// short messages).
func (o *msgOut) left() uint32 { return o.length - o.next + o.owed }

// resend asks for q's bytes again, after those already asked for, less
// any of its ends that are already asked for and not sent yet: a
// receiver asks again every resend interval while this sender's queue
// holds the bytes back, and each copy would go out (and count in left,
// pFabric's rank) once more.
func (o *msgOut) resend(q resendReq) {
	// Each pass only shrinks q, and stops when one moves neither end: a
	// span passed before may hold an end only a later one moved.
	for moved := true; moved; {
		moved = false
		for _, w := range o.rexmit {
			if w.start <= q.start && q.start < w.end {
				q.start, moved = w.end, true
			}
			if w.start < q.end && q.end <= w.end {
				q.end, moved = w.start, true
			}
			if q.end <= q.start {
				return
			}
		}
	}
	o.rexmit = append(o.rexmit, q)
	o.owed += q.end - q.start
}

// rpc is one RPC on either side. Both sides key it by the client's id.
type rpc struct {
	id     uint64 // client id (even)
	client bool
	state  rpcState
	dead   bool // finished; stale references skip it
	incast bool // server: the client asked for a small unscheduled response
	// oneWay marks a client RPC whose server does not reply (Driven.Send):
	// it ends when Driven.Delivered says the receiver has it whole, and
	// its server forgets it then, so no ACK follows.
	oneWay bool
	resent bool // a RESEND went out since the request (re)started
	lport  uint16
	peer   *peer
	rport  uint16
	// refusals counts restarts on an RPC_UNKNOWN that answered DATA. It
	// and the small fields above fill what was padding (TestRPCSize).
	refusals int32
	out      msgOut
	in       msgIn
	silent   int // ticks without a packet from the peer
	restarts int
	restart  uint64 // tick of the last restart
	// heard is when the peer last showed progress on r (DATA, GRANT,
	// BUSY, PULL, NACK; or r began). suspect is heard as of the first
	// RESEND about r, 0 again once the peer answers BUSY (it was only
	// slow): the start of a loss-recovery wait, confirmed into
	// info.recoveryFrom when a retransmission or a restart shows that a
	// packet was lost.
	heard, suspect time.Duration
	done           chan struct{} // client: signalled once resp and err are set
	// callDone is a Driven Endpoint's client callback, run by settle once
	// the Call has ended (then cleared).
	callDone func(resp []byte, info CallInfo, err error)
	resp     []byte
	err      error
	info     callInfo
	handle   ServerRPC // server: what the application gets
}

// progress notes that the peer just showed progress on r.
func (r *rpc) progress(now time.Duration) {
	r.silent, r.heard = 0, now
}

// lost confirms that r waits for a lost packet: the wait began when the
// silence that led to the RESEND did, or now if no RESEND went out (NDP
// learns of a loss from a trimmed header). Times are kept above 0, which
// means "never". A finished RPC's record belongs to its caller: a late
// loss of its packets is not written there.
func (r *rpc) lost(now time.Duration) {
	if r.dead || r.info.recoveryFrom != 0 {
		return
	}
	if r.suspect != 0 {
		r.info.recoveryFrom = r.suspect
	} else {
		r.info.recoveryFrom = max(now, 1)
	}
}

// senderID is the id this side writes into the common header.
func (r *rpc) senderID() uint64 {
	if r.client {
		return r.id
	}
	return r.id | 1
}

// callInfo is CallInfo as the protocol keeps it: times on the Endpoint's
// clock (0: not yet) and small counters, a third of CallInfo's size,
// converted once when the Call returns.
type callInfo struct {
	sent, requestSent, firstResponse, done, firstGrant, lastGrant time.Duration
	// recoveryFrom is when this side began waiting for a lost packet of
	// the message it receives (or, on a client, of its request), 0 if it
	// never did.
	recoveryFrom                                               time.Duration
	grantsReceived, grantsSent, resends, retransmits, restarts int32
	// grants is every GRANT of the Call with homaconf.Config.TraceGrants (a
	// pointer: an untraced RPC, 536 B with the loss-recovery times, stays
	// within Go's 576 B size class).
	grants *[]grantEvent
}

// grantEvent is a GrantEvent on the Endpoint's clock.
type grantEvent struct {
	at     time.Duration
	offset uint32
	prio   uint8
	sent   bool
}

// traceGrant records a GRANT of r's when the Call's grants are traced.
func (r *rpc) traceGrant(now time.Duration, offset uint32, prio uint8, sent bool) {
	if r.info.grants != nil {
		*r.info.grants = append(*r.info.grants, grantEvent{at: now, offset: offset, prio: prio, sent: sent})
	}
}

// CallInfo describes how one Call went, for per-RPC records.
type CallInfo struct {
	// ID is the RPC id (even, unique per Endpoint).
	ID uint64
	// Sent is when the Endpoint accepted the request; RequestSent when its
	// last byte was first handed to the socket.
	Sent, RequestSent time.Time
	// FirstResponse is the arrival of the first response packet; Done the
	// completion (or failure).
	FirstResponse, Done time.Time
	// GrantsReceived for the request and GrantsSent for the response, with
	// the times of the first and last grant received.
	GrantsReceived, GrantsSent int
	FirstGrant, LastGrant      time.Time
	// Resends counts RESENDs sent or answered for this RPC, Retransmits the
	// DATA packets sent again, Restarts the RPC_UNKNOWN restarts.
	Resends, Retransmits, Restarts int
	// Grants lists every GRANT of the Call in the order they were sent or
	// received, with homaconf.Config.TraceGrants; nil without.
	Grants []GrantEvent
	// RecoveryFrom is when the Call began waiting for loss recovery: the
	// last sign of progress from the server before the RESEND that found a
	// packet of the response, or the request, lost (answered by a
	// retransmission or, for a lost request, RPC_UNKNOWN and a restart).
	// Zero if the Call never waited for a lost packet.
	RecoveryFrom time.Time
	// RespLength is the response's length in bytes, 0 without one:
	// len(resp), unless the Endpoint keeps only a message's first bytes
	// (DrivenConfig.HeadBytes).
	RespLength int
}

// GrantEvent is one GRANT of a traced Call.
type GrantEvent struct {
	At time.Time
	// Offset is the message's granted bytes after it; Priority the level
	// it asked for.
	Offset   uint32
	Priority uint8
	// Sent: this host sent it, for the response; else it came in, for the
	// request.
	Sent bool
}

// Retries is the transport-level retry count for records: resends plus
// restarts.
func (c CallInfo) Retries() int { return c.Resends + c.Restarts }

// peer is what an Endpoint knows about another host.
type peer struct {
	addr       netip.Addr
	cutoffs    cutoffTable // the peer's cutoffs, for our unscheduled bytes to it
	cutoffTick uint64      // tick we last sent it our CUTOFFS
	acks       []ackRef    // RPCs of the peer's servers we may ack
	ackQueued  bool
	inHeld     uint64 // charged to the peer's incomplete inbound messages
	// servers are the peer's RPCs to our servers, by client id, and tombs
	// the ones forgotten after they ran -> tick the tombstone expires.
	servers map[uint64]*rpc
	tombs   tombstones
	// num is the peer's place in endpointState.byNum.
	num uint32
}

type ackRef struct {
	id   uint64
	port uint16
}

// tomb is a tombstone's place in the expiry queue. It names its peer by
// number (endpointState.byNum), not pointer: the queue holds every
// tombstone of the last 2*TimeoutTicks, hundreds of millions in a
// simulated collective of thousands of hosts, and a queue without
// pointers is one the garbage collector does not scan.
type tomb struct {
	id, exp uint64
	peer    uint32
}
