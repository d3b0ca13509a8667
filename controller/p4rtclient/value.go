package p4rtclient

import (
	"encoding/hex"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
)

// Value is an unsigned P4 value as a big-endian byte string of any length.
// Encoding into a request makes it canonical (shortest form, zero as one
// zero byte) and checks it against the field's bit width.
type Value []byte

// Uint returns v as a Value.
func Uint(v uint64) Value {
	var b [8]byte
	for i := range 8 {
		b[7-i] = byte(v >> (8 * i))
	}
	return Value(canonical(b[:]))
}

// IPv4 returns the four bytes of an IPv4 address as a Value. An address that
// is not IPv4 yields nil, which every encoder rejects.
func IPv4(addr netip.Addr) Value {
	if !addr.Is4() && !addr.Is4In6() {
		return nil
	}
	a := addr.Unmap().As4()
	return Value(a[:])
}

// MACValue returns a 48-bit hardware address as a Value.
func MACValue(hw net.HardwareAddr) Value {
	return Value(hw)
}

// String prints the value in hex, the way error messages name it.
func (v Value) String() string {
	if len(v) == 0 {
		return "<empty>"
	}
	return "0x" + hex.EncodeToString(canonical(v))
}

// Uint64 returns the value as an integer when it fits in 64 bits.
func (v Value) Uint64() (uint64, error) {
	c := canonical(v)
	if len(c) > 8 {
		return 0, fmt.Errorf("value %s does not fit in 64 bits", v)
	}
	var n uint64
	for _, b := range c {
		n = n<<8 | uint64(b)
	}
	return n, nil
}

// canonical strips leading zero bytes, keeping one byte for zero, as the
// P4Runtime spec's canonical bytestring form requires. The result aliases b.
func canonical(b []byte) []byte {
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	return b[i:]
}

// bitLen is the number of significant bits of a big-endian byte string.
func bitLen(b []byte) int {
	c := canonical(b)
	if len(c) == 0 {
		return 0
	}
	return (len(c)-1)*8 + bits.Len8(c[0])
}

// encodeBits checks that v fits in width bits and returns a canonical copy.
// Empty values are rejected: the spec forbids them even though BMv2 reads
// them as zero.
func encodeBits(v Value, width int32) ([]byte, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("empty value")
	}
	if width > 0 && bitLen(v) > int(width) {
		return nil, fmt.Errorf("value %s does not fit in %d bits", v, width)
	}
	return append([]byte(nil), canonical(v)...), nil
}

// padTo left-pads b with zeros to n bytes (n >= len(canonical(b))).
func padTo(b []byte, n int) []byte {
	c := canonical(b)
	if len(c) >= n {
		return c
	}
	out := make([]byte, n)
	copy(out[n-len(c):], c)
	return out
}

// bytesFor is the number of bytes that hold width bits.
func bytesFor(width int32) int {
	return int(width+7) / 8
}
