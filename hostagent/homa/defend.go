package homa

import (
	"errors"
	"math/bits"
	"net/netip"
	"unsafe"

	"github.com/homatb/homatb/wire"
)

// The Endpoint's defences against packets it must not act on: malformed
// ones (every decoder validates strictly; a failure is counted by its
// kind), packets about an RPC that come from anyone but the RPC's peer,
// GRANTs and RESENDs for bytes the message does not have, and RESENDs
// beyond a per-peer rate. Each drop is counted by reason (Stats.Drops),
// so a run under attack shows what the hosts refused. Everything here runs
// on the receive path only for packets it refuses, or as a comparison on
// fields already decoded: no allocation, no lock of its own.

// DropReason is why the Endpoint dropped a received packet.
type DropReason uint8

// The reasons. The first ones, up to DropLengthMismatch, are malformed
// packets (Stats.Malformed counts them all); the others are well-formed
// packets the Endpoint refuses.
const (
	// DropTruncated: shorter than its type's header.
	DropTruncated DropReason = iota
	// DropUnknownType: a type code no transport of the engine uses.
	DropUnknownType
	// DropBadHeader: a doff that contradicts the type.
	DropBadHeader
	// DropBadLength: a zero or out-of-range length field, or a DATA
	// packet without payload.
	DropBadLength
	// DropBadOffset: an offset, or payload end, beyond the message.
	DropBadOffset
	// DropBadField: another forbidden value (priority, retransmit flag,
	// CUTOFFS version, a trimmed flag where none belongs).
	DropBadField
	// DropTooLarge: a message longer than Config.MaxMessageBytes.
	DropTooLarge
	// DropWrongVariant: a valid type this variant does not use (an NDP
	// PULL at a Homa host).
	DropWrongVariant
	// DropLengthMismatch: DATA whose message length differs from that of
	// the message's earlier packets.
	DropLengthMismatch
	// DropWrongPeer: names an existing RPC but comes from another
	// address, or another pair of ports, than the RPC's peer (a forged
	// GRANT or RESEND with a guessed or overheard id).
	DropWrongPeer
	// DropBadRange: a GRANT beyond the message's length, or a RESEND
	// starting at or beyond it.
	DropBadRange
	// DropResendLimited: a RESEND beyond Config.ResendLimit from its
	// source address in this tick; left unanswered.
	DropResendLimited
	// DropInMemory: DATA or START_MSG whose message would take the memory
	// held for incomplete inbound messages beyond
	// Config.MaxIncompletePeerBytes for its source address or
	// Config.MaxIncompleteBytes in all.
	DropInMemory
	// NumDropReasons bounds the reasons, for arrays indexed by them.
	NumDropReasons
)

var dropNames = [NumDropReasons]string{
	"truncated", "unknown_type", "bad_header", "bad_length", "bad_offset", "bad_field",
	"too_large", "wrong_variant", "length_mismatch", "wrong_peer", "bad_range", "resend_limited",
	"in_memory",
}

// String returns the reason's name in counters ("truncated", ...).
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// Malformed reports whether r is a malformed packet rather than a
// well-formed one refused.
func (r DropReason) Malformed() bool { return r <= DropLengthMismatch }

// wireReason classifies a decoder's error.
func wireReason(err error) DropReason {
	switch {
	case errors.Is(err, wire.ErrTruncated):
		return DropTruncated
	case errors.Is(err, wire.ErrUnknownType):
		return DropUnknownType
	case errors.Is(err, wire.ErrBadHeader):
		return DropBadHeader
	case errors.Is(err, wire.ErrBadLength):
		return DropBadLength
	case errors.Is(err, wire.ErrBadOffset):
		return DropBadOffset
	default:
		return DropBadField
	}
}

// drop counts a dropped packet.
func (e *Endpoint) drop(r DropReason) {
	e.c.drops[r].Add(1)
	if r.Malformed() {
		e.c.malformed.Add(1)
	}
}

// dropErr counts a packet a decoder refused with err.
func (e *Endpoint) dropErr(err error) { e.drop(wireReason(err)) }

// fromPeer reports whether a packet with header c from addr is from r's
// peer: its address, and its ports mirrored. Server RPCs are found by
// their peer's address, client RPCs by id alone, so for those the address
// check is what keeps another host from steering our Call.
func fromPeer(addr netip.Addr, c *wire.Common, r *rpc) bool {
	return v4(addr) == v4(r.peer.addr) && c.SPort == r.rport && c.DPort == r.lport
}

// resendSlots is the size of the RESEND rate limiter's table: source
// addresses hash into it, and two sharing a slot share a budget.
const resendSlots = 256

