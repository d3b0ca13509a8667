package dissector

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/wire"
)

// goPath maps each dissector field that carries a header field to where
// package wire's decoder puts that field (a path into its struct; a
// repeated field's n-th occurrence takes index n). This table is the
// contract between homatb.lua and package wire: TestFieldsMatchWire checks
// each entry's bytes, size and value, and that every field of the
// dissector is here or in derived.
var goPath = map[string]string{
	"homatb.sport":                    "Common.SPort",
	"homatb.dport":                    "Common.DPort",
	"homatb.sequence":                 "Common.Sequence",
	"homatb.flags":                    "Common.CommonFlags",
	"homatb.type":                     "Common.Type",
	"homatb.rank":                     "Common.Rank",
	"homatb.sender_id":                "Common.SenderID",
	"homatb.data.message_length":      "MessageLength",
	"homatb.data.incoming":            "Incoming",
	"homatb.data.ack_id":              "AckID",
	"homatb.data.ack_port":            "AckPort",
	"homatb.data.cutoff_version":      "CutoffVersion",
	"homatb.data.retransmit":          "Retransmit",
	"homatb.data.flags":               "Flags",
	"homatb.data.offset":              "Offset",
	"homatb.grant.offset":             "Offset",
	"homatb.grant.priority":           "Priority",
	"homatb.resend.offset":            "Offset",
	"homatb.resend.length":            "Length",
	"homatb.resend.priority":          "Priority",
	"homatb.cutoffs.cutoff":           "Cutoffs[%d]",
	"homatb.cutoffs.version":          "Version",
	"homatb.ack.num_acks":             "NumAcks",
	"homatb.ack.client_id":            "Acks[%d].ClientID",
	"homatb.ack.server_port":          "Acks[%d].ServerPort",
	"homatb.start_msg.message_length": "MessageLength",
	"homatb.start_msg.cutoff_version": "CutoffVersion",
	"homatb.start_msg.flags":          "Flags",
	"homatb.pull.count":               "Count",
	"homatb.nack.offset":              "Offset",
	"homatb.nack.length":              "Length",
}

// derived are the fields computed from others (or from the IP header, or
// from earlier packets), the doff byte and DATA's pad, which the decoder
// checks or skips; expected values come from derive.
var derived = []string{
	"homatb.trimmed", "homatb.doff", "homatb.rpc_id", "homatb.from_client", "homatb.priority",
	"homatb.rpc.first_frame", "homatb.rpc.prev_frame", "homatb.rpc.time",
	"homatb.data.incast", "homatb.data.pad", "homatb.data.payload_length", "homatb.data.payload",
	"homatb.start_msg.incast",
}

// experts are the dissector's expert infos.
var experts = []string{"homatb.malformed", "homatb.invalid", "homatb.snapped", "homatb.trimmed.note", "homatb.retransmit.note"}

// parse decodes b with package wire, whatever its type: the struct (also
// when the decoder refuses a value, as its decoders still return what
// they read) and the decoder's error.
func parse(b []byte) (any, error) {
	c, err := wire.ParseCommon(b)
	if err != nil {
		if errors.Is(err, wire.ErrTruncated) {
			return nil, err
		}
		return c, err
	}
	v, err := parseTyped(b, c)
	if errors.Is(err, wire.ErrTruncated) {
		return c, err // the typed decoders return nothing then
	}
	return v, err
}

func parseTyped(b []byte, c wire.Common) (any, error) {
	switch c.Type {
	case wire.TypeData:
		if c.Trimmed() {
			return wire.ParseTrimmed(b)
		}
		d, _, err := wire.ParseData(b)
		return d, err
	case wire.TypeGrant:
		return wire.ParseGrant(b)
	case wire.TypeResend:
		return wire.ParseResend(b)
	case wire.TypeCutoffs:
		return wire.ParseCutoffs(b)
	case wire.TypeAck:
		return wire.ParseAck(b)
	case wire.TypeStartMsg:
		return wire.ParseStartMsg(b)
	case wire.TypePull:
		return wire.ParsePull(b)
	case wire.TypeNack:
		return wire.ParseNack(b)
	}
	return c, nil // the header-only types
}

