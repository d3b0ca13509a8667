package wire

import (
	"bytes"
	"errors"
	"testing"
)

// uetHeaders are one header of each kind with every field set to a value
// that differs from its neighbours', so a field written to the wrong bits
// shows in the round trip.
func uetHeaders() []struct {
	name string
	h    UETPDS
	app  func([]byte, *UETPDS) []byte
	n    int
} {
	return []struct {
		name string
		h    UETPDS
		app  func([]byte, *UETPDS) []byte
		n    int
	}{
		{"rud_request", UETPDS{Type: UETRUDReq, Next: UETNextRequestStd, Retrans: true, AckReq: true, ClearPSNOffset: 0x1234, PSN: 0x89abcdef, SPDCID: 0x0102, DPDCID: 0x0304}, AppendUETRequest, UETRequestLen},
		{"rud_request_syn", UETPDS{Type: UETRUDReq, Next: UETNextRequestStd, Syn: true, ClearPSNOffset: 7, PSN: 0xfffffff0, SPDCID: 0x0a0b, SynPSNOffset: 0xabc}, AppendUETRequest, UETRequestLen},
		{"rod_request", UETPDS{Type: UETRODReq, Next: UETNextRequestStd, PSN: 1, SPDCID: 2, DPDCID: 3}, AppendUETRequest, UETRequestLen},
		{"rud_cc_request", UETPDS{Type: UETRUDCCReq, Next: UETNextRequestStd, AckReq: true, PSN: 0x0a0b0c0d, SPDCID: 4, DPDCID: 5, CCCID: 0x7e, CreditTarget: 0xabcdef}, AppendUETRequest, UETRequestCCLen},
		{"ack", UETPDS{Type: UETAck, Next: UETNextResponse, ECN: true, Retrans: true, Probe: true, AckRequest: 2, AckPSNOffset: 0x0506, PSN: 0x11223344, SPDCID: 0x0708, DPDCID: 0x090a}, AppendUETAck, UETAckLen},
		{"ack_cc_nscc", UETPDS{Type: UETAckCC, ECN: true, AckRequest: 1, AckPSNOffset: 3, PSN: 0xdeadbeef, SPDCID: 9, DPDCID: 10, CCType: UETCCNSCC, MPR: 0x40, SACKPSNOffset: 1, SACKBitmap: 0x8000_0000_0000_0005, ServiceTime: 0x7788, RcvdBytes: 0xabcdef, OOOCount: 0x0102}, AppendUETAck, UETAckCCLen},
		{"ack_cc_credit", UETPDS{Type: UETAckCC, PSN: 5, SPDCID: 1, DPDCID: 2, CCType: UETCCCredit, MPR: 8, SACKPSNOffset: 0xffff, SACKBitmap: 1, Credit: 0x123456, OOOCount: 3}, AppendUETAck, UETAckCCLen},
		{"nack", UETPDS{Type: UETNack, Next: UETNextRequestStd, ECN: true, Retrans: true, NackType: 1, NackCode: UETNackTrimmed, VendorCode: 0x42, PSN: 0x01020304, SPDCID: 0x1111, DPDCID: 0x2222, Payload: 0x33445566}, AppendUETNack, UETNackLen},
		{"control", UETPDS{Type: UETControl, Next: UETCtlCredit, Retrans: true, AckReq: true, Syn: true, AckPSNOffset: 0x0bad, PSN: 0xcafef00d, SPDCID: 0x3333, DPDCID: 0x4444, Payload: 0x55667788}, AppendUETControl, UETControlLen},
	}
}

// TestUETRoundTrip checks every header field through marshal and parse,
// and the length of each header.
func TestUETRoundTrip(t *testing.T) {
	for _, tt := range uetHeaders() {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.app(nil, &tt.h)
			if len(b) != tt.n {
				t.Fatalf("%d bytes, want %d", len(b), tt.n)
			}
			var got UETPDS
			rest, err := ParseUETPDS(append(b, "payload"...), &got)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.h {
				t.Errorf("parsed %+v\nwant   %+v", got, tt.h)
			}
			if string(rest) != "payload" {
				t.Errorf("rest %q", rest)
			}
			if _, err := ParseUETPDS(b[:len(b)-1], &got); !errors.Is(err, ErrTruncated) {
				t.Errorf("one byte short: %v, want truncated", err)
			}
		})
	}
}

