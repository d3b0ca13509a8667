// Package wire encodes and decodes Homa packets in the layout of the Linux
// HomaModule (HEAD, protocol 146): a 28-byte common header followed by a
// type-specific body. It holds no state; every decoder validates strictly
// and returns an error instead of panicking on malformed input.
//
// Departures from the Linux format are listed in docs/homa.md; the only one
// visible here are the DATA flags byte (FlagIncast), which reuses the first
// byte of the Linux pad, the START_MSG type (0x19), which Linux lacks, and
// for the comparison transports (docs/transports.md) the pFabric rank and
// the trimmed flag in unused common-header bytes and NDP's PULL (0x1a) and
// NACK (0x1b).
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// IPProto is Homa's IANA-assigned IPv4 protocol number (HomaModule's
// IPPROTO_HOMA). The comparison transports built on the engine share it
// and this layout; the switch parses it (p4/dataplane, p4/switchstats).
const IPProto = 146

// Type is a Homa packet type (the low byte of the TCP ack field in Linux).
type Type uint8

// Packet types, with the HEAD codes of enum homa_packet_type.
const (
	TypeData       Type = 0x10
	TypeGrant      Type = 0x11
	TypeResend     Type = 0x12
	TypeRPCUnknown Type = 0x13
	TypeBusy       Type = 0x14
	TypeCutoffs    Type = 0x15
	TypeFreeze     Type = 0x16
	TypeNeedAck    Type = 0x17
	TypeAck        Type = 0x18
	// TypeStartMsg is homatb's START_MSG (not in HomaModule HEAD, whose
	// receivers drop codes above 0x18).
	TypeStartMsg Type = 0x19
	// TypePull is homatb's NDP PULL (Pull); only NDP endpoints accept it.
	TypePull Type = 0x1a
	// TypeNack is homatb's NDP NACK (Nack); only NDP endpoints accept it.
	TypeNack Type = 0x1b
)

// NumTypes bounds the type codes, for counters indexed by Type-TypeData.
const NumTypes = int(TypeNack-TypeData) + 1

var typeNames = [NumTypes]string{"data", "grant", "resend", "rpc_unknown", "busy", "cutoffs", "freeze", "need_ack", "ack", "start_msg", "pull", "nack"}

// String returns the lower-case name used in counters ("data", "grant", ...).
func (t Type) String() string {
	if t.Valid() {
		return typeNames[t-TypeData]
	}
	return fmt.Sprintf("type(0x%02x)", uint8(t))
}

// Valid reports whether t is a known packet type.
func (t Type) Valid() bool { return t >= TypeData && t <= TypeNack }

// Index returns t's position in [0, NumTypes) for counter arrays.
func (t Type) Index() int { return int(t - TypeData) }

// MaxPriorities is the number of priority levels the format can express
// (CUTOFFS carries this many entries).
const MaxPriorities = 8

// Errors returned by decoders. They are wrapped with the packet type.
var (
	// ErrTruncated means the buffer ends inside a header.
	ErrTruncated = errors.New("truncated packet")
	// ErrInvalid means a header field has a value the protocol forbids.
	ErrInvalid = errors.New("invalid packet")
)

// The kinds of ErrInvalid: each wraps ErrInvalid, so errors.Is(err,
// ErrInvalid) holds for all of them, and a receiver that counts its drops
// by reason tells them apart with errors.Is.
var (
	// ErrUnknownType: the type code is not a known packet type.
	ErrUnknownType = fmt.Errorf("unknown type: %w", ErrInvalid)
	// ErrBadHeader: the common header contradicts the type (doff), or
	// the packet is not of the type its decoder reads.
	ErrBadHeader = fmt.Errorf("bad header: %w", ErrInvalid)
	// ErrBadLength: a length field is zero or out of range (message
	// length, RESEND or NACK length, ACK count, an empty DATA payload).
	ErrBadLength = fmt.Errorf("bad length: %w", ErrInvalid)
	// ErrBadOffset: an offset lies at or beyond the message's length.
	ErrBadOffset = fmt.Errorf("bad offset: %w", ErrInvalid)
	// ErrBadField: another field has a value the protocol forbids
	// (priority, retransmit flag, CUTOFFS version, trimmed flag).
	ErrBadField = fmt.Errorf("bad field: %w", ErrInvalid)
)

var be = binary.BigEndian

func truncated(t Type, need, have int) error {
	return fmt.Errorf("%v: need %d bytes, have %d: %w", t, need, have, ErrTruncated)
}

// invalid returns an error of kind (one of the ErrInvalid kinds above).
func invalid(t Type, kind error, format string, args ...any) error {
	return fmt.Errorf("%v: %s: %w", t, fmt.Sprintf(format, args...), kind)
}
