package wire

// GrantLen is the size of a GRANT packet.
const GrantLen = 33

// Grant lets the sender send every byte below Offset, at Priority.
type Grant struct {
	Common
	Offset   uint32
	Priority uint8
}

// Length returns the packet length of g.
func (g *Grant) Length() int { return GrantLen }

// AppendGrant appends g to b.
func AppendGrant(b []byte, g *Grant) []byte {
	g.Type = TypeGrant
	b = appendCommon(b, &g.Common)
	b = be.AppendUint32(b, g.Offset)
	return append(b, g.Priority)
}

// ParseGrant decodes a GRANT packet.
func ParseGrant(b []byte) (Grant, error) {
	c, err := parseTyped(b, TypeGrant, GrantLen)
	if err != nil {
		return Grant{}, err
	}
	h := (*[GrantLen]byte)(b)
	g := Grant{Common: c, Offset: be.Uint32(h[28:]), Priority: h[32]}
	if g.Priority >= MaxPriorities {
		return g, invalid(TypeGrant, ErrBadField, "priority %d", g.Priority)
	}
	return g, nil
}
