package wire

import (
	"encoding/binary"
	"fmt"
)

// Ultra Ethernet Transport (UET 1.0) packets as the engine's uet variant
// sends them: the UDP payload of a datagram to port UETPort, a Packet
// Delivery Sublayer (PDS) header and, on requests, the Semantic Sublayer's
// (SES) standard request header before the payload. Over UDP the 16-bit
// entropy value that chooses the packet's path is the UDP source port
// (over native IP it is a 4-byte entropy header, UETEntropyLen, which
// this package does not use). Every PDS header begins with the 16-bit
// prologue: type (5 bits), next header (4 bits; a control packet's
// control type), flags (7 bits). The layouts are the UET 1.0
// specification's (PDS 3.5.10, SES 3.4.3) as the public reference code
// (ultraethernet's uet-ref-prov uet_pkt_hdr.h, the Linux ultraeth RFC
// patches, XDP2's uet/pds.h and Wireshark's UET dissector) lays them out.
const (
	// UETPort is the UDP destination port IANA assigned to UET.
	UETPort = 4793
	// UETEntropyLen is the entropy header of UET over native IP.
	UETEntropyLen = 4
	// UETRequestLen is a RUD/ROD request's PDS header; UETRequestCCLen a
	// RUD_CC/ROD_CC request's, which adds the CC state (CCC id, credit
	// target).
	UETRequestLen   = 12
	UETRequestCCLen = UETRequestLen + 4
	// UETAckLen is an ACK's PDS header; UETAckCCLen an ACK_CC's, which
	// adds the SACK bitmap and the congestion control state.
	UETAckLen   = 12
	UETAckCCLen = UETAckLen + 20
	// UETNackLen and UETControlLen are a NACK's and a control packet's.
	UETNackLen    = 16
	UETControlLen = 16
	// SESRequestLen is the SES standard request header.
	SESRequestLen = 44
	// UETDataOverhead is what a RUD data packet adds to its payload
	// inside the UDP datagram.
	UETDataOverhead = UETRequestLen + SESRequestLen
	// UETTrimmedLen is a data packet cut by a switch to its headers, the
	// 64 bytes of UDP payload a trimming switch keeps.
	UETTrimmedLen = 64
)

// UETType is a PDS packet type (the prologue's top five bits).
type UETType uint8

// The PDS packet types.
const (
	UETRUDReq   UETType = 2  // reliable unordered delivery request
	UETRODReq   UETType = 3  // reliable ordered delivery request
	UETUUDReq   UETType = 6  // unreliable unordered delivery request
	UETAck      UETType = 7  // ACK
	UETAckCC    UETType = 8  // ACK with congestion control state and SACK
	UETNack     UETType = 10 // negative acknowledgement
	UETControl  UETType = 11 // control packet
	UETRUDCCReq UETType = 13 // RUD request with congestion control state
	UETRODCCReq UETType = 14 // ROD request with congestion control state
)

// Next headers after a PDS request or ACK.
const (
	UETNextNone       = 0x0
	UETNextRequestStd = 0x3 // SES standard request header
	UETNextResponse   = 0x4 // SES response header
)

// Prologue flag bits (the low seven bits of the prologue).
const (
	uetFlagECN     = 0x20 // ACK, NACK: the acknowledged packet was CE-marked
	uetFlagRetrans = 0x10 // the packet is a retransmission
	uetFlagAckReq  = 0x08 // request, control: acknowledge at once; ACK: probe
	uetFlagSyn     = 0x04 // request, control: the PDC is being established
	uetFlagNackTyp = 0x08 // NACK: its type (0 RUD/ROD, 1 RUDI)
)

// uetSynPSNOffsetMask: with SYN set, the request's DPDCID field carries
// the PSN's offset from the PDC's start PSN in its low 12 bits.
const uetSynPSNOffsetMask = 0x0fff

