package wire

import (
	"bytes"
	"errors"
	"testing"
)

var common = Common{SPort: 0x8001, DPort: 99, SenderID: 0x1234_5678_9abc_def0}

// packets returns one encoded packet of each type and the decoder that
// re-encodes it, so round-trip and truncation tests cover every type.
func packets() []struct {
	name    string
	b       []byte
	wantLen int
	reenc   func([]byte) ([]byte, error)
} {
	d := Data{Common: common, MessageLength: 5000, Incoming: 3000, AckID: 42, AckPort: 7,
		CutoffVersion: 3, Retransmit: 1, Flags: FlagIncast, Offset: 1400}
	g := Grant{Common: common, Offset: 70000, Priority: 3}
	r := Resend{Common: common, Offset: 1000, Length: ResendAll, Priority: 7}
	c := Cutoffs{Common: common, Cutoffs: [8]uint32{1000000, 5, 6, 7, 8, 9, 10, 200}, Version: 9}
	a := Ack{Common: common, NumAcks: 2, Acks: [5]AckEntry{{ClientID: 2, ServerPort: 80}, {ClientID: 4, ServerPort: 81}}}
	sm := StartMsg{Common: common, MessageLength: 1_000_000, CutoffVersion: 4, Flags: FlagIncast}
	busy := common
	busy.Type = TypeBusy
	pl := Pull{Common: common, Count: 9000}
	nk := Nack{Common: common, Offset: 1424, Length: 1424}
	ranked := d
	ranked.Rank = 3600
	payload := []byte("hello, homa")
	return []struct {
		name    string
		b       []byte
		wantLen int
		reenc   func([]byte) ([]byte, error)
	}{
		{"data", append(AppendData(nil, &d), payload...), DataLen + len(payload), func(b []byte) ([]byte, error) {
			d, p, err := ParseData(b)
			return append(AppendData(nil, &d), p...), err
		}},
		{"grant", AppendGrant(nil, &g), GrantLen, func(b []byte) ([]byte, error) {
			g, err := ParseGrant(b)
			return AppendGrant(nil, &g), err
		}},
		{"resend", AppendResend(nil, &r), ResendLen, func(b []byte) ([]byte, error) {
			r, err := ParseResend(b)
			return AppendResend(nil, &r), err
		}},
		{"cutoffs", AppendCutoffs(nil, &c), CutoffsLen, func(b []byte) ([]byte, error) {
			c, err := ParseCutoffs(b)
			return AppendCutoffs(nil, &c), err
		}},
		{"ack", AppendAck(nil, &a), AckLen, func(b []byte) ([]byte, error) {
			a, err := ParseAck(b)
			return AppendAck(nil, &a), err
		}},
		{"start_msg", AppendStartMsg(nil, &sm), StartMsgLen, func(b []byte) ([]byte, error) {
			s, err := ParseStartMsg(b)
			return AppendStartMsg(nil, &s), err
		}},
		{"pull", AppendPull(nil, &pl), PullLen, func(b []byte) ([]byte, error) {
			p, err := ParsePull(b)
			return AppendPull(nil, &p), err
		}},
		{"nack", AppendNack(nil, &nk), NackLen, func(b []byte) ([]byte, error) {
			n, err := ParseNack(b)
			return AppendNack(nil, &n), err
		}},
		{"ranked data", append(AppendData(nil, &ranked), payload...), DataLen + len(payload), func(b []byte) ([]byte, error) {
			d, p, err := ParseData(b)
			return append(AppendData(nil, &d), p...), err
		}},
		{"busy", AppendHeaderOnly(nil, &busy), CommonLen, func(b []byte) ([]byte, error) {
			c, err := ParseCommon(b)
			return AppendHeaderOnly(nil, &c), err
		}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, p := range packets() {
		t.Run(p.name, func(t *testing.T) {
			if len(p.b) != p.wantLen {
				t.Fatalf("encoded %d bytes, want %d", len(p.b), p.wantLen)
			}
			got, err := p.reenc(p.b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(got, p.b) {
				t.Fatalf("re-encoded\n%x\nwant\n%x", got, p.b)
			}
		})
	}
}

func TestTruncated(t *testing.T) {
	for _, p := range packets() {
		t.Run(p.name, func(t *testing.T) {
			hdr := p.wantLen
			if p.name == "data" || p.name == "ranked data" {
				hdr = DataLen // a DATA packet cut inside its payload is valid
			}
			for n := range hdr {
				if _, err := p.reenc(p.b[:n]); !errors.Is(err, ErrTruncated) {
					t.Errorf("%d of %d bytes: err %v, want ErrTruncated", n, hdr, err)
				}
			}
		})
	}
}

func TestFields(t *testing.T) {
	d := Data{Common: common, MessageLength: 5000, Incoming: 3000, Offset: 1400, CutoffVersion: 2}
	b := append(AppendData(nil, &d), make([]byte, 100)...)
	got, payload, err := ParseData(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != d || len(payload) != 100 || got.Sequence != 1400 {
		t.Fatalf("got %+v (payload %d), want %+v", got, len(payload), d)
	}
	if b[11] != byte(TypeData) || b[12] != 0xe0 {
		t.Fatalf("type/doff bytes %x %x, want 10 e0", b[11], b[12])
	}
	if c := (Common{SenderID: 6}); !c.FromClient() || c.LocalID() != 7 {
		t.Fatalf("id 6: FromClient %v LocalID %d", c.FromClient(), c.LocalID())
	}
}

func TestInvalid(t *testing.T) {
	d := Data{Common: common, MessageLength: 100, Offset: 90}
	g := Grant{Common: common, Priority: 8}
	r := Resend{Common: common, Length: 0}
	c := Cutoffs{Common: common}
	a := Ack{Common: common, NumAcks: 6}
	bad := AppendHeaderOnly(nil, &Common{Type: TypeBusy})
	bad[12] = 0x70
	unknown := AppendHeaderOnly(nil, &Common{Type: TypeBusy})
	unknown[11] = 0x30
	tests := []struct {
		name  string
		parse func() error
	}{
		{"data beyond length", func() error { _, _, err := ParseData(append(AppendData(nil, &d), make([]byte, 20)...)); return err }},
		{"data no payload", func() error { _, _, err := ParseData(AppendData(nil, &d)); return err }},
		{"grant priority", func() error { _, err := ParseGrant(AppendGrant(nil, &g)); return err }},
		{"resend zero length", func() error { _, err := ParseResend(AppendResend(nil, &r)); return err }},
		{"cutoffs version 0", func() error { _, err := ParseCutoffs(AppendCutoffs(nil, &c)); return err }},
		{"start_msg length 0", func() error { _, err := ParseStartMsg(AppendStartMsg(nil, &StartMsg{Common: common})); return err }},
		{"ack count", func() error { _, err := ParseAck(AppendAck(nil, &a)); return err }},
		{"nack zero length", func() error { _, err := ParseNack(AppendNack(nil, &Nack{Common: common})); return err }},
		{"trimmed as data", func() error {
			b, _ := Trim(append(AppendData(nil, &Data{Common: common, MessageLength: 10}), 1, 2))
			_, _, err := ParseData(b)
			return err
		}},
		{"untrimmed as trimmed", func() error {
			_, err := ParseTrimmed(append(AppendData(nil, &Data{Common: common, MessageLength: 10}), 1))
			return err
		}},
		{"bad doff", func() error { _, err := ParseCommon(bad); return err }},
		{"unknown type", func() error { _, err := ParseCommon(unknown); return err }},
		{"wrong type", func() error { _, err := ParseGrant(AppendResend(nil, &Resend{Length: 1})); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.parse(); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
}

// FuzzParse feeds arbitrary bytes to the decoder: it must never panic, and
// whatever it accepts must re-encode to bytes that decode to the same value.
func FuzzParse(f *testing.F) {
	for _, p := range packets() {
		f.Add(p.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCommon(b)
		if err != nil {
			return
		}
		for _, p := range packets() {
			if p.b[11] != byte(c.Type) {
				continue
			}
			once, err := p.reenc(b)
			if err != nil {
				return
			}
			twice, err := p.reenc(once)
			if err != nil || !bytes.Equal(once, twice) {
				t.Fatalf("re-encoding not stable: %v\n%x\n%x", err, once, twice)
			}
		}
	})
}

// TestContractOffsets pins the issue #20 contract the switch relies on:
// the rank at common-header bytes 16..19 (big-endian), the trimmed flag at
// byte 8 bit 0x01, the type at byte 11, control packets with rank 0.
func TestContractOffsets(t *testing.T) {
	c := common
	c.Rank = 0x01020304
	d := Data{Common: c, MessageLength: 5000, Offset: 1424}
	b := append(AppendData(nil, &d), make([]byte, 100)...)
	if got := b[16:20]; !bytes.Equal(got, []byte{1, 2, 3, 4}) {
		t.Errorf("rank bytes %x, want 01020304", got)
	}
	if b[TypeOffset] != 0x10 || b[FlagsOffset] != 0 {
		t.Errorf("type %#x flags %#x, want 0x10 and 0", b[TypeOffset], b[FlagsOffset])
	}
	SetRank(b, 77)
	if c, err := ParseCommon(b); err != nil || c.Rank != 77 {
		t.Errorf("after SetRank: rank %d err %v, want 77", c.Rank, err)
	}
	g := AppendGrant(nil, &Grant{Common: common, Offset: 1})
	if !bytes.Equal(g[16:20], []byte{0, 0, 0, 0}) {
		t.Errorf("grant rank bytes %x, want 0", g[16:20])
	}
	tb, ok := Trim(b)
	if !ok || len(tb) != DataLen || tb[8] != 0x01 {
		t.Fatalf("Trim: ok %v len %d flags %#x, want true, %d, 0x01", ok, len(tb), tb[8], DataLen)
	}
	if _, again := Trim(tb); again {
		t.Error("a trimmed packet was trimmed again")
	}
	if _, ok := Trim(g); ok {
		t.Error("a GRANT was trimmed")
	}
	td, err := ParseTrimmed(tb)
	if err != nil || td.Offset != 1424 || td.MessageLength != 5000 || !td.Trimmed() {
		t.Errorf("ParseTrimmed: %+v, %v", td, err)
	}
}

// TestNewTypesNamed checks the counters' names of the NDP types and that
// codes beyond them stay unknown.
func TestNewTypesNamed(t *testing.T) {
	for _, tt := range []struct {
		t    Type
		name string
		ok   bool
	}{{TypePull, "pull", true}, {TypeNack, "nack", true}, {TypeNack + 1, "type(0x1c)", false}} {
		if tt.t.String() != tt.name || tt.t.Valid() != tt.ok {
			t.Errorf("%#x: %q valid %v, want %q %v", uint8(tt.t), tt.t.String(), tt.t.Valid(), tt.name, tt.ok)
		}
	}
}

// FuzzErrorKinds: every decoder's error is ErrTruncated or exactly one of
// the kinds of ErrInvalid, so a receiver can count each drop under one
// reason.
func FuzzErrorKinds(f *testing.F) {
	for _, p := range packets() {
		f.Add(p.b)
		f.Add(p.b[:len(p.b)/2])
	}
	kinds := []error{ErrTruncated, ErrUnknownType, ErrBadHeader, ErrBadLength, ErrBadOffset, ErrBadField}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range packets() {
			_, err := p.reenc(b)
			if err == nil {
				continue
			}
			n := 0
			for _, k := range kinds {
				if errors.Is(err, k) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%s: %v is of %d kinds, want 1", p.name, err, n)
			}
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("%s: %v is neither truncated nor invalid", p.name, err)
			}
		}
	})
}
