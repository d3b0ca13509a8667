package wire

// StartMsgLen is the size of a START_MSG packet.
const StartMsgLen = 36

// StartMsg announces a message whose sender sends no unscheduled bytes:
// the receiver grants it from byte 0 (homatb's START_MSG, type 0x19, the
// first code after HEAD's last; docs/homa.md). It carries what the first
// DATA packet of a message would have told the receiver: the message's
// length, the sender's cutoff version and the DATA flags.
type StartMsg struct {
	Common
	MessageLength uint32
	CutoffVersion uint16
	Flags         uint8
}

// Length returns the packet length of s.
func (s *StartMsg) Length() int { return StartMsgLen }

// AppendStartMsg appends s to b.
func AppendStartMsg(b []byte, s *StartMsg) []byte {
	s.Type = TypeStartMsg
	b = appendCommon(b, &s.Common)
	b = be.AppendUint32(b, s.MessageLength)
	b = be.AppendUint16(b, s.CutoffVersion)
	return append(b, s.Flags, 0)
}

// ParseStartMsg decodes a START_MSG packet.
func ParseStartMsg(b []byte) (StartMsg, error) {
	c, err := parseTyped(b, TypeStartMsg, StartMsgLen)
	if err != nil {
		return StartMsg{}, err
	}
	h := (*[StartMsgLen]byte)(b)
	s := StartMsg{Common: c, MessageLength: be.Uint32(h[28:]), CutoffVersion: be.Uint16(h[32:]), Flags: h[34]}
	if s.MessageLength == 0 {
		return s, invalid(TypeStartMsg, ErrBadLength, "message length 0")
	}
	return s, nil
}