// flatten lists v's unsigned integer fields by path ("Common.SPort",
// "Acks[1].ClientID"); a bare Common gets its "Common." prefix.
func flatten(v any) map[string]uint64 {
	out := map[string]uint64{}
	prefix := ""
	if _, ok := v.(wire.Common); ok {
		prefix = "Common."
	}
	var walk func(string, reflect.Value)
	walk = func(path string, rv reflect.Value) {
		switch rv.Kind() {
		case reflect.Struct:
			for i := range rv.NumField() {
				walk(path+rv.Type().Field(i).Name+".", rv.Field(i))
			}
		case reflect.Array:
			for i := range rv.Len() {
				walk(fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i), rv.Index(i))
			}
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			out[strings.TrimSuffix(path, ".")] = rv.Uint()
		}
	}
	walk(prefix, reflect.ValueOf(v))
	return out
}

// goSize is the size in bytes of the field at path in v.
func goSize(v any, path string) int {
	rv := reflect.ValueOf(v)
	if _, ok := v.(wire.Common); ok {
		path = strings.TrimPrefix(path, "Common.")
	}
	for _, part := range strings.Split(path, ".") {
		name, idx, _ := strings.Cut(part, "[")
		rv = rv.FieldByName(name)
		if idx != "" {
			i, _ := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			rv = rv.Index(i)
		}
	}
	return int(rv.Type().Size())
}

// ftSize is the size of a tshark field type.
var ftSize = map[string]int{"FT_UINT8": 1, "FT_UINT16": 2, "FT_UINT32": 4, "FT_UINT64": 8}

// tcase is one packet of the test capture.
type tcase struct {
	name string
	tos  byte
	// fromServer swaps the addresses (the server is 10.0.0.2).
	fromServer bool
	b          []byte
	caplen     int
	// experts is what the dissector must report; noMutate skips the
	// byte-by-byte check where changing a field changes others by design.
	experts  []string
	noMutate bool
}

var (
	cli = wire.Common{SPort: 0x8001, DPort: 0x0063, SenderID: 0x0102_0304_0506_0708}
	srv = wire.Common{SPort: 0x0063, DPort: 0x8001, SenderID: 0x0102_0304_0506_0709}
	// other is a second RPC, so conversation tracking has two to tell apart.
	other = wire.Common{SPort: 0x8002, DPort: 0x0064, SenderID: 0x0a0b_0c0d_0e0f_1010}
)

func dataPkt(d wire.Data, payload int) []byte {
	b := wire.AppendData(nil, &d)
	for i := range payload {
		b = append(b, byte(i*7+3))
	}
	return b
}

