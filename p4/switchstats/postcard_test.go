package switchstats

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestPostcardRoundTrip(t *testing.T) {
	in := Postcard{
		ArrivalNs: 1, EnqueueNs: 2, DequeueNs: -3 + 1<<40,
		IngressPort: 3, EgressPort: 511, Queue: 7, Kind: KindHoma, HomaType: 0x10, IPProto: 146,
		FrameLen: 1538, SrcIP: [4]byte{10, 0, 0, 1}, DstIP: [4]byte{10, 0, 0, 2},
		SrcPort: 40000, DstPort: 99, RPCID: 0xdeadbeef_01234567, Seq: 1 << 31, PayloadLen: 1448,
	}
	var b [PostcardLen]byte
	in.Encode(&b)
	var out Postcard
	out.Decode(&b)
	if out != in {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
	h := AppendPostcardHeader(nil, 1234567)
	if len(h) != PostcardHeaderLen {
		t.Fatalf("header is %d bytes, want %d", len(h), PostcardHeaderLen)
	}
	if ep, err := ParsePostcardHeader(h); err != nil || ep != 1234567 {
		t.Fatalf("header: %d, %v", ep, err)
	}
	file := append(append(append([]byte(nil), h...), b[:]...), b[:]...)
	var n int
	ep, err := ReadPostcards(bytes.NewReader(file), func(p *Postcard) error {
		n++
		if *p != in {
			t.Errorf("read %+v", *p)
		}
		return nil
	})
	if err != nil || n != 2 || ep != 1234567 {
		t.Fatalf("ReadPostcards: %d records, epoch %d, %v", n, ep, err)
	}
	if _, err := ReadPostcards(bytes.NewReader(file[:len(file)-1]), func(*Postcard) error { return nil }); err == nil {
		t.Error("truncated file read without error")
	}
	h[0] = 'X'
	if _, err := ParsePostcardHeader(h); err == nil {
		t.Fatal("bad magic accepted")
	}
}

// frame builds an Ethernet/IPv4 frame carrying l4 with protocol proto.
func frame(proto byte, l4 []byte) []byte {
	f := make([]byte, 14, 14+20+len(l4))
	f[12], f[13] = 0x08, 0x00
	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(l4)))
	ip[9] = proto
	copy(ip[12:], []byte{10, 0, 0, 1})
	copy(ip[16:], []byte{10, 0, 0, 2})
	return append(append(f, ip...), l4...)
}

func TestParseKey(t *testing.T) {
	homa := make([]byte, 60)
	binary.BigEndian.PutUint16(homa[0:], 4000)
	binary.BigEndian.PutUint16(homa[2:], 99)
	binary.BigEndian.PutUint32(homa[4:], 2800)
	homa[11] = 0x10
	binary.BigEndian.PutUint64(homa[20:], 0x1122334455667788)
	tcp := make([]byte, 20+100)
	binary.BigEndian.PutUint16(tcp[0:], 5001)
	binary.BigEndian.PutUint16(tcp[2:], 80)
	binary.BigEndian.PutUint32(tcp[4:], 0xfffffff0)
	tcp[12] = 5 << 4
	udp := make([]byte, 8+10)
	binary.BigEndian.PutUint16(udp[0:], 53)
	binary.BigEndian.PutUint16(udp[2:], 5353)
	arp := make([]byte, 42)
	arp[12], arp[13] = 0x08, 0x06
	ips := func(p *Postcard) { p.SrcIP, p.DstIP = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2} }
	tests := []struct {
		name  string
		frame []byte
		want  Postcard
	}{
		{"homa data", frame(146, homa), Postcard{Kind: KindHoma, IPProto: 146, HomaType: 0x10, SrcPort: 4000, DstPort: 99, RPCID: 0x1122334455667788, Seq: 2800}},
		{"tcp", frame(6, tcp), Postcard{Kind: KindTCP, IPProto: 6, SrcPort: 5001, DstPort: 80, Seq: 0xfffffff0, PayloadLen: 100}},
		{"udp", frame(17, udp), Postcard{Kind: KindOther, IPProto: 17, SrcPort: 53, DstPort: 5353}},
		{"homa truncated", frame(146, homa[:20]), Postcard{Kind: KindOther, IPProto: 146, SrcPort: 4000, DstPort: 99}},
		{"tcp truncated", frame(6, tcp[:10]), Postcard{Kind: KindOther, IPProto: 6, SrcPort: 5001, DstPort: 80}},
		{"arp", arp, Postcard{}},
		{"runt", []byte{1, 2, 3}, Postcard{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want.IPProto != 0 {
				ips(&tc.want)
			}
			// A postcard reused from an earlier frame must not keep its key.
			got := Postcard{RPCID: 9, Seq: 9, PayloadLen: 9, HomaType: 9, Kind: KindTCP, SrcPort: 1, ArrivalNs: 5}
			got.ParseKey(tc.frame)
			tc.want.ArrivalNs = 5
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	var p Postcard
	f := frame(146, homa)
	if n := testing.AllocsPerRun(100, func() { p.ParseKey(f) }); n != 0 {
		t.Fatalf("ParseKey allocates %v times", n)
	}
}
