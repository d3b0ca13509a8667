package main

import (
	"testing"

	"github.com/homatb/homatb/reports"
)

func TestVersusLine(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		v    reports.Versus
		want string
	}{
		{"both", reports.Versus{
			Homa: reports.Headline{ShortP50us: f(733), ShortP99us: f(9322)}, TCP: reports.Headline{ShortP50us: f(61525), ShortP99us: f(126800)},
			RatioP50: f(83.9), RatioP99: f(13.6)},
			"headline: short-message P99 Homa 9322 µs, TCP 126800 µs: 13.6x lower with Homa; P50 733 vs 61525 µs (83.9x)"},
		{"config named", reports.Versus{Config: "load=0.5",
			Homa: reports.Headline{ShortP99us: f(10)}, TCP: reports.Headline{ShortP99us: f(20)}, RatioP99: f(2)},
			"headline (load=0.5): short-message P99 Homa 10 µs, TCP 20 µs: 2.0x lower with Homa"},
		{"no TCP P99", reports.Versus{Homa: reports.Headline{ShortP99us: f(10)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versusLine(tc.v); got != tc.want {
				t.Errorf("versusLine = %q\nwant          %q", got, tc.want)
			}
		})
	}
}
