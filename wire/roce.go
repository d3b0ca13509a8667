package wire

import (
	"errors"
	"fmt"
)

// RoCEv2 packets as the engine's roce variant sends them: the UDP payload
// of a datagram to port RoCEPort, an InfiniBand Base Transport Header
// (BTH), an ACK Extended Transport Header (AETH) on acknowledgements,
// the payload, and the 4-byte invariant CRC (ICRC) field. The layouts are
// the InfiniBand Architecture Specification's (volume 1, 9.2 and 9.3.5)
// and its RoCEv2 annex (A17): Wireshark's built-in "infiniband" dissector
// decodes them as RoCE on UDP port 4791.
const (
	// RoCEPort is the UDP destination port of RoCEv2.
	RoCEPort = 4791
	// BTHLen, AETHLen and ICRCLen are the header and trailer sizes.
	BTHLen  = 12
	AETHLen = 4
	ICRCLen = 4
	// CNPLen is a congestion notification packet's UDP payload: BTH, 16
	// reserved bytes, ICRC (RoCEv2 annex A17.9.3).
	CNPLen = BTHLen + 16 + ICRCLen
	// RoCEAckLen is an ACK or NAK: BTH, AETH, ICRC.
	RoCEAckLen = BTHLen + AETHLen + ICRCLen
	// RoCEOverhead is what a data packet adds to its payload inside the
	// UDP datagram.
	RoCEOverhead = BTHLen + ICRCLen
	// UDPHeaderLen is the UDP header in front of every RoCEv2 packet.
	UDPHeaderLen = 8
	// PSNMask keeps a packet sequence number's 24 bits.
	PSNMask = 1<<24 - 1
	// DefaultPKey is the default partition key, full membership.
	DefaultPKey = 0xffff
)

// Opcode is a BTH opcode: the transport (top three bits, 000 for a
// reliable connection) and the operation.
type Opcode uint8

// The opcodes the engine uses.
const (
	OpSendFirst  Opcode = 0x00 // RC SEND First
	OpSendMiddle Opcode = 0x01 // RC SEND Middle
	OpSendLast   Opcode = 0x02 // RC SEND Last
	OpSendOnly   Opcode = 0x04 // RC SEND Only
	OpAck        Opcode = 0x11 // RC Acknowledge (AETH follows)
	OpCNP        Opcode = 0x81 // RoCEv2 congestion notification packet
)

// AETH syndromes (bits 7..5: 000 ACK, 011 NAK; the low five bits are the
// credit count of an ACK or the NAK code).
const (
	// SyndromeAck is an ACK with the credit field 11111, "no credit
	// information": the engine's receive queues do not run out.
	SyndromeAck uint8 = 0x1f
	// SyndromeNakPSN is a NAK for a PSN sequence error: packets from the
	// PSN in the BTH on are to be sent again.
	SyndromeNakPSN uint8 = 0x60
)

// BTH is a Base Transport Header.
type BTH struct {
	Opcode Opcode
	// Solicited event, migration request and pad count are zero; the
	// transport header version is 0.
	PKey uint16
	// FECN and BECN are InfiniBand's congestion bits; RoCEv2 signals
	// with ECN in the IP header and CNPs instead, so they stay clear.
	DestQP uint32 // 24 bits
	// AckReq asks the responder to acknowledge this packet.
	AckReq bool
	PSN    uint32 // 24 bits
}

// AppendBTH appends h's 12 bytes to b.
func AppendBTH(b []byte, h *BTH) []byte {
	ack := byte(0)
	if h.AckReq {
		ack = 0x80
	}
	return append(b, byte(h.Opcode), 0, byte(h.PKey>>8), byte(h.PKey),
		0, byte(h.DestQP>>16), byte(h.DestQP>>8), byte(h.DestQP),
		ack, byte(h.PSN>>16), byte(h.PSN>>8), byte(h.PSN))
}

// AppendAETH appends an AETH with syndrome and message sequence number
// msn (24 bits).
func AppendAETH(b []byte, syndrome uint8, msn uint32) []byte {
	return append(b, syndrome, byte(msn>>16), byte(msn>>8), byte(msn))
}

// AppendICRC appends the ICRC field. It is zero: the invariant CRC
// covers the IP and UDP headers the kernel writes after the engine has
// built the packet, and no receiver here checks it.
func AppendICRC(b []byte) []byte { return append(b, 0, 0, 0, 0) }

