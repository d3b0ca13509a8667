package fabric

import (
	"testing"
	"time"
)

func TestConversions(t *testing.T) {
	tests := []struct {
		name    string
		rateBps uint64
		mtu     int
		mbit    float64
		fps     int
		wire    time.Duration // of 1250 bytes
	}{
		{"100Mbit", 100e6, 1500, 100, 8127, 100 * time.Microsecond},
		{"1Gbit", 1e9, 1500, 1000, 81274, 10 * time.Microsecond},
		{"1Gbit jumbo", 1e9, 9000, 1000, 13830, 10 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(tt.rateBps, tt.mtu, 64)
			if got := f.Mbit(); got != tt.mbit {
				t.Errorf("Mbit = %v, want %v", got, tt.mbit)
			}
			if got := f.FramesPerSecond(); got != tt.fps {
				t.Errorf("FramesPerSecond = %d, want %d", got, tt.fps)
			}
			if got := f.WireTime(1250); got != tt.wire {
				t.Errorf("WireTime(1250) = %v, want %v", got, tt.wire)
			}
		})
	}
}
