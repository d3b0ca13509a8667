package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

// TestVersus: every configuration beside the baseline in its group of
// params gets one comparison, keyed by its label; groups without the
// baseline get none.
func TestVersus(t *testing.T) {
	exp := func(name, tr, config string, load float64, p50, p99 float64) stats.Experiment {
		return stats.Experiment{Name: name, Transport: tr, Config: config, Params: map[string]any{"load": load}, Short: stats.Short{P50us: stats.Ptr(p50), P99us: stats.Ptr(p99)}}
	}
	s := &stats.Summary{Baseline: "homa", Experiments: []stats.Experiment{
		exp("a-homa", "homa", "homa", 0.5, 10, 100),
		exp("a-tcp", "tcp", "tcp-cubic", 0.5, 50, 1300),
		exp("a-dctcp", "tcp", "tcp-dctcp", 0.5, 20, 400),
		exp("a-pfabric", "pfabric", "pfabric", 0.5, 10, 50),
		exp("b-homa", "homa", "homa", 0.8, 20, 200),
		exp("c-tcp", "tcp", "tcp-cubic", 0.9, 20, 200),
	}}
	vs := s.Versus()
	want := []struct {
		config   string
		p50, p99 float64
	}{{"tcp-cubic", 5, 13}, {"tcp-dctcp", 2, 4}, {"pfabric", 1, 0.5}}
	if len(vs) != len(want) {
		t.Fatalf("got %d comparisons, want %d (load 0.8 has only Homa, 0.9 no Homa): %+v", len(vs), len(want), vs)
	}
	for i, w := range want {
		v := vs[i]
		if v.Baseline != "homa" || v.Config != w.config || v.Base.Experiment != "a-homa" || v.Params != "load=0.5" {
			t.Errorf("comparison %d: %s (%s) against %s (%s) in %q", i, v.Config, v.Other.Experiment, v.Baseline, v.Base.Experiment, v.Params)
		}
		if v.RatioP50 == nil || *v.RatioP50 != w.p50 || v.RatioP99 == nil || *v.RatioP99 != w.p99 {
			t.Errorf("%s: ratios P50 %v P99 %v, want %g and %g", w.config, v.RatioP50, v.RatioP99, w.p50, w.p99)
		}
	}
}

// TestComparisonsByConfiguration builds a run of Homa, TCP cubic, DCTCP
// and pFabric: summary.json's ratios have one entry per label against the
// baseline (Homa, or the manifest's), and the report names every label.
func TestComparisonsByConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name, baseline, want string
		others               []string
	}{
		{"homa", "", "homa", []string{"tcp-cubic", "tcp-dctcp", "pfabric"}},
		{"chosen", "tcp-cubic", "tcp-cubic", []string{"homa", "tcp-dctcp", "pfabric"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{}
			dir := t.TempDir()
			synthRun{seed: 3, lengths: []int64{100}, noTel: true, baseline: tc.baseline, exps: []synthExp{
				{name: "x-homa", transport: "homa", config: "homa", n: 2000, meanNs: 20_000, params: params},
				{name: "x-tcp", transport: "tcp", config: "tcp-cubic", n: 2000, meanNs: 400_000, params: params},
				{name: "x-tcp-dctcp", transport: "tcp", label: "dctcp", config: "tcp-dctcp", n: 2000, meanNs: 100_000, params: params},
				{name: "x-pfabric", transport: "pfabric", config: "pfabric", n: 2000, meanNs: 15_000, params: params},
			}}.write(t, dir)
			sum, err := Build(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var js struct {
				Baseline string `json:"baseline"`
				Ratios   []struct {
					Config   string `json:"config"`
					Baseline string `json:"baseline"`
				} `json:"ratios"`
			}
			if err := json.Unmarshal(raw, &js); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range js.Ratios {
				if r.Baseline != tc.want {
					t.Errorf("ratio of %s against %s, want against %s", r.Config, r.Baseline, tc.want)
				}
				got = append(got, r.Config)
			}
			if js.Baseline != tc.want || strings.Join(got, ",") != strings.Join(tc.others, ",") {
				t.Errorf("baseline %q, ratios for %v; want %q and %v", js.Baseline, got, tc.want, tc.others)
			}
			vs := sum.Versus()
			if len(vs) != len(tc.others) {
				t.Fatalf("%d comparisons, want one per other configuration (%d)", len(vs), len(tc.others))
			}
			html, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.others {
				if !strings.Contains(string(html), `<td class="l">`+c+`</td>`) {
					t.Errorf("report.html has no headline row for %s", c)
				}
			}
		})
	}
}

// TestComparisonsOverOneTransportsSweep: a sweep of Homa's own parameter
// runs TCP once per value of the shared params; TCP is then compared with
// every Homa variant, and the ratio rows find both headline rows.
func TestComparisonsOverOneTransportsSweep(t *testing.T) {
	const oc = "transports.homa.homa.overcommit"
	exp := func(name, tr, config string, p map[string]any, p99 float64) stats.Experiment {
		return stats.Experiment{Name: name, Transport: tr, Config: config, Params: p, Short: stats.Short{P50us: stats.Ptr(p99 / 10), P99us: stats.Ptr(p99)}}
	}
	var exps []stats.Experiment
	for _, rep := range []string{"1", "2"} {
		exps = append(exps,
			exp("homa-oc1-r"+rep, "homa", "homa", map[string]any{oc: "1", "load": "0.5", "repetition": rep}, 100),
			exp("tcp-r"+rep, "tcp", "tcp-cubic", map[string]any{"load": "0.5", "repetition": rep}, 1000),
			exp("homa-oc2-r"+rep, "homa", "homa", map[string]any{oc: "2", "load": "0.5", "repetition": rep}, 50))
	}
	s := &stats.Summary{Baseline: "homa", Experiments: exps}
	var got []string
	for _, v := range s.Versus() {
		got = append(got, fmt.Sprintf("%s %s/%s %g", v.Params, v.Config, v.Baseline, *v.RatioP99))
	}
	want := []string{
		"load=0.5, repetition=1, " + oc + "=1 tcp-cubic/homa 10",
		"load=0.5, repetition=1, " + oc + "=2 tcp-cubic/homa 20",
		"load=0.5, repetition=2, " + oc + "=1 tcp-cubic/homa 10",
		"load=0.5, repetition=2, " + oc + "=2 tcp-cubic/homa 20",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("comparisons\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	heads, ratios := stats.Headlines(exps, "homa")
	if len(heads) != 3 || len(ratios) != 2 {
		t.Fatalf("%d headline rows, %d ratio rows; want 3 and 2", len(heads), len(ratios))
	}
	for i, r := range ratios {
		base, other := r.Rows(heads)
		if base == nil || other == nil || other.Config != "tcp-cubic" || base.Params[oc] != r.Params[oc] || r.Repetitions != 2 {
			t.Errorf("ratio row %d %+v: rows %+v and %+v", i, r, base, other)
		}
	}
}
