package wire

import "testing"

func TestPFCFrameRoundTrip(t *testing.T) {
	quanta := [PFCClasses]uint16{3: 0xffff, 5: 7}
	f := make([]byte, PFCFrameLen)
	PutPFCFrame(f, [6]byte{2, 0, 0, 0, 0, 1}, 1<<3|1<<5, &quanta)
	vec, got, ok := ParsePFCFrame(f)
	if !ok || vec != 1<<3|1<<5 || got != quanta {
		t.Fatalf("parsed %v %08b %v, want %08b %v", ok, vec, got, 1<<3|1<<5, quanta)
	}
	if f[0] != 0x01 || f[5] != 0x01 || f[12] != 0x88 || f[13] != 0x08 || f[14] != 0x01 || f[15] != 0x01 {
		t.Errorf("header % x: want 01:80:c2:00:00:01, ethertype 8808, opcode 0101", f[:16])
	}
	f[12], f[13] = 0x08, 0x00
	if _, _, ok := ParsePFCFrame(f); ok {
		t.Error("an IPv4 frame parsed as PAUSE")
	}
	if got := PFCPause(PFCQuantaMax, 1e9); got != 33_553_920 {
		t.Errorf("a full pause at 1 Gbit/s lasts %d ns, want 65535 x 512 ns", got)
	}
}
