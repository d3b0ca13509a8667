package reports

import (
	"strings"
	"testing"
)

func TestAnomalies(t *testing.T) {
	homa := func(resends uint64, drops int64, delays ...float64) *Experiment {
		return &Experiment{Name: "x", Homa: &TransportStats{Counters: map[string]uint64{"homa_resends_sent": resends}},
			Switch: SwitchStats{Present: true, Drops: drops, MaxDelayUs: delays}}
	}
	tests := []struct {
		name string
		e    *Experiment
		want []string // a substring of each note, in order
	}{
		{"quiet", homa(0, 0, 100, 50), nil},
		{"resends without drops", homa(12, 0, 100, 50), []string{"12 resend requests"}},
		{"resends explained by drops", homa(12, 3, 100, 50), nil},
		{"starved low queue", homa(0, 0, 380_000, 16_000, 0, 7_000), []string{"queue 0 held a packet for up to 380 ms"}},
		{"slow but nothing above it", homa(0, 0, 0, 0, 380_000), nil},
		{"slow but not starved", homa(0, 0, 380_000, 200_000), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := anomalies(tc.e)
			if len(got) != len(tc.want) {
				t.Fatalf("notes %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("note %q lacks %q", got[i], w)
				}
			}
		})
	}
}