// AppendCNP appends a whole CNP to the queue pair destQP.
func AppendCNP(b []byte, destQP uint32) []byte {
	b = AppendBTH(b, &BTH{Opcode: OpCNP, PKey: DefaultPKey, DestQP: destQP})
	b = append(b, make([]byte, 16)...)
	return AppendICRC(b)
}

// AppendRoCEAck appends a whole ACK or NAK (syndrome) about psn to destQP.
func AppendRoCEAck(b []byte, destQP, psn uint32, syndrome uint8, msn uint32) []byte {
	b = AppendBTH(b, &BTH{Opcode: OpAck, PKey: DefaultPKey, DestQP: destQP, PSN: psn})
	b = AppendAETH(b, syndrome, msn)
	return AppendICRC(b)
}

// ErrRoCE marks a packet that is not a well-formed RoCEv2 packet of the
// kinds the engine handles.
var ErrRoCE = errors.New("wire: malformed roce packet")

// RoCEPacket is a parsed RoCEv2 UDP payload.
type RoCEPacket struct {
	BTH
	// Syndrome and MSN are the AETH's (OpAck only).
	Syndrome uint8
	MSN      uint32
	// Payload is a SEND's data, without the ICRC.
	Payload []byte
}

// ParseRoCE parses the UDP payload b. Payload aliases b.
func ParseRoCE(b []byte) (RoCEPacket, error) {
	var p RoCEPacket
	if len(b) < BTHLen+ICRCLen {
		return p, fmt.Errorf("%w: %d bytes", ErrRoCE, len(b))
	}
	p.Opcode = Opcode(b[0])
	p.PKey = uint16(b[2])<<8 | uint16(b[3])
	p.DestQP = uint32(b[5])<<16 | uint32(b[6])<<8 | uint32(b[7])
	p.AckReq = b[8]&0x80 != 0
	p.PSN = uint32(b[9])<<16 | uint32(b[10])<<8 | uint32(b[11])
	body := b[BTHLen : len(b)-ICRCLen]
	switch p.Opcode {
	case OpSendFirst, OpSendMiddle, OpSendLast, OpSendOnly:
		if len(body) == 0 {
			return p, fmt.Errorf("%w: send without payload", ErrRoCE)
		}
		p.Payload = body
	case OpAck:
		if len(body) < AETHLen {
			return p, fmt.Errorf("%w: acknowledge without aeth", ErrRoCE)
		}
		p.Syndrome = body[0]
		p.MSN = uint32(body[1])<<16 | uint32(body[2])<<8 | uint32(body[3])
	case OpCNP:
	default:
		return p, fmt.Errorf("%w: opcode %#x", ErrRoCE, uint8(p.Opcode))
	}
	return p, nil
}

// RoCEMsgHeader is what the engine's RPC layer puts at the start of every
// message it SENDs (the first packet's payload): which RPC the message
// belongs to, the ports, and its length, as an RPC library over RDMA
// SENDs frames its messages.
type RoCEMsgHeader struct {
	ID           uint64 // the client's RPC id (even)
	SPort, DPort uint16
	Length       uint32 // the message's bytes after this header
}

// RoCEMsgHeaderLen is the size of RoCEMsgHeader on the wire.
const RoCEMsgHeaderLen = 16

// Put writes h into b[:RoCEMsgHeaderLen].
func (h *RoCEMsgHeader) Put(b []byte) {
	be.PutUint64(b, h.ID)
	be.PutUint16(b[8:], h.SPort)
	be.PutUint16(b[10:], h.DPort)
	be.PutUint32(b[12:], h.Length)
}

// ParseRoCEMsgHeader reads a message header from the start of b.
func ParseRoCEMsgHeader(b []byte) (RoCEMsgHeader, error) {
	if len(b) < RoCEMsgHeaderLen {
		return RoCEMsgHeader{}, fmt.Errorf("%w: first packet of %d bytes, no message header", ErrRoCE, len(b))
	}
	return RoCEMsgHeader{ID: be.Uint64(b), SPort: be.Uint16(b[8:]), DPort: be.Uint16(b[10:]), Length: be.Uint32(b[12:])}, nil
}
