package p4rtclient

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
)

func TestCanonicalEncoding(t *testing.T) {
	tests := []struct {
		name    string
		in      Value
		width   int32
		want    []byte
		wantErr bool
	}{
		{"zero is one byte", Value{0, 0, 0}, 9, []byte{0}, false},
		{"leading zeros stripped", Value{0, 0, 1, 2}, 32, []byte{1, 2}, false},
		{"nine-bit port 511", Uint(511), 9, []byte{1, 0xff}, false},
		{"nine-bit port 512 too wide", Uint(512), 9, nil, true},
		{"padded but fits", Value{0, 0, 0, 7}, 3, []byte{7}, false},
		{"three bits, 8 too wide", Uint(8), 3, nil, true},
		{"empty rejected", Value{}, 8, nil, true},
		{"48-bit mac", MACValue(net.HardwareAddr{0, 0, 0, 0, 0, 1}), 48, []byte{1}, false},
		{"ipv4", IPv4(netip.MustParseAddr("10.0.0.1")), 32, []byte{10, 0, 0, 1}, false},
		{"ipv6 is no ipv4", IPv4(netip.MustParseAddr("::1")), 32, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodeBits(tt.in, tt.width)
			if (err != nil) != tt.wantErr {
				t.Fatalf("encodeBits(%x, %d) error = %v, want error %v", []byte(tt.in), tt.width, err, tt.wantErr)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("encodeBits(%x, %d) = %x, want %x", []byte(tt.in), tt.width, got, tt.want)
			}
		})
	}
}

func TestUintRoundTrip(t *testing.T) {
	for _, v := range []uint64{0, 1, 255, 256, 1<<19 - 1, 1<<48 - 1, 1<<64 - 1} {
		got, err := Uint(v).Uint64()
		if err != nil || got != v {
			t.Errorf("Uint(%d).Uint64() = %d, %v", v, got, err)
		}
		if c := canonical(Uint(v)); !bytes.Equal(c, Uint(v)) {
			t.Errorf("Uint(%d) = %x is not canonical", v, []byte(Uint(v)))
		}
	}
	if _, err := (Value{1, 0, 0, 0, 0, 0, 0, 0, 0}).Uint64(); err == nil {
		t.Error("a 9-byte value converted to uint64 without error")
	}
}

func TestBitLen(t *testing.T) {
	tests := []struct {
		in   []byte
		want int
	}{
		{nil, 0}, {[]byte{0}, 0}, {[]byte{1}, 1}, {[]byte{0, 0x80}, 8}, {[]byte{1, 0}, 9}, {[]byte{0xff, 0xff}, 16},
	}
	for _, tt := range tests {
		if got := bitLen(tt.in); got != tt.want {
			t.Errorf("bitLen(%x) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