// cases is one packet of every type and variant homatb sends, then the
// malformed and invalid packets the dissector must flag.
func cases() []tcase {
	req := wire.Data{Common: cli, MessageLength: 0x0011_2233, Incoming: 0x0004_5566, AckID: 0x1112_1314_1516_1718,
		AckPort: 0x2122, CutoffVersion: 0x3132, Retransmit: 1, Flags: wire.FlagIncast, Offset: 0x0001_4151}
	resp := wire.Data{Common: srv, MessageLength: 100, Incoming: 100, CutoffVersion: 4}
	ranked := dataPkt(wire.Data{Common: other, MessageLength: 50_000, Incoming: 50_000, Offset: 2848}, 1424)
	wire.SetRank(ranked, 0x0003_4567)
	trimmed, _ := wire.Trim(dataPkt(wire.Data{Common: other, MessageLength: 50_000, Incoming: 50_000, Offset: 4272}, 1424))
	busy, rpcUnknown, needAck, freeze := cli, srv, srv, cli
	busy.Type, rpcUnknown.Type, needAck.Type, freeze.Type = wire.TypeBusy, wire.TypeRPCUnknown, wire.TypeNeedAck, wire.TypeFreeze
	acks := [wire.MaxAcks]wire.AckEntry{{ClientID: 0x2122_2324_2526_2728, ServerPort: 0x3132}, {ClientID: 0x4142_4344_4546_4748, ServerPort: 0x5152},
		{ClientID: 0x6162_6364_6566_6768, ServerPort: 0x7172}, {ClientID: 0x8182_8384_8586_8788, ServerPort: 0x9192}, {ClientID: 0xa1a2_a3a4_a5a6_a7a8, ServerPort: 0xb1b2}}
	short := wire.AppendGrant(nil, &wire.Grant{Common: cli, Offset: 1})[:30]
	unknown := wire.AppendHeaderOnly(nil, &busy)
	unknown[wire.TypeOffset] = 0x30
	badDoff := wire.AppendGrant(nil, &wire.Grant{Common: srv, Offset: 1})
	badDoff[12] = 0x70
	trimmedFull := dataPkt(wire.Data{Common: other, MessageLength: 50_000, Offset: 0}, 10)
	trimmedFull[wire.FlagsOffset] |= wire.CommonTrimmed
	malformed, invalid := []string{"homatb.malformed"}, []string{"homatb.invalid"}
	return []tcase{
		{name: "data request", tos: 5 << 5, b: dataPkt(req, 300), experts: []string{"homatb.retransmit.note"}},
		{name: "data response", tos: 2 << 5, fromServer: true, b: dataPkt(resp, 100)},
		{name: "data ranked (pFabric)", tos: 0, b: ranked},
		{name: "data trimmed (NDP)", tos: 7 << 5, b: trimmed, experts: []string{"homatb.trimmed.note"}},
		{name: "grant", tos: 7 << 5, fromServer: true, b: wire.AppendGrant(nil, &wire.Grant{Common: srv, Offset: 0x0102_0304, Priority: 6})},
		{name: "resend", tos: 7 << 5, fromServer: true, b: wire.AppendResend(nil, &wire.Resend{Common: srv, Offset: 0x0506_0708, Length: 0x090a, Priority: 3})},
		{name: "resend all", tos: 7 << 5, b: wire.AppendResend(nil, &wire.Resend{Common: cli, Length: wire.ResendAll, Priority: 7})},
		{name: "rpc_unknown", tos: 7 << 5, fromServer: true, b: wire.AppendHeaderOnly(nil, &rpcUnknown)},
		{name: "busy", tos: 7 << 5, b: wire.AppendHeaderOnly(nil, &busy)},
		{name: "need_ack", tos: 7 << 5, fromServer: true, b: wire.AppendHeaderOnly(nil, &needAck)},
		{name: "freeze", tos: 7 << 5, b: wire.AppendHeaderOnly(nil, &freeze)},
		{name: "cutoffs", tos: 7 << 5, fromServer: true, b: wire.AppendCutoffs(nil, &wire.Cutoffs{Common: srv,
			Cutoffs: [8]uint32{0x7fff_ffff, 0x0101_0101, 0x0202_0202, 0x0303_0303, 0x0404_0404, 0x0505_0505, 0x0606_0606, 0x0707_0707}, Version: 0x0809})},
		{name: "ack of 2", tos: 7 << 5, b: wire.AppendAck(nil, &wire.Ack{Common: cli, NumAcks: 2, Acks: acks})},
		{name: "ack of 5", tos: 7 << 5, b: wire.AppendAck(nil, &wire.Ack{Common: cli, NumAcks: 5, Acks: acks}), noMutate: true},
		{name: "ack of 0", tos: 7 << 5, b: wire.AppendAck(nil, &wire.Ack{Common: cli})},
		{name: "start_msg incast", tos: 4 << 5, b: wire.AppendStartMsg(nil, &wire.StartMsg{Common: cli, MessageLength: 0x0203_0405, CutoffVersion: 0x0607, Flags: wire.FlagIncast})},
		{name: "start_msg", tos: 1 << 5, fromServer: true, b: wire.AppendStartMsg(nil, &wire.StartMsg{Common: srv, MessageLength: 1_000_000, CutoffVersion: 1})},
		{name: "pull", tos: 7 << 5, b: wire.AppendPull(nil, &wire.Pull{Common: other, Count: 0x0a0b_0c0d})},
		{name: "nack", tos: 7 << 5, b: wire.AppendNack(nil, &wire.Nack{Common: other, Offset: 4272, Length: 1424})},
		{name: "data cut by snaplen", tos: 3 << 5, b: dataPkt(resp, 100), caplen: 40, experts: []string{"homatb.snapped"}},
		{name: "data header cut by snaplen in the common header", tos: 3 << 5, b: dataPkt(resp, 100), caplen: 12, experts: []string{"homatb.snapped"}},

		{name: "shorter than a common header", tos: 0, b: wire.AppendHeaderOnly(nil, &busy)[:20], experts: malformed},
		{name: "truncated grant", tos: 0, b: short, experts: malformed},
		{name: "unknown type", tos: 0, b: unknown, experts: malformed},
		{name: "bad doff", tos: 0, fromServer: true, b: badDoff, experts: malformed, noMutate: true},
		{name: "grant priority 8", tos: 0, fromServer: true, b: wire.AppendGrant(nil, &wire.Grant{Common: srv, Offset: 9, Priority: 8}), experts: invalid, noMutate: true},
		{name: "resend of nothing", tos: 0, b: wire.AppendResend(nil, &wire.Resend{Common: cli}), experts: invalid, noMutate: true},
		{name: "cutoffs version 0", tos: 0, b: wire.AppendCutoffs(nil, &wire.Cutoffs{Common: srv}), experts: invalid, noMutate: true},
		{name: "ack of 6", tos: 0, b: wire.AppendAck(nil, &wire.Ack{Common: cli, NumAcks: 6}), experts: invalid, noMutate: true},
		{name: "data beyond its message", tos: 0, b: dataPkt(wire.Data{Common: cli, MessageLength: 100, Offset: 90}, 20), experts: invalid, noMutate: true},
		{name: "data without payload", tos: 0, b: dataPkt(wire.Data{Common: cli, MessageLength: 100}, 0), experts: invalid, noMutate: true},
		{name: "data offset beyond length", tos: 0, b: dataPkt(wire.Data{Common: cli, MessageLength: 100, Offset: 100}, 0), experts: invalid, noMutate: true},
		{name: "data retransmit 2", tos: 0, b: dataPkt(wire.Data{Common: cli, MessageLength: 100, Retransmit: 2}, 10), experts: invalid, noMutate: true},
		{name: "trimmed data with payload (ignored, as by wire)", tos: 0, b: trimmedFull, experts: []string{"homatb.trimmed.note"}, noMutate: true},
		{name: "start_msg of nothing", tos: 0, b: wire.AppendStartMsg(nil, &wire.StartMsg{Common: cli}), experts: invalid, noMutate: true},
		{name: "nack of nothing", tos: 0, b: wire.AppendNack(nil, &wire.Nack{Common: other}), experts: invalid, noMutate: true},
	}
}

