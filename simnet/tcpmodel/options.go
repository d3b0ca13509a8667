package tcpmodel

import "encoding/binary"

// MaxSACKBlocks is how many SACK blocks a segment carries at most: three,
// as Linux sends beside its timestamp option (whose 12 bytes the model
// does not put on the wire).
const MaxSACKBlocks = 3

// SACKBlock is one block of a SACK option (RFC 2018): the receiver holds
// the sequence numbers [Left, Right).
type SACKBlock struct{ Left, Right uint32 }

// TCP option kinds the model writes and reads.
const (
	optEnd  = 0
	optNOP  = 1
	optSACK = 5
)

// OptionsLen is the length of the segment's TCP options in bytes, a
// multiple of 4: two NOPs and the SACK option when it carries blocks,
// else none.
func (s *Segment) OptionsLen() int {
	if s.NSACK == 0 {
		return 0
	}
	return 4 + 8*int(s.NSACK)
}

// PutOptions writes the segment's options into b, which holds at least
// OptionsLen bytes.
func (s *Segment) PutOptions(b []byte) {
	if s.NSACK == 0 {
		return
	}
	b[0], b[1], b[2], b[3] = optNOP, optNOP, optSACK, byte(2+8*int(s.NSACK))
	for i, k := range s.SACK[:s.NSACK] {
		o := b[4+8*i:]
		binary.BigEndian.PutUint32(o, k.Left)
		binary.BigEndian.PutUint32(o[4:], k.Right)
	}
}

// ParseOptions reads the SACK blocks from options b (the bytes between the
// fixed header and the payload). It skips options it does not know and
// stops at the end-of-list option or at one whose length does not fit:
// a malformed option list reads as no more options, as a receiver
// ignores what it cannot parse.
func (s *Segment) ParseOptions(b []byte) {
	s.NSACK = 0
	for len(b) > 0 {
		switch b[0] {
		case optEnd:
			return
		case optNOP:
			b = b[1:]
			continue
		}
		if len(b) < 2 || int(b[1]) < 2 || int(b[1]) > len(b) {
			return
		}
		n := int(b[1])
		if b[0] == optSACK {
			for o := b[2:n]; len(o) >= 8 && int(s.NSACK) < MaxSACKBlocks; o = o[8:] {
				s.SACK[s.NSACK] = SACKBlock{Left: binary.BigEndian.Uint32(o), Right: binary.BigEndian.Uint32(o[4:])}
				s.NSACK++
			}
		}
		b = b[n:]
	}
}
