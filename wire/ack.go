package wire

// AckLen is the size of an ACK packet.
const AckLen = 80

// MaxAcks is the number of acks one ACK packet carries (HOMA_MAX_ACKS_PER_PKT).
const MaxAcks = 5

// AckEntry identifies one client RPC the server may forget.
type AckEntry struct {
	ClientID   uint64
	ServerPort uint16
}

// Ack carries up to MaxAcks acks; the RPC of the common header is acked too.
type Ack struct {
	Common
	NumAcks uint16
	Acks    [MaxAcks]AckEntry
}

// Length returns the packet length of a.
func (a *Ack) Length() int { return AckLen }

// AppendAck appends a to b; entries beyond NumAcks are written as zero.
func AppendAck(b []byte, a *Ack) []byte {
	a.Type = TypeAck
	b = appendCommon(b, &a.Common)
	b = be.AppendUint16(b, a.NumAcks)
	for i, e := range a.Acks {
		if i >= int(a.NumAcks) {
			e = AckEntry{}
		}
		b = be.AppendUint64(b, e.ClientID)
		b = be.AppendUint16(b, e.ServerPort)
	}
	return b
}

// ParseAck decodes an ACK packet.
func ParseAck(b []byte) (Ack, error) {
	c, err := parseTyped(b, TypeAck, AckLen)
	if err != nil {
		return Ack{}, err
	}
	h := (*[AckLen]byte)(b)
	a := Ack{Common: c, NumAcks: be.Uint16(h[28:])}
	if a.NumAcks > MaxAcks {
		return a, invalid(TypeAck, ErrBadLength, "%d acks", a.NumAcks)
	}
	for i := range int(a.NumAcks) {
		o := 30 + 10*i // entries of 10 bytes: client id, server port
		a.Acks[i] = AckEntry{ClientID: be.Uint64(h[o:]), ServerPort: be.Uint16(h[o+8:])}
	}
	return a, nil
}