// rpcState is what the dissector's first pass knows of one RPC: its first
// and latest packets (frame numbers) and the first one's time.
type rpcState struct {
	first, prev int
	ts          time.Time
	index       int // the packet being checked
}

var (
	addrCli = [4]byte{10, 0, 0, 1}
	addrSrv = [4]byte{10, 0, 0, 2}
	t0      = time.Unix(1_700_000_000, 0)
)

func (c tcase) frame(i int) frame {
	f := frame{src: addrCli, dst: addrSrv, tos: c.tos, b: c.b, caplen: c.caplen, ts: t0.Add(time.Duration(i) * 1500 * time.Nanosecond)}
	if c.fromServer {
		f.src, f.dst = f.dst, f.src
	}
	return f
}

// parseUint reads a PDML show value: decimal, 0x hex, or a boolean's 1/0.
func parseUint(s string) (uint64, error) { return strconv.ParseUint(s, 0, 64) }

// TestFieldsMatchWire writes one packet of every type and variant, as
// package wire encodes them, and malformed ones, runs tshark with the
// dissector over them, and checks each packet field by field against what
// package wire decodes from the same bytes: the value, the size (and the
// field's registered type), and the position: flipping the lowest bit of
// the bytes tshark says hold a field changes that field in wire's decoding
// and nothing else. It also checks the derived fields, the conversation
// tracking, the expert infos (the dissector flags exactly the packets
// wire refuses) and that every field of the dissector was checked.
func TestFieldsMatchWire(t *testing.T) {
	cs := cases()
	frames := make([]frame, len(cs))
	for i, c := range cs {
		frames[i] = c.frame(i)
	}
	registered := registeredFields(t)
	pkts := homatbFields(t, writeCapture(t, t.TempDir(), frames))
	if len(pkts) != len(cs) {
		t.Fatalf("tshark shows %d packets, want %d", len(pkts), len(cs))
	}
	checked := map[string]int{}
	rpcs := map[string]*rpcState{}
	for i, c := range cs {
		fs := pkts[i]
		t.Run(c.name, func(t *testing.T) {
			captured := len(c.b)
			if c.caplen > 0 {
				captured = c.caplen
			}
			msg, werr := parse(c.b)
			vals := map[string]uint64{}
			if msg != nil {
				vals = flatten(msg)
			}
			// What the first pass of the dissector knows of the RPC.
			var conv *rpcState
			var prevFrame int
			if cm, err := wire.ParseCommon(c.b); captured >= wire.CommonLen && (err == nil || !errors.Is(err, wire.ErrTruncated)) {
				client := c.frame(i).src
				if !cm.FromClient() {
					client = c.frame(i).dst
				}
				key := fmt.Sprintf("%v/%d", client, cm.SenderID&^1)
				if rpcs[key] == nil {
					rpcs[key] = &rpcState{first: i + 1, ts: c.frame(i).ts}
				}
				conv = rpcs[key]
				prevFrame = conv.prev
				conv.prev, conv.index = i+1, i
			}

			occ := map[string]int{}
			var gotExperts []string
			for _, f := range fs {
				n := occ[f.Name]
				occ[f.Name]++
				if strings.HasPrefix(f.Name, "_ws.") {
					continue
				}
				if !strings.HasPrefix(f.Name, "homatb.") {
					t.Errorf("field %s outside homatb.*", f.Name)
					continue
				}
				checked[f.Name]++
				if isExpert(f.Name) {
					gotExperts = append(gotExperts, f.Name)
					continue
				}
				if p, ok := goPath[f.Name]; ok {
					if strings.Contains(p, "%d") {
						p = fmt.Sprintf(p, n)
					}
					checkWireField(t, c, msg, werr, vals, f, p, registered[f.Name])
					continue
				}
				want, ok := derive(c, msg, f.Name, conv, prevFrame)
				if !ok {
					t.Errorf("%s: no expectation (add it to goPath or derived)", f.Name)
					continue
				}
				got := f.Show
				if f.Name == "homatb.data.payload" {
					got = f.Value
				}
				if got != want {
					t.Errorf("%s = %q, want %q", f.Name, got, want)
				}
			}
			if prevFrame > 0 && occ["homatb.rpc.prev_frame"] == 0 {
				t.Errorf("homatb.rpc.prev_frame missing, want %d", prevFrame)
			}
			slices.Sort(gotExperts)
			gotExperts = slices.Compact(gotExperts)
			slices.Sort(c.experts)
			if !slices.Equal(gotExperts, c.experts) {
				t.Errorf("expert infos %v, want %v (wire's decoder: %v)", gotExperts, c.experts, werr)
			}
			// The dissector calls a packet malformed or invalid exactly
			// when package wire refuses it.
			flagged := contains(gotExperts, "homatb.malformed") || contains(gotExperts, "homatb.invalid")
			if flagged != (werr != nil) {
				t.Errorf("dissector flags the packet: %v; wire's decoder says %v", flagged, werr)
			}
			if errors.Is(werr, wire.ErrTruncated) && !contains(gotExperts, "homatb.malformed") {
				t.Errorf("wire says %v, the dissector does not call it malformed", werr)
			}
			if msg != nil && captured >= headerLen(c.b) {
				// Every field wire decodes was shown.
				for name, p := range goPath {
					if !strings.HasPrefix(name, "homatb."+typePrefix(c.b)) && strings.Count(name, ".") > 1 {
						continue
					}
					if strings.Contains(p, "%d") {
						continue // repeated: counted below
					}
					if _, ok := vals[p]; ok && occ[name] == 0 {
						t.Errorf("%s (wire's %s) not shown", name, p)
					}
				}
			}
		})
	}
	for name, typ := range registered {
		if checked[name] == 0 {
			t.Errorf("field %s (%s) appeared in no packet: give it a case", name, typ)
		}
	}
}