// UET NACK codes (PDS 3.5.12.7) the engine sends or reads.
const (
	UETNackTrimmed     uint8 = 0x01 // the packet was trimmed
	UETNackPSNOutRange uint8 = 0x0b // PSN outside the receiver's window
)

// UET control types (in a control packet's next-header field).
const (
	UETCtlAckReq = 1 // ACK request
	UETCtlCredit = 7 // RCCC credit
)

// UET congestion control types of ACK_CC.
const (
	UETCCNSCC   = 0
	UETCCCredit = 1
)

// SES request opcodes and flags the engine uses.
const (
	SESOpSend  = 0x05
	SESFlagSOM = 0x01 // start of message
	SESFlagEOM = 0x02 // end of message
)

// UETPDS is a parsed PDS header: the prologue's fields and those of the
// packet type's header; fields a type does not carry are zero.
type UETPDS struct {
	Type UETType
	// Next is the next header (requests, ACKs) or the control type
	// (control packets), 4 bits.
	Next uint8
	// Retrans, AckReq and Syn are requests' and control packets' flags;
	// ECN an ACK's or NACK's; Probe an ACK's.
	Retrans, AckReq, Syn, ECN, Probe bool
	// AckRequest is an ACK's request field (2 bits); NackType a NACK's.
	AckRequest, NackType uint8
	// PSN is a request's or control packet's PSN, an ACK's cumulative
	// PSN (CACK: every PSN up to it arrived), a NACK's PSN.
	PSN uint32
	// ClearPSNOffset is a request's: PSNs up to PSN-ClearPSNOffset may
	// be forgotten by the receiver. AckPSNOffset is an ACK's: the packet
	// that asked for it is CACK+AckPSNOffset (or a control packet's and
	// a probe's opaque value).
	ClearPSNOffset, AckPSNOffset uint16
	// SPDCID and DPDCID are the source's and the destination's packet
	// delivery context ids. A SYN request carries no DPDCID: its field
	// holds SynPSNOffset, the PSN's distance from the PDC's start PSN.
	SPDCID, DPDCID uint16
	SynPSNOffset   uint16
	// ACK_CC: the congestion control type, the maximum PSN range, the
	// SACK bitmap (bit i: PSN SACKBase()+i arrived) at SACKPSNOffset
	// from CACK, and the state NSCC reads: the receiver's service time
	// (its unit as sender and receiver agree; here µs), received bytes
	// (24 bits) and the out-of-order count, or RCCC's credit (24 bits).
	CCType        uint8
	MPR           uint8
	SACKPSNOffset uint16
	SACKBitmap    uint64
	ServiceTime   uint16
	RcvdBytes     uint32
	OOOCount      uint16
	Credit        uint32
	// NACK: its code and vendor code; NACK and control: the payload word.
	NackCode, VendorCode uint8
	Payload              uint32
	// RUD_CC/ROD_CC requests: the congestion control context's id and the
	// credit target (24 bits: the bytes the sender still has to send).
	CCCID        uint8
	CreditTarget uint32
}

// SACKBase is the PSN of an ACK_CC's SACK bitmap's bit 0.
func (h *UETPDS) SACKBase() uint32 { return h.PSN + uint32(h.SACKPSNOffset) }

// SESRequest is the SES standard request header (44 bytes).
type SESRequest struct {
	Opcode  uint8 // 6 bits
	Version uint8 // 2 bits
	Flags   uint8 // 6 bits: SOM, EOM, ...
	MsgID   uint16
	// RIGeneration (8 bits) and JobID (24 bits) share a word.
	RIGeneration  uint8
	JobID         uint32
	PIDOnFEP      uint16 // 12 bits
	ResourceIndex uint16 // 12 bits
	BufferOffset  uint64
	Initiator     uint32
	MatchBits     uint64
	HeaderData    uint64
	RequestLength uint32
}

func prologue(t UETType, next uint8, flags uint16) uint16 {
	return uint16(t&0x1f)<<11 | uint16(next&0xf)<<7 | flags&0x7f
}

