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
	var g Grant
	c, err := parseTyped(b, TypeGrant, GrantLen)
	if err != nil {
		return g, err
	}
	g.Common = c
	g.Offset = be.Uint32(b[28:])
	g.Priority = b[32]
	if g.Priority >= MaxPriorities {
		return g, invalid(TypeGrant, "priority %d", g.Priority)
	}
	return g, nil
}

// parseTyped decodes the common header and checks the type and length.
func parseTyped(b []byte, t Type, length int) (Common, error) {
	c, err := ParseCommon(b)
	if err != nil {
		return c, err
	}
	if c.Type != t {
		return c, invalid(c.Type, "not %v", t)
	}
	if len(b) < length {
		return c, truncated(t, length, len(b))
	}
	return c, nil
}
