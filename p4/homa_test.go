package p4

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/homatb/homatb/wire"
)

var (
	homaHeaderRe = regexp.MustCompile(`(?s)header homa_common_t \{(.*?)\}`)
	bitFieldRe   = regexp.MustCompile(`bit<(\d+)>\s+(\w+);`)
	p4ConstRe    = regexp.MustCompile(`const bit<\d+>\s+(\w+)\s*=\s*(\w+);`)
)

// TestHomaLayoutMatchesWire reads tor.p4's Homa header and constants and
// checks them against package wire, the one description of the layout
// the hosts send and the embedded target derives its offsets from.
func TestHomaLayoutMatchesWire(t *testing.T) {
	m := homaHeaderRe.FindSubmatch(source)
	if m == nil {
		t.Fatal("tor.p4 has no header homa_common_t")
	}
	offsets := map[string]int{} // field -> byte offset
	bits := 0
	for _, f := range bitFieldRe.FindAllSubmatch(m[1], -1) {
		w, _ := strconv.Atoi(string(f[1]))
		offsets[string(f[2])] = bits / 8
		bits += w
	}
	if bits != wire.CommonLen*8 {
		t.Errorf("homa_common_t is %d bits, wire.CommonLen is %d bytes", bits, wire.CommonLen)
	}
	for _, c := range []struct {
		field string
		want  int
	}{
		{"sequence", wire.SequenceOffset},
		{"flags", wire.FlagsOffset},
		{"type", wire.TypeOffset},
		{"rank", wire.RankOffset},
		{"senderId", wire.SenderIDOffset},
	} {
		if got, ok := offsets[c.field]; !ok || got != c.want {
			t.Errorf("homa_common_t.%s at byte %d (present %v), wire has %d", c.field, got, ok, c.want)
		}
	}
	consts := map[string]uint64{}
	for _, c := range p4ConstRe.FindAllSubmatch(source, -1) {
		v, err := strconv.ParseUint(string(c[2]), 0, 64)
		if err != nil {
			t.Fatalf("const %s = %s: %v", c[1], c[2], err)
		}
		consts[string(c[1])] = v
	}
	const ethIPv4 = 14 + 20
	for _, c := range []struct {
		name string
		want uint64
	}{
		{"IP_PROTO_HOMA", wire.IPProto},
		{"HOMA_TYPE_DATA", uint64(wire.TypeData)},
		{"HOMA_FLAG_TRIMMED", wire.CommonTrimmed},
		{"TRIMMED_FRAME_LEN", ethIPv4 + wire.DataLen},
		{"TRIMMED_IPV4_LEN", 20 + wire.DataLen},
	} {
		if got, ok := consts[c.name]; !ok || got != c.want {
			t.Errorf("tor.p4 %s = %d (present %v), wire gives %d", c.name, got, ok, c.want)
		}
	}
}
