package units

import "testing"

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"100Mbit", 100e6, true},
		{"1Gbit", 1e9, true},
		{"1gbit", 1e9, true},
		{"1gbps", 1e9, true},
		{"1Gb", 1e9, true}, // b is bits, as scenarios always read it
		{"250mbit/s", 250e6, true},
		{"250Mbps", 250e6, true},
		{"2.5Gbit", 2.5e9, true},
		{"64kbit", 64e3, true},
		{"10k", 10e3, true},
		{"1000bit", 1000, true},
		{"64000", 64000, true},
		{" 100 Mbit ", 100e6, true},
		{"1e9", 1e9, true},
		{"", 0, false},
		{"fast", 0, false},
		{"bps", 0, false},
		{"-1Mbit", 0, false},
		{"0", 0, false},
		{"0Mbit", 0, false},
		{"1Tbit", 0, false},
		{"unlimited", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseRate(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
