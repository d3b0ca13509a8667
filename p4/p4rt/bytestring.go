package p4rt

import (
	"google.golang.org/grpc/codes"
)

// canonical checks a P4Runtime bytestring for a field of width bits and
// returns its canonical form (the shortest big-endian string, zero as
// "\x00"). Padded input is accepted as the spec requires. The empty string
// and a value that does not fit are both OUT_OF_RANGE: the spec (1.4.1,
// 8.3) names that code for a bytestring that is not a valid value of the
// field, and a zero-length one is such a value, not a malformed request.
func canonical(b []byte, width int, what string) ([]byte, error) {
	if len(b) == 0 {
		return nil, errorf(codes.OutOfRange, "%s: empty bytestring", what)
	}
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	v := b[i:]
	if bits := bitLen(v); bits > width {
		return nil, errorf(codes.OutOfRange, "%s: value 0x%x needs %d bits, field is %d bits", what, b, bits, width)
	}
	return append([]byte(nil), v...), nil
}

// bitLen is the number of significant bits of a big-endian value with no
// leading zero bytes (0 for "\x00").
func bitLen(v []byte) int {
	if len(v) == 0 || (len(v) == 1 && v[0] == 0) {
		return 0
	}
	n := (len(v) - 1) * 8
	for top := v[0]; top != 0; top >>= 1 {
		n++
	}
	return n
}

// toUint64 converts a canonical bytestring of at most 8 bytes.
func toUint64(v []byte) uint64 {
	var x uint64
	for _, c := range v {
		x = x<<8 | uint64(c)
	}
	return x
}

// fromUint64 is the canonical bytestring of x.
func fromUint64(x uint64) []byte {
	if x == 0 {
		return []byte{0}
	}
	var b [8]byte
	n := 8
	for x != 0 {
		n--
		b[n] = byte(x)
		x >>= 8
	}
	return append([]byte(nil), b[n:]...)
}
