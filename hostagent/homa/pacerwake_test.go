package homa

import (
	"testing"
	"time"
)

// TestPacerWake checks how much backlog the pacer leaves queued when it
// wakes: the whole backlog when a wake-up sends one packet anyway, half of
// it when the backlog holds whole packets in pairs, and in between as much
// as leaves room for the packets the half rule would send.
func TestPacerWake(t *testing.T) {
	const us = time.Microsecond
	for _, tt := range []struct {
		name         string
		backlog, pkt time.Duration
		want         time.Duration
	}{
		// 25 Mbit/s, max_nic_backlog_us 500: one 498 µs packet fits.
		{"one packet", 500 * us, 498 * us, 500 * us},
		// The default, four full packets: a wake-up at half sends two.
		{"four packets", 4 * 480 * us, 480 * us, 2 * 480 * us},
		// Three packets: half is 1.5; waking with two left still sends two.
		{"three packets", 3 * 100 * us, 100 * us, 200 * us},
		// A backlog below one packet (10 µs at 1 Mbit/s).
		{"under a packet", 10 * us, 12 * time.Millisecond, 10 * us},
		{"no packet size", 100 * us, 0, 50 * us},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := pacerWake(tt.backlog, tt.pkt)
			if got != tt.want {
				t.Errorf("pacerWake(%v, %v) = %v, want %v", tt.backlog, tt.pkt, got, tt.want)
			}
			if got < tt.backlog/2 || got > tt.backlog {
				t.Errorf("pacerWake(%v, %v) = %v, outside half to all of the backlog", tt.backlog, tt.pkt, got)
			}
		})
	}
}
