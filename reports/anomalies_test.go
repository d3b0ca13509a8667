package reports

import (
	"strings"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

func TestAnomalies(t *testing.T) {
	homa := func(resends uint64, drops int64, delays ...float64) *stats.Experiment {
		return &stats.Experiment{Name: "x", Homa: &stats.TransportStats{Counters: map[string]uint64{"homa_resends_sent": resends}},
			Switch: stats.SwitchStats{Present: true, Drops: drops, MaxDelayUs: delays}}
	}
	// collective: a ring whose CCT P50 is cct µs against an ideal of
	// 5,870 µs, beside drops and retries.
	collective := func(transport string, cct float64, drops, retries int64) *stats.Experiment {
		ideal := 5870.0
		return &stats.Experiment{Name: "x", Transport: transport, Homa: &stats.TransportStats{Retries: retries},
			Switch:      stats.SwitchStats{Present: true, Drops: drops},
			Collectives: []stats.CollectiveStats{{Phase: "ar", CCT: stats.CCTStats{P50: &cct}, IdealCCT: &ideal}}}
	}
	// matrix: a connection matrix whose slowest flow took slowest times
	// its ideal, beside drops and retries.
	matrix := func(slowest float64, drops, retries int64) *stats.Experiment {
		m := stats.MatrixStats{Phase: "inc"}
		m.Slowdown.Max = &slowest
		return &stats.Experiment{Name: "x", Transport: "homa", Homa: &stats.TransportStats{Retries: retries},
			Switch: stats.SwitchStats{Present: true, Drops: drops}, Flows: []stats.MatrixStats{m}}
	}
	tests := []struct {
		name string
		e    *stats.Experiment
		want []string // a substring of each note, in order
	}{
		{"quiet", homa(0, 0, 100, 50), nil},
		{"resends without drops", homa(12, 0, 100, 50), []string{"12 resend requests"}},
		{"resends explained by drops", homa(12, 3, 100, 50), nil},
		{"starved low queue", homa(0, 0, 380_000, 16_000, 0, 7_000), []string{"queue 0 held a packet for up to 380 ms"}},
		{"slow but nothing above it", homa(0, 0, 0, 0, 380_000), nil},
		{"slow but not starved", homa(0, 0, 380_000, 200_000), nil},
		{"collective behind its losses", collective("homa", 32_500, 374, 125), []string{"collective ar took 5.5x its ideal while the switches dropped 374 packets (125 retries"}},
		{"collective slow without losses", collective("homa", 32_500, 0, 0), nil},
		{"collective near its ideal", collective("homa", 11_300, 374, 125), nil},
		{"another transport's recovery", collective("uet", 32_500, 374, 125), nil},
		{"flows behind their losses", matrix(534.2, 428, 60), []string{"the slowest flow of inc took 534.2x its ideal while the switches dropped 428 packets (60 retries"}},
		{"flows slow without losses", matrix(534.2, 0, 0), nil},
		{"flows near their ideal", matrix(1.2, 428, 60), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := stats.Anomalies(tc.e)
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

func TestShareAxes(t *testing.T) {
	specs := []chartSpec{
		{id: "homa-queue", shareX: true, shareY: true, series: []series{{pts: []stats.Point{{X: 0.5, Y: 30}, {X: 18, Y: 5}}}},
			bands: []stats.Band{{X0: 0, X1: 2, Label: "warm-up"}, {X0: 2, X1: 17, Label: "measurement"}}},
		{id: "tcp-queue", shareX: true, shareY: true, series: []series{{pts: []stats.Point{{X: 1, Y: 256}, {X: 19, Y: 40}}}}},
		{id: "util", shareX: true, series: []series{{pts: []stats.Point{{X: 0.2, Y: 1.05}}}}},
		{id: "rtt", series: []series{{pts: []stats.Point{{X: 100, Y: 5000}}}}},
	}
	shareAxes(specs)
	for _, sp := range specs[:3] {
		if sp.xMin == nil || sp.xMax == nil || *sp.xMin != 0 || *sp.xMax != 19 {
			t.Errorf("%s: time axis %v–%v, want 0–19", sp.id, sp.xMin, sp.xMax)
		}
	}
	for _, sp := range specs[:2] {
		if sp.yMax == nil || *sp.yMax != 256 {
			t.Errorf("%s: depth axis up to %v, want 256", sp.id, sp.yMax)
		}
	}
	if specs[2].yMax != nil || specs[3].xMin != nil || specs[3].yMax != nil {
		t.Error("a chart that does not share an axis got one")
	}
}
