package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMeter(t *testing.T) {
	for _, tc := range []struct {
		in, wantErr string
		queues      []uint8
		rate, burst int64
		drop        bool
	}{
		{in: "6+7:10Mbit:64KB", queues: []uint8{6, 7}, rate: 1_250_000, burst: 64_000},
		{in: "0:1Gbit:1500:drop", queues: []uint8{0}, rate: 125_000_000, burst: 1500, drop: true},
		{in: "8:1Mbit:1500", wantErr: "queue \"8\""},
		{in: "7:fast:1500", wantErr: "rate"},
		{in: "7:1Mbit", wantErr: "expected QUEUES:RATE:BURST[:drop]"},
		{in: "7:1Mbit:1500:police", wantErr: "expected QUEUES:RATE:BURST[:drop]"},
	} {
		m, err := parseMeter(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseMeter(%q) = %v, want an error containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(m.Queues, tc.queues) || m.RateBytes != tc.rate || m.BurstBytes != tc.burst || m.Drop != tc.drop {
			t.Errorf("parseMeter(%q) = %+v, %v", tc.in, m, err)
		}
	}
}
