package wire

// DataLen is the size of the DATA header (struct homa_data_hdr at HEAD),
// common header included; payload follows.
const DataLen = 56

// dataDoff is DataLen in 4-byte words, in the high nibble, as Linux sets it.
const dataDoff = (DataLen / 4) << 4

// FlagIncast, in DATA's flags byte (the first pad byte in Linux), marks a
// request from a client with many outstanding RPCs: the server should limit
// the unscheduled bytes of the response (SIGCOMM 2018 §3.6). Linux never
// sets it, so a Linux receiver ignores it.
const FlagIncast = 0x01

// Data is a DATA packet header.
type Data struct {
	Common
	// MessageLength is the total length of the message.
	MessageLength uint32
	// Incoming is how far the sender will go without further grants.
	Incoming uint32
	// AckID and AckPort piggyback the ack of one earlier RPC (0: none).
	AckID   uint64
	AckPort uint16
	// CutoffVersion is the receiver's CUTOFFS version the sender uses.
	CutoffVersion uint16
	// Retransmit is 1 when the packet answers a RESEND.
	Retransmit uint8
	// Flags carries FlagIncast (a departure: Linux pad byte).
	Flags uint8
	// Offset is the message offset of the payload's first byte.
	Offset uint32
}

// Length returns the header length of d.
func (d *Data) Length() int { return DataLen }

// AppendData appends d's header to b; the caller appends the payload. It
// sets the type and makes Sequence equal to Offset, as Linux does without GSO.
func AppendData(b []byte, d *Data) []byte {
	d.Type = TypeData
	d.Sequence = d.Offset
	b = appendCommon(b, &d.Common)
	b = be.AppendUint32(b, d.MessageLength)
	b = be.AppendUint32(b, d.Incoming)
	b = be.AppendUint64(b, d.AckID)
	b = be.AppendUint16(b, d.AckPort)
	b = be.AppendUint16(b, d.CutoffVersion)
	b = append(b, d.Retransmit, d.Flags, 0, 0)
	return be.AppendUint32(b, d.Offset)
}

// ParseTrimmed decodes a DATA packet an NDP switch trimmed (its
// CommonTrimmed flag set; whatever follows the header is ignored): which
// bytes the sender sent, so the receiver can NACK them.
func ParseTrimmed(b []byte) (Data, error) {
	d, err := parseDataHeader(b)
	if err == nil && !d.Trimmed() {
		err = invalid(TypeData, ErrBadField, "not trimmed")
	}
	return d, err
}

// ParseData decodes a DATA packet and returns its header and payload (a
// sub-slice of b). The payload must be non-empty and lie inside the
// message; a trimmed packet is refused (ParseTrimmed reads it).
func ParseData(b []byte) (Data, []byte, error) {
	d, err := parseDataHeader(b)
	if err != nil {
		return d, nil, err
	}
	payload := b[DataLen:]
	switch {
	case d.Trimmed():
		return d, nil, invalid(TypeData, ErrBadField, "trimmed by the switch")
	case len(payload) == 0:
		return d, nil, invalid(TypeData, ErrBadLength, "no payload")
	case uint64(d.Offset)+uint64(len(payload)) > uint64(d.MessageLength):
		return d, nil, invalid(TypeData, ErrBadOffset, "bytes %d+%d beyond length %d", d.Offset, len(payload), d.MessageLength)
	}
	return d, payload, nil
}

// parseDataHeader decodes and checks the fixed part of a DATA packet.
func parseDataHeader(b []byte) (Data, error) {
	c, err := parseTyped(b, TypeData, DataLen)
	if err != nil {
		return Data{}, err
	}
	h := (*[DataLen]byte)(b)
	d := Data{
		Common:        c,
		MessageLength: be.Uint32(h[28:]),
		Incoming:      be.Uint32(h[32:]),
		AckID:         be.Uint64(h[36:]),
		AckPort:       be.Uint16(h[44:]),
		CutoffVersion: be.Uint16(h[46:]),
		Retransmit:    h[48],
		Flags:         h[49],
		Offset:        be.Uint32(h[52:]), // 50-51: pad
	}
	switch {
	case d.MessageLength == 0:
		return d, invalid(TypeData, ErrBadLength, "zero message length")
	case d.Offset >= d.MessageLength:
		return d, invalid(TypeData, ErrBadOffset, "offset %d beyond length %d", d.Offset, d.MessageLength)
	case d.Retransmit > 1:
		return d, invalid(TypeData, ErrBadField, "retransmit %d", d.Retransmit)
	}
	return d, nil
}
