package wire

// ResendLen is the size of a RESEND packet.
const ResendLen = 37

// ResendAll in Length asks for everything sent so far (Linux: -1).
const ResendAll = ^uint32(0)

// Resend asks the sender to retransmit [Offset, Offset+Length) at Priority.
type Resend struct {
	Common
	Offset   uint32
	Length   uint32
	Priority uint8
}

// PacketLength returns the packet length of r (Length is a field here).
func (r *Resend) PacketLength() int { return ResendLen }

// AppendResend appends r to b.
func AppendResend(b []byte, r *Resend) []byte {
	r.Type = TypeResend
	b = appendCommon(b, &r.Common)
	b = be.AppendUint32(b, r.Offset)
	b = be.AppendUint32(b, r.Length)
	return append(b, r.Priority)
}

// ParseResend decodes a RESEND packet.
func ParseResend(b []byte) (Resend, error) {
	c, err := parseTyped(b, TypeResend, ResendLen)
	if err != nil {
		return Resend{}, err
	}
	h := (*[ResendLen]byte)(b)
	r := Resend{Common: c, Offset: be.Uint32(h[28:]), Length: be.Uint32(h[32:]), Priority: h[36]}
	if r.Priority >= MaxPriorities {
		return r, invalid(TypeResend, ErrBadField, "priority %d", r.Priority)
	}
	if r.Length == 0 {
		return r, invalid(TypeResend, ErrBadLength, "zero length")
	}
	return r, nil
}