func flag(b bool, f uint16) uint16 {
	if b {
		return f
	}
	return 0
}

// AppendUETRequest appends h's RUD/ROD request header (h.Type, Next,
// Retrans, AckReq, Syn, ClearPSNOffset, PSN, SPDCID, and DPDCID or, with
// Syn, SynPSNOffset; for the _CC types CCCID and CreditTarget) to b.
func AppendUETRequest(b []byte, h *UETPDS) []byte {
	b = appendUETRequest(b, h)
	if h.Type == UETRUDCCReq || h.Type == UETRODCCReq {
		b = binary.BigEndian.AppendUint32(b, uint32(h.CCCID)<<24|h.CreditTarget&0xffffff)
	}
	return b
}

func appendUETRequest(b []byte, h *UETPDS) []byte {
	f := flag(h.Retrans, uetFlagRetrans) | flag(h.AckReq, uetFlagAckReq) | flag(h.Syn, uetFlagSyn)
	b = binary.BigEndian.AppendUint16(b, prologue(h.Type, h.Next, f))
	b = binary.BigEndian.AppendUint16(b, h.ClearPSNOffset)
	b = binary.BigEndian.AppendUint32(b, h.PSN)
	b = binary.BigEndian.AppendUint16(b, h.SPDCID)
	if h.Syn {
		return binary.BigEndian.AppendUint16(b, h.SynPSNOffset&uetSynPSNOffsetMask)
	}
	return binary.BigEndian.AppendUint16(b, h.DPDCID)
}

// AppendUETAck appends an ACK (h.Type UETAck) or ACK_CC (UETAckCC, with
// the SACK bitmap and the CC state of h.CCType) to b.
func AppendUETAck(b []byte, h *UETPDS) []byte {
	f := flag(h.ECN, uetFlagECN) | flag(h.Retrans, uetFlagRetrans) | flag(h.Probe, uetFlagAckReq) | uint16(h.AckRequest&3)<<1
	b = binary.BigEndian.AppendUint16(b, prologue(h.Type, h.Next, f))
	b = binary.BigEndian.AppendUint16(b, h.AckPSNOffset)
	b = binary.BigEndian.AppendUint32(b, h.PSN)
	b = binary.BigEndian.AppendUint16(b, h.SPDCID)
	b = binary.BigEndian.AppendUint16(b, h.DPDCID)
	if h.Type != UETAckCC {
		return b
	}
	b = append(b, h.CCType<<4, h.MPR)
	b = binary.BigEndian.AppendUint16(b, h.SACKPSNOffset)
	b = binary.BigEndian.AppendUint64(b, h.SACKBitmap)
	if h.CCType == UETCCCredit {
		b = binary.BigEndian.AppendUint32(b, (h.Credit&0xffffff)<<8)
		b = binary.BigEndian.AppendUint16(b, 0)
		return binary.BigEndian.AppendUint16(b, h.OOOCount)
	}
	// NSCC: service time 16, restore_cwnd 1, rcv_cwnd_pend 7 (both 0
	// here), received bytes 24, out-of-order count 16.
	b = binary.BigEndian.AppendUint16(b, h.ServiceTime)
	b = binary.BigEndian.AppendUint32(b, h.RcvdBytes&0xffffff)
	return binary.BigEndian.AppendUint16(b, h.OOOCount)
}

// AppendUETNack appends a NACK of h.PSN with h.NackCode to b.
func AppendUETNack(b []byte, h *UETPDS) []byte {
	f := flag(h.ECN, uetFlagECN) | flag(h.Retrans, uetFlagRetrans) | flag(h.NackType != 0, uetFlagNackTyp)
	b = binary.BigEndian.AppendUint16(b, prologue(UETNack, h.Next, f))
	b = append(b, h.NackCode, h.VendorCode)
	b = binary.BigEndian.AppendUint32(b, h.PSN)
	b = binary.BigEndian.AppendUint16(b, h.SPDCID)
	b = binary.BigEndian.AppendUint16(b, h.DPDCID)
	return binary.BigEndian.AppendUint32(b, h.Payload)
}

