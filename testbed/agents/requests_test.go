package agents

import (
	"testing"

	fabdesc "github.com/homatb/homatb/internal/fabric"
)

func TestUnschedBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate uint64
		rtt  float64
		mtu  int
		want uint32
	}{
		// 100 Mbit x 274 us = 3425 B, + 2 x 1500 = 6425 B -> 5 packets of 1420.
		{"100Mbit", 100e6, 274, 1500, 5 * 1420},
		// 1 Gbit x 30 us = 3750 B, + 3000 = 6750 B -> 5 packets.
		{"1Gbit", 1e9, 30, 1500, 5 * 1420},
		// A zero RTT still leaves the two packet times: 3 packets (3000/1420).
		{"zero rtt", 100e6, 0, 1500, 3 * 1420},
		// Jumbo frames: 10 Gbit x 20 us = 25000 B + 18000 = 43000 -> 5 x 8920.
		{"jumbo", 10e9, 20, 9000, 5 * 8920},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnschedBytes(fabdesc.New(tc.rate, tc.mtu, 0), tc.rtt); got != tc.want {
				t.Errorf("UnschedBytes(%d, %v, %d) = %d, want %d", tc.rate, tc.rtt, tc.mtu, got, tc.want)
			}
		})
	}
}
