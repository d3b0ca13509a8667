package wire

// PullLen is the size of a PULL packet.
const PullLen = CommonLen + 4

// Pull is NDP's PULL (homatb's type 0x1a): Count is the receiver's PULLs
// for the message so far, each of which lets the sender send one packet
// (a retransmission it was NACKed for first, else its next new one). Like
// NDP's pull counter it is cumulative, so a lost PULL is made good by the
// next one; the receiver paces PULLs at its link rate.
type Pull struct {
	Common
	Count uint32
}

// AppendPull appends p to b.
func AppendPull(b []byte, p *Pull) []byte {
	p.Type = TypePull
	b = appendCommon(b, &p.Common)
	return be.AppendUint32(b, p.Count)
}

// ParsePull decodes a PULL packet.
func ParsePull(b []byte) (Pull, error) {
	c, err := parseTyped(b, TypePull, PullLen)
	if err != nil {
		return Pull{}, err
	}
	h := (*[PullLen]byte)(b)
	return Pull{Common: c, Count: be.Uint32(h[28:])}, nil
}

// NackLen is the size of a NACK packet.
const NackLen = CommonLen + 8

// Nack is NDP's NACK (homatb's type 0x1b): the receiver got only the
// header of the DATA packet carrying [Offset, Offset+Length), which a
// switch trimmed, and asks for those bytes again at once.
type Nack struct {
	Common
	Offset uint32
	Length uint32
}

// AppendNack appends n to b.
func AppendNack(b []byte, n *Nack) []byte {
	n.Type = TypeNack
	b = appendCommon(b, &n.Common)
	b = be.AppendUint32(b, n.Offset)
	return be.AppendUint32(b, n.Length)
}

// ParseNack decodes a NACK packet; its range must be non-empty.
func ParseNack(b []byte) (Nack, error) {
	c, err := parseTyped(b, TypeNack, NackLen)
	if err != nil {
		return Nack{}, err
	}
	h := (*[NackLen]byte)(b)
	n := Nack{Common: c, Offset: be.Uint32(h[28:]), Length: be.Uint32(h[32:])}
	if n.Length == 0 {
		return n, invalid(TypeNack, ErrBadLength, "zero length")
	}
	return n, nil
}
