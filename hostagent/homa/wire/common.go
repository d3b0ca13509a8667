package wire

// CommonLen is the size of the common header that starts every packet.
const CommonLen = 28

// controlDoff is the doff byte of every non-DATA packet: a TCP data offset
// of 5 words, which some NICs require (Linux always sends it).
const controlDoff = 5 << 4

// Common is the common header (struct homa_common_hdr). Fields Linux leaves
// unused or uses only for TCP hijacking are written as zero and ignored.
type Common struct {
	SPort, DPort uint16
	// Sequence is the offset of the first byte in DATA; zero otherwise.
	Sequence uint32
	Type     Type
	// SenderID is the RPC id as the sender sees it: even from the client,
	// odd (client id | 1) from the server.
	SenderID uint64
}

// LocalID converts the id in a received header into the receiver's id.
func (c *Common) LocalID() uint64 { return c.SenderID ^ 1 }

// FromClient reports whether the packet was sent by the RPC's client.
func (c *Common) FromClient() bool { return c.SenderID&1 == 0 }

// ParseCommon decodes the common header of b and checks its type and doff.
func ParseCommon(b []byte) (Common, error) {
	var c Common
	if len(b) < CommonLen {
		return c, truncated(Type(0), CommonLen, len(b))
	}
	c.SPort = be.Uint16(b[0:])
	c.DPort = be.Uint16(b[2:])
	c.Sequence = be.Uint32(b[4:])
	c.Type = Type(b[11])
	c.SenderID = be.Uint64(b[20:])
	if !c.Type.Valid() {
		return c, invalid(c.Type, "unknown type")
	}
	want := byte(controlDoff)
	if c.Type == TypeData {
		want = dataDoff
	}
	if b[12] != want {
		return c, invalid(c.Type, "doff 0x%02x, want 0x%02x", b[12], want)
	}
	return c, nil
}

// appendCommon appends c with the doff of its type.
func appendCommon(b []byte, c *Common) []byte {
	doff := byte(controlDoff)
	if c.Type == TypeData {
		doff = dataDoff
	}
	b = be.AppendUint16(b, c.SPort)
	b = be.AppendUint16(b, c.DPort)
	b = be.AppendUint32(b, c.Sequence)
	b = append(b, 0, 0, 0, byte(c.Type), doff, 0, 0, 0, 0, 0, 0, 0)
	return be.AppendUint64(b, c.SenderID)
}

// AppendHeaderOnly appends a packet that has no body: RPC_UNKNOWN, BUSY,
// NEED_ACK or FREEZE (28 bytes, above Linux's 26-byte minimum, so no pad).
func AppendHeaderOnly(b []byte, c *Common) []byte { return appendCommon(b, c) }

// HeaderOnly reports whether packets of type t consist of the common header alone.
func HeaderOnly(t Type) bool {
	return t == TypeRPCUnknown || t == TypeBusy || t == TypeNeedAck || t == TypeFreeze
}