// checkWireField checks one field tshark shows against wire's decoding.
func checkWireField(t *testing.T, c tcase, msg any, werr error, vals map[string]uint64, f field, path, ftype string) {
	t.Helper()
	got, err := parseUint(f.Show)
	if err != nil {
		t.Errorf("%s: show %q: %v", f.Name, f.Show, err)
		return
	}
	want, ok := vals[path]
	if !ok && werr != nil {
		return // wire refused the packet before reading this field
	}
	if !ok {
		t.Errorf("%s: wire's %T has no %s", f.Name, msg, path)
		return
	}
	if got != want {
		t.Errorf("%s = %d, wire's %s = %d", f.Name, got, path, want)
	}
	size := goSize(msg, path)
	if f.Size != size || ftSize[ftype] != size {
		t.Errorf("%s: %d bytes, type %s; wire's %s has %d", f.Name, f.Size, ftype, path, size)
	}
	off := f.Pos - frameHdr
	if path == "Common.Type" {
		if off != wire.TypeOffset {
			t.Errorf("%s at byte %d, wire.TypeOffset %d", f.Name, off, wire.TypeOffset)
		}
		return
	}
	if c.noMutate || off < 0 || off+size > len(c.b) {
		return
	}
	b := append([]byte(nil), c.b...)
	b[off+size-1] ^= 1
	m2, _ := parse(b)
	if m2 == nil {
		t.Errorf("%s: wire cannot decode the packet with byte %d changed", f.Name, off+size-1)
		return
	}
	after := flatten(m2)
	var be [8]byte
	copy(be[8-size:], b[off:off+size])
	if v := binary.BigEndian.Uint64(be[:]); after[path] != v {
		t.Errorf("%s: bytes %d..%d hold %#x, wire's %s reads %#x there", f.Name, off, off+size-1, v, path, after[path])
	}
	for p, v := range vals {
		if p != path && after[p] != v {
			t.Errorf("%s: changing bytes %d..%d changed wire's %s too", f.Name, off, off+size-1, p)
		}
	}
}