// AppendUETControl appends a control packet of type h.Next to b.
func AppendUETControl(b []byte, h *UETPDS) []byte {
	f := flag(h.Retrans, uetFlagRetrans) | flag(h.AckReq, uetFlagAckReq) | flag(h.Syn, uetFlagSyn)
	b = binary.BigEndian.AppendUint16(b, prologue(UETControl, h.Next, f))
	b = binary.BigEndian.AppendUint16(b, h.AckPSNOffset)
	b = binary.BigEndian.AppendUint32(b, h.PSN)
	b = binary.BigEndian.AppendUint16(b, h.SPDCID)
	b = binary.BigEndian.AppendUint16(b, h.DPDCID)
	return binary.BigEndian.AppendUint32(b, h.Payload)
}

// ParseUETPDS decodes the PDS header at the start of b into h and
// returns the bytes after it. It does not allocate.
func ParseUETPDS(b []byte, h *UETPDS) ([]byte, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("uet: %d bytes, no prologue: %w", len(b), ErrTruncated)
	}
	p := binary.BigEndian.Uint16(b)
	*h = UETPDS{Type: UETType(p >> 11), Next: uint8(p>>7) & 0xf}
	f := p & 0x7f
	need := 0
	switch h.Type {
	case UETRUDReq, UETRODReq:
		need = UETRequestLen
	case UETRUDCCReq, UETRODCCReq:
		need = UETRequestCCLen
	case UETAck:
		need = UETAckLen
	case UETAckCC:
		need = UETAckCCLen
	case UETNack:
		need = UETNackLen
	case UETControl:
		need = UETControlLen
	default:
		return nil, fmt.Errorf("uet: PDS type %d, want a RUD or ROD request (2, 3, 13, 14), ACK 7, ACK_CC 8, NACK 10 or control 11: %w", h.Type, ErrUnknownType)
	}
	if len(b) < need {
		return nil, fmt.Errorf("uet: PDS type %d in %d bytes, want %d: %w", h.Type, len(b), need, ErrTruncated)
	}
	switch h.Type {
	case UETRUDReq, UETRODReq, UETRUDCCReq, UETRODCCReq:
		h.Retrans, h.AckReq, h.Syn = f&uetFlagRetrans != 0, f&uetFlagAckReq != 0, f&uetFlagSyn != 0
		h.ClearPSNOffset = binary.BigEndian.Uint16(b[2:])
		h.PSN = binary.BigEndian.Uint32(b[4:])
		h.SPDCID = binary.BigEndian.Uint16(b[8:])
		if d := binary.BigEndian.Uint16(b[10:]); h.Syn {
			h.SynPSNOffset = d & uetSynPSNOffsetMask
		} else {
			h.DPDCID = d
		}
		if need == UETRequestCCLen {
			w := binary.BigEndian.Uint32(b[12:])
			h.CCCID, h.CreditTarget = uint8(w>>24), w&0xffffff
		}
	case UETAck, UETAckCC:
		h.ECN, h.Retrans, h.Probe = f&uetFlagECN != 0, f&uetFlagRetrans != 0, f&uetFlagAckReq != 0
		h.AckRequest = uint8(f>>1) & 3
		h.AckPSNOffset = binary.BigEndian.Uint16(b[2:])
		h.PSN = binary.BigEndian.Uint32(b[4:])
		h.SPDCID = binary.BigEndian.Uint16(b[8:])
		h.DPDCID = binary.BigEndian.Uint16(b[10:])
		if h.Type == UETAckCC {
			c := b[UETAckLen:]
			h.CCType, h.MPR = c[0]>>4, c[1]
			h.SACKPSNOffset = binary.BigEndian.Uint16(c[2:])
			h.SACKBitmap = binary.BigEndian.Uint64(c[4:])
			if h.CCType == UETCCCredit {
				h.Credit = binary.BigEndian.Uint32(c[12:]) >> 8
			} else {
				h.ServiceTime = binary.BigEndian.Uint16(c[12:])
				h.RcvdBytes = binary.BigEndian.Uint32(c[14:]) & 0xffffff
			}
			h.OOOCount = binary.BigEndian.Uint16(c[18:])
		}
	case UETNack:
		h.ECN, h.Retrans = f&uetFlagECN != 0, f&uetFlagRetrans != 0
		if f&uetFlagNackTyp != 0 {
			h.NackType = 1
		}
		h.NackCode, h.VendorCode = b[2], b[3]
		h.PSN = binary.BigEndian.Uint32(b[4:])
		h.SPDCID = binary.BigEndian.Uint16(b[8:])
		h.DPDCID = binary.BigEndian.Uint16(b[10:])
		h.Payload = binary.BigEndian.Uint32(b[12:])
	case UETControl:
		h.Retrans, h.AckReq, h.Syn = f&uetFlagRetrans != 0, f&uetFlagAckReq != 0, f&uetFlagSyn != 0
		h.AckPSNOffset = binary.BigEndian.Uint16(b[2:])
		h.PSN = binary.BigEndian.Uint32(b[4:])
		h.SPDCID = binary.BigEndian.Uint16(b[8:])
		h.DPDCID = binary.BigEndian.Uint16(b[10:])
		h.Payload = binary.BigEndian.Uint32(b[12:])
	}
	return b[need:], nil
}

