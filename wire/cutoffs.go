package wire

// CutoffsLen is the size of a CUTOFFS packet.
const CutoffsLen = 62

// Cutoffs tells a sender how to choose the priority of unscheduled bytes:
// Cutoffs[i] is the largest message length that may use priority i.
type Cutoffs struct {
	Common
	Cutoffs [MaxPriorities]uint32
	Version uint16
}

// Length returns the packet length of c.
func (c *Cutoffs) Length() int { return CutoffsLen }

// AppendCutoffs appends c to b.
func AppendCutoffs(b []byte, c *Cutoffs) []byte {
	c.Type = TypeCutoffs
	b = appendCommon(b, &c.Common)
	for _, v := range c.Cutoffs {
		b = be.AppendUint32(b, v)
	}
	return be.AppendUint16(b, c.Version)
}

// ParseCutoffs decodes a CUTOFFS packet. Version 0 means "no cutoffs" in
// DATA and is therefore invalid here.
func ParseCutoffs(b []byte) (Cutoffs, error) {
	hdr, err := parseTyped(b, TypeCutoffs, CutoffsLen)
	if err != nil {
		return Cutoffs{}, err
	}
	h := (*[CutoffsLen]byte)(b)
	c := Cutoffs{Common: hdr, Version: be.Uint16(h[60:])}
	for i := range c.Cutoffs {
		c.Cutoffs[i] = be.Uint32(h[28+4*i:])
	}
	if c.Version == 0 {
		return c, invalid(TypeCutoffs, ErrBadField, "version 0")
	}
	return c, nil
}
