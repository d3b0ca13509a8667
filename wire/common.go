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
	// Rank is pFabric's rank (bytes 16..19, which Linux leaves unused):
	// the sender's bytes of the message left from this packet's payload
	// on, the payload included (pFabric's remaining flow size); 0 in
	// control packets and in every packet of Homa, pHost and NDP.
	Rank uint32
	// CommonFlags is byte 8 (unused by Linux): CommonTrimmed, which only
	// a switch sets.
	CommonFlags uint8
}

// CommonTrimmed, in Common.CommonFlags, marks a DATA packet an NDP switch port
// trimmed to its DATA header (docs/transports.md): the payload is gone and
// the receiver answers with a NACK.
const CommonTrimmed = 0x01

// Common-header offsets of the fields a switch reads, writes in place or
// records: the sequence (DATA's offset, big-endian 32 bits), the flags
// byte, the type, the rank (big-endian 32 bits) and the sender's RPC id
// (big-endian 64 bits).
const (
	SequenceOffset = 4
	FlagsOffset    = 8
	TypeOffset     = 11
	RankOffset     = 16
	SenderIDOffset = 20
)

// Trimmed reports whether the switch trimmed the packet.
func (c *Common) Trimmed() bool { return c.CommonFlags&CommonTrimmed != 0 }

// SetRank writes rank into the common header of the encoded packet b, as
// a pFabric sender does after building a DATA packet.
func SetRank(b []byte, rank uint32) { be.PutUint32(b[RankOffset:RankOffset+4], rank) }

// Trim cuts the encoded DATA packet b to its header and sets the trimmed
// flag, as an NDP switch port does (the emulated ones in tests); other
// packets are returned unchanged with ok false.
func Trim(b []byte) (_ []byte, ok bool) {
	if len(b) <= DataLen || Type(b[TypeOffset]) != TypeData || b[FlagsOffset]&CommonTrimmed != 0 {
		return b, false
	}
	b[FlagsOffset] |= CommonTrimmed
	return b[:DataLen], true
}

// LocalID converts the id in a received header into the receiver's id.
func (c *Common) LocalID() uint64 { return c.SenderID ^ 1 }

// FromClient reports whether the packet was sent by the RPC's client.
func (c *Common) FromClient() bool { return c.SenderID&1 == 0 }

// doff is the doff byte of packets of type t.
func doff(t Type) byte {
	if t == TypeData {
		return dataDoff
	}
	return controlDoff
}

// ParseCommon decodes the common header of b and checks its type and doff.
func ParseCommon(b []byte) (Common, error) {
	if len(b) < CommonLen {
		return Common{}, truncated(Type(0), CommonLen, len(b))
	}
	h := (*[CommonLen]byte)(b)
	c := Common{
		SPort:       be.Uint16(h[0:]),
		DPort:       be.Uint16(h[2:]),
		Sequence:    be.Uint32(h[SequenceOffset:]),
		CommonFlags: h[FlagsOffset],      // 9-10 unused
		Type:        Type(h[TypeOffset]), // 12 doff, 13-15 unused
		Rank:        be.Uint32(h[RankOffset:]),
		SenderID:    be.Uint64(h[SenderIDOffset:]),
	}
	if !c.Type.Valid() {
		return c, invalid(c.Type, ErrUnknownType, "unknown type")
	}
	if want := doff(c.Type); h[12] != want {
		return c, invalid(c.Type, ErrBadHeader, "doff 0x%02x, want 0x%02x", h[12], want)
	}
	return c, nil
}

// parseTyped is the first step of every typed decoder: it decodes the
// common header of a packet that must be of type t and checks that b holds
// the n bytes of the type's fixed part. The decoder then views those bytes
// as an array, (*[n]byte)(b), and reads each field at its offset without a
// bounds check per field.
func parseTyped(b []byte, t Type, n int) (Common, error) {
	c, err := ParseCommon(b)
	if err != nil {
		return c, err
	}
	if c.Type != t {
		return c, invalid(c.Type, ErrBadHeader, "not %v", t)
	}
	if len(b) < n {
		return c, truncated(t, n, len(b))
	}
	return c, nil
}

// appendCommon appends c with the doff of its type.
func appendCommon(b []byte, c *Common) []byte {
	b = be.AppendUint16(b, c.SPort)
	b = be.AppendUint16(b, c.DPort)
	b = be.AppendUint32(b, c.Sequence)
	b = append(b, c.CommonFlags, 0, 0, byte(c.Type), doff(c.Type), 0, 0, 0)
	b = be.AppendUint32(b, c.Rank)
	return be.AppendUint64(b, c.SenderID)
}

// AppendHeaderOnly appends a packet that has no body: RPC_UNKNOWN, BUSY,
// NEED_ACK or FREEZE (28 bytes, above Linux's 26-byte minimum, so no pad).
func AppendHeaderOnly(b []byte, c *Common) []byte { return appendCommon(b, c) }

// HeaderOnly reports whether packets of type t consist of the common header alone.
func HeaderOnly(t Type) bool {
	return t == TypeRPCUnknown || t == TypeBusy || t == TypeNeedAck || t == TypeFreeze
}
