package units

import (
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr string // substring; "" for none
	}{
		{"100Mbit", 100e6, ""},
		{"1Gbit", 1e9, ""},
		{"1gbit", 1e9, ""},
		{"1gbps", 1e9, ""},
		{"1Gb", 1e9, ""}, // lower-case b is bits
		{"250mbit/s", 250e6, ""},
		{"250Mbps", 250e6, ""},
		{"2.5Gbit", 2.5e9, ""},
		{"64kbit", 64e3, ""},
		{"64kb/s", 64e3, ""},
		{"10k", 10e3, ""},
		{"1000bit", 1000, ""},
		{"64000", 64000, ""},
		{" 100 Mbit ", 100e6, ""},
		{"1e9", 1e9, ""},
		{"50MB/s", 400e6, ""}, // upper-case B is bytes
		{"50MBps", 400e6, ""},
		{"6.25MB/s", 50e6, ""},
		{"1MiB/s", 8 << 20, ""},
		{"125000B/s", 1e6, ""},
		{"10 bytes/s", 80, ""},
		{"50MB", 0, `"50MB" is a size in bytes, not a rate: write 400Mbit (bits per second) or 50MB/s (bytes per second)`},
		{"6.25MB", 0, "write 50Mbit"},
		{"1MiB", 0, "is a size in bytes"},
		{"1Mibit", 0, "expected a rate"}, // binary prefixes are for bytes
		{"", 0, "expected a rate"},
		{"fast", 0, "expected a rate"},
		{"bps", 0, "expected a rate"},
		{"inf", 0, "expected a rate"},
		{"NaN", 0, "expected a rate"},
		{"-1Mbit", 0, "expected a rate"},
		{"0", 0, "expected a rate"},
		{"0Mbit", 0, "expected a rate"},
		{"2000Gbit", 0, "1 Tbit/s"},
		{"1Tbit", 0, "expected a rate"},
		{"unlimited", 0, "expected a rate"},
	}
	for _, tc := range tests {
		got, err := ParseRate(tc.in)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("ParseRate(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ParseRate(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1500", 1500, true},
		{"64KB", 64000, true},
		{"64kb", 64000, true},
		{"2MB", 2e6, true},
		{"512k", 512000, true},
		{"1K", 1000, true},
		{"1MiB", 1 << 20, true},
		{"4 GiB", 4 << 30, true},
		{"1500b", 1500, true},
		{"100 bytes", 100, true},
		{"0", 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"2TB", 0, false},
		{"64Kbit", 0, false},
		{"lots", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 experiments"}, {1, "1 experiment"}, {2, "2 experiments"}, {1000, "1000 experiments"}} {
		if got := Count(tc.n, "experiment"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