// derive is the expected show value of a derived field.
func derive(c tcase, msg any, name string, conv *rpcState, prevFrame int) (string, bool) {
	cm, _ := wire.ParseCommon(c.b)
	u := func(v uint64) (string, bool) { return strconv.FormatUint(v, 10), true }
	b := func(v bool) (string, bool) {
		if v {
			return "1", true
		}
		return "0", true
	}
	flags := func() uint8 {
		switch m := msg.(type) {
		case wire.Data:
			return m.Flags
		case wire.StartMsg:
			return m.Flags
		}
		return 0
	}
	switch name {
	case "homatb.trimmed":
		return b(cm.Trimmed())
	case "homatb.doff":
		return fmt.Sprintf("0x%02x", c.b[12]), true
	case "homatb.rpc_id":
		return u(cm.SenderID &^ 1)
	case "homatb.from_client":
		return b(cm.FromClient())
	case "homatb.priority":
		return u(uint64(c.tos >> 5))
	case "homatb.data.incast", "homatb.start_msg.incast":
		return b(flags()&wire.FlagIncast != 0)
	case "homatb.data.pad":
		return fmt.Sprintf("0x%04x", binary.BigEndian.Uint16(c.b[50:])), true
	case "homatb.data.payload_length":
		return u(uint64(len(c.b) - wire.DataLen))
	case "homatb.data.payload":
		end := len(c.b)
		if c.caplen > 0 {
			end = c.caplen
		}
		return hex.EncodeToString(c.b[wire.DataLen:end]), true
	}
	if conv == nil {
		return "", false
	}
	switch name {
	case "homatb.rpc.first_frame":
		return strconv.Itoa(conv.first), true
	case "homatb.rpc.prev_frame":
		return strconv.Itoa(prevFrame), prevFrame > 0
	case "homatb.rpc.time":
		return fmt.Sprintf("%.9f", c.frame(conv.index).ts.Sub(conv.ts).Seconds()), true
	}
	return "", false
}

func isExpert(name string) bool { return contains(experts, name) }

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// headerLen is the fixed size of b's type: the common header's for the
// header-only and unknown types, 0 when b is too short to have a type.
func headerLen(b []byte) int {
	if len(b) <= wire.TypeOffset {
		return 0
	}
	switch wire.Type(b[wire.TypeOffset]) {
	case wire.TypeData:
		return wire.DataLen
	case wire.TypeGrant:
		return wire.GrantLen
	case wire.TypeResend:
		return wire.ResendLen
	case wire.TypeCutoffs:
		return wire.CutoffsLen
	case wire.TypeAck:
		return wire.AckLen
	case wire.TypeStartMsg:
		return wire.StartMsgLen
	case wire.TypePull:
		return wire.PullLen
	case wire.TypeNack:
		return wire.NackLen
	}
	return wire.CommonLen
}

// typePrefix is the dissector's prefix of b's type-specific fields.
func typePrefix(b []byte) string {
	return strings.ToLower(wire.Type(b[wire.TypeOffset]).String()) + "."
}