// TestUETBytes pins the wire bytes of the prologue's bit fields and of a
// request's fields against the specification's layout (type in the top
// five bits, next header, then the flags, all big-endian).
func TestUETBytes(t *testing.T) {
	h := UETPDS{Type: UETRUDReq, Next: UETNextRequestStd, AckReq: true, ClearPSNOffset: 0x0102, PSN: 0x03040506, SPDCID: 0x0708, DPDCID: 0x090a}
	// 00010 0011 0001000: type 2, next 3, ackreq (bit 3).
	want := []byte{0x11, 0x88, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a}
	if b := AppendUETRequest(nil, &h); !bytes.Equal(b, want) {
		t.Errorf("request % x, want % x", b, want)
	}
	h.AckReq, h.Syn, h.Retrans, h.SynPSNOffset = false, true, true, 0xfff
	// retrans (bit 4) and syn (bit 2); the DPDCID field holds the offset.
	if b := AppendUETRequest(nil, &h); b[1] != 0x94 || b[10] != 0x0f || b[11] != 0xff {
		t.Errorf("SYN request % x", b)
	}
	a := UETPDS{Type: UETAckCC, ECN: true, AckRequest: 2, PSN: 0x10, SACKPSNOffset: 1, SACKBitmap: 0x0102030405060708, CCType: UETCCCredit, Credit: 0xabcdef}
	b := AppendUETAck(nil, &a)
	// 01000 0000 0100100: type 8, ECN (bit 5), request 2 (bits 2..1).
	if b[0] != 0x40 || b[1] != 0x24 || b[12] != 0x10 || !bytes.Equal(b[16:24], []byte{1, 2, 3, 4, 5, 6, 7, 8}) || !bytes.Equal(b[24:27], []byte{0xab, 0xcd, 0xef}) {
		t.Errorf("ACK_CC % x", b)
	}
	n := AppendUETNack(nil, &UETPDS{NackCode: UETNackTrimmed, PSN: 9})
	if n[0] != 0x50 || n[2] != 0x01 || n[7] != 9 {
		t.Errorf("NACK % x", n)
	}
	s := SESRequest{Opcode: SESOpSend, Version: 1, Flags: SESFlagSOM | SESFlagEOM, MsgID: 0x0102, RIGeneration: 3, JobID: 0x040506,
		PIDOnFEP: 0x0789, ResourceIndex: 0x0abc, BufferOffset: 0x1112131415161718, Initiator: 0x21222324,
		MatchBits: 0x3132333435363738, HeaderData: 0x4142434445464748, RequestLength: 0x51525354}
	sb := AppendSESRequest(nil, &s)
	wantSES := []byte{0x05, 0x43, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x89, 0x0a, 0xbc,
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x21, 0x22, 0x23, 0x24,
		0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x51, 0x52, 0x53, 0x54}
	if !bytes.Equal(sb, wantSES) {
		t.Errorf("SES % x\nwant % x", sb, wantSES)
	}
	var got SESRequest
	if rest, err := ParseSESRequest(append(sb, 'x'), &got); err != nil || got != s || string(rest) != "x" {
		t.Errorf("SES parsed %+v, %q, %v", got, rest, err)
	}
	if _, err := ParseSESRequest(sb[:43], &got); !errors.Is(err, ErrTruncated) {
		t.Errorf("short SES: %v", err)
	}
	if _, err := ParseUETPDS([]byte{0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, &UETPDS{}); !errors.Is(err, ErrUnknownType) {
		t.Errorf("type 1: %v, want unknown type", err)
	}
}

// TestUETNoAllocs: marshalling into a buffer with room and parsing do
// not allocate (the engine's per-packet path).
func TestUETNoAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	h := uetHeaders()[5].h // ACK_CC
	s := SESRequest{Opcode: SESOpSend, RequestLength: 100}
	var p UETPDS
	var sp SESRequest
	if n := testing.AllocsPerRun(100, func() {
		b := AppendUETAck(buf[:0], &h)
		b = AppendSESRequest(b, &s)
		rest, _ := ParseUETPDS(b, &p)
		_, _ = ParseSESRequest(rest, &sp)
	}); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}

// FuzzUETParse: arbitrary bytes never panic the decoders, an error is
// truncated or an unknown type, and what parses re-encodes to the same
// header bytes (fields the layout reserves aside).
func FuzzUETParse(f *testing.F) {
	for _, tt := range uetHeaders() {
		f.Add(tt.app(nil, &tt.h))
	}
	f.Add(AppendSESRequest(nil, &SESRequest{Opcode: SESOpSend}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h UETPDS
		rest, err := ParseUETPDS(b, &h)
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrUnknownType) {
				t.Fatalf("%v: neither truncated nor unknown type", err)
			}
		} else {
			var re []byte
			switch h.Type {
			case UETRUDReq, UETRODReq, UETRUDCCReq, UETRODCCReq:
				re = AppendUETRequest(nil, &h)
			case UETAck, UETAckCC:
				re = AppendUETAck(nil, &h)
			case UETNack:
				re = AppendUETNack(nil, &h)
			case UETControl:
				re = AppendUETControl(nil, &h)
			}
			var h2 UETPDS
			if _, err := ParseUETPDS(re, &h2); err != nil || h2 != h {
				t.Fatalf("re-encoded %+v parses as %+v, %v", h, h2, err)
			}
			if len(rest) != len(b)-len(re) {
				t.Fatalf("rest %d bytes of %d, header %d", len(rest), len(b), len(re))
			}
		}
		var s SESRequest
		if _, err := ParseSESRequest(b, &s); err == nil {
			var s2 SESRequest
			if _, err := ParseSESRequest(AppendSESRequest(nil, &s), &s2); err != nil || s2 != s {
				t.Fatalf("SES %+v re-parses as %+v, %v", s, s2, err)
			}
		}
	})
}