// resendLimiter counts the RESENDs answered per source address per tick
// in a fixed table, so a stream of RESENDs from forged addresses costs no
// memory per address.
type resendLimiter struct {
	slots [resendSlots]struct {
		tick uint64
		n    int
	}
}

// allow reports whether one more RESEND from addr may be answered in
// tick, at most limit per tick.
func (l *resendLimiter) allow(addr netip.Addr, tick uint64, limit int) bool {
	k := v4(addr)
	s := &l.slots[(k*2654435761)>>24%resendSlots] // Fibonacci hashing
	if s.tick != tick {
		s.tick, s.n = tick, 0
	}
	if s.n >= limit {
		return false
	}
	s.n++
	return true
}

// rpcCharge is what an incomplete inbound message is charged besides its
// buffer: the RPC that holds it, so a flood of one-packet messages is
// bounded by what it really costs, not only by its few payload bytes.
const rpcCharge = uint64(unsafe.Sizeof(rpc{}))

// charge commits n more bytes to r's incomplete inbound message, or
// reports false when that would take r's peer or the Endpoint beyond its
// bound (Config.MaxIncompletePeerBytes, Config.MaxIncompleteBytes).
func (e *Endpoint) charge(r *rpc, n uint64) bool {
	st, p := &e.state, r.peer
	if !e.cfg.DisableDefences && (p.inHeld+n > e.cfg.MaxIncompletePeerBytes || st.inHeld+n > e.cfg.MaxIncompleteBytes) {
		return false
	}
	p.inHeld += n
	st.inHeld += n
	r.in.held += n
	return true
}

// release returns what r's inbound message was charged: it is complete,
// and its buffer now the application's, or r is gone or starts afresh.
func (e *Endpoint) release(r *rpc) {
	r.peer.inHeld -= r.in.held
	e.state.inHeld -= r.in.held
	r.in.held = 0
}

// growIn makes r's inbound buffer hold at least its first end bytes:
// twice its size, so a message is copied O(log n) times, or just end when
// the bound does not leave room for that. False, with nothing changed,
// when the bound leaves no room for end either.
//
// Only a buffer of the whole message is handed on (to the caller or the
// server); the smaller ones it outgrew never leave the Endpoint, so they
// go back to a bounded pool for the next messages to grow through
// instead of to the collector (a long run of large messages otherwise
// allocates and drops about the message's size again in them).
func (e *Endpoint) growIn(r *rpc, end uint32) bool {
	m := &r.in
	have := m.size
	n := min(m.length, max(end, 2*have))
	if !e.charge(r, uint64(n-have)) {
		if n = end; !e.charge(r, uint64(n-have)) {
			return false
		}
	}
	// An Endpoint that keeps only a message's first bytes charges for
	// the buffer it would have (the bounds act as they do on real bytes)
	// and allocates what it keeps.
	m.size = n
	k := min(n, e.keep)
	if k <= uint32(len(m.buf)) {
		return true
	}
	var b []byte
	if k < m.length {
		b = e.state.inBufs.get(k)
	} else {
		b = make([]byte, k)
	}
	copy(b, m.buf)
	if len(m.buf) > 0 && uint32(len(m.buf)) < m.length {
		e.state.inBufs.put(m.buf) // shorter than the message: never handed on
	}
	m.buf = b
	return true
}

// bufPool keeps buffers of power-of-two capacities, at most
// bufPoolBytes of them, for incomplete messages to grow through. A
// buffer from it holds an earlier message's bytes: a message's bytes are
// all written before it is handed on (it is complete only when every
// range has arrived), so none of them is seen.
type bufPool struct {
	free  [33][][]byte // by bits.Len32(capacity-1)
	bytes int
}

// bufPoolBytes bounds what a bufPool holds: a few messages' growth.
const bufPoolBytes = 1 << 20

// get returns a buffer of length n (> 0) from the pool, or a new one of
// the next power-of-two capacity.
func (p *bufPool) get(n uint32) []byte {
	c := bits.Len32(n - 1)
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[c] = l[:len(l)-1]
		p.bytes -= cap(b)
		return b[:n]
	}
	return make([]byte, n, 1<<c)
}

// put keeps b for a later get, unless it is not the pool's (its capacity
// is no power of two) or the pool is full.
func (p *bufPool) put(b []byte) {
	c := bits.Len32(uint32(cap(b)) - 1)
	if cap(b) == 0 || cap(b) != 1<<c || p.bytes+cap(b) > bufPoolBytes {
		return
	}
	p.free[c] = append(p.free[c], b[:0])
	p.bytes += cap(b)
}