// AppendSESRequest appends s's 44 bytes to b.
func AppendSESRequest(b []byte, s *SESRequest) []byte {
	b = append(b, s.Opcode&0x3f, s.Version<<6|s.Flags&0x3f)
	b = binary.BigEndian.AppendUint16(b, s.MsgID)
	b = binary.BigEndian.AppendUint32(b, uint32(s.RIGeneration)<<24|s.JobID&0xffffff)
	b = binary.BigEndian.AppendUint16(b, s.PIDOnFEP&0xfff)
	b = binary.BigEndian.AppendUint16(b, s.ResourceIndex&0xfff)
	b = binary.BigEndian.AppendUint64(b, s.BufferOffset)
	b = binary.BigEndian.AppendUint32(b, s.Initiator)
	b = binary.BigEndian.AppendUint64(b, s.MatchBits)
	b = binary.BigEndian.AppendUint64(b, s.HeaderData)
	return binary.BigEndian.AppendUint32(b, s.RequestLength)
}

// ParseSESRequest decodes the SES standard request header at the start
// of b into s and returns the payload after it.
func ParseSESRequest(b []byte, s *SESRequest) ([]byte, error) {
	if len(b) < SESRequestLen {
		return nil, fmt.Errorf("uet: SES request in %d bytes, want %d: %w", len(b), SESRequestLen, ErrTruncated)
	}
	w := binary.BigEndian.Uint32(b[4:])
	*s = SESRequest{Opcode: b[0] & 0x3f, Version: b[1] >> 6, Flags: b[1] & 0x3f,
		MsgID: binary.BigEndian.Uint16(b[2:]), RIGeneration: uint8(w >> 24), JobID: w & 0xffffff,
		PIDOnFEP: binary.BigEndian.Uint16(b[8:]) & 0xfff, ResourceIndex: binary.BigEndian.Uint16(b[10:]) & 0xfff,
		BufferOffset: binary.BigEndian.Uint64(b[12:]), Initiator: binary.BigEndian.Uint32(b[20:]),
		MatchBits: binary.BigEndian.Uint64(b[24:]), HeaderData: binary.BigEndian.Uint64(b[32:]),
		RequestLength: binary.BigEndian.Uint32(b[40:])}
	return b[SESRequestLen:], nil
}
