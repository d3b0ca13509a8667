package reports

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

func TestNewSpread(t *testing.T) {
	tests := []struct {
		in          []float64
		med, lo, hi float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 3, 10}, 3.5, 1, 10},
	}
	for _, tc := range tests {
		s := stats.NewSpread(tc.in)
		if s.Median != tc.med || s.Min != tc.lo || s.Max != tc.hi || len(s.Values) != len(tc.in) {
			t.Errorf("newSpread(%v) = %+v", tc.in, s)
		}
	}
	if stats.NewSpread(nil) != nil {
		t.Error("no values should give no spread")
	}
}

// TestRepetitionsHeadline runs three repetitions of Homa and TCP whose
// queueing delays differ by repetition and checks summary.json's headline
// and ratios against each repetition's own short-message P99.
func TestRepetitionsHeadline(t *testing.T) {
	var exps []synthExp
	for rep, mean := range []float64{20_000, 60_000, 40_000} {
		r := string(rune('1' + rep))
		exps = append(exps,
			synthExp{name: "x-homa-" + r, transport: "homa", n: 4000, meanNs: mean, params: map[string]any{"load": "0.5", "repetition": r}},
			synthExp{name: "x-tcp-" + r, transport: "tcp", n: 4000, meanNs: 10 * mean * float64(rep+1), params: map[string]any{"load": "0.5", "repetition": r}})
	}
	dir := t.TempDir()
	synthRun{seed: 11, lengths: []int64{100}, noTel: true, exps: exps}.write(t, dir)
	sum, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	p99 := map[string]float64{}
	for _, e := range sum.Experiments {
		p99[e.Name] = *e.Short.P99us
	}
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Headline []struct {
			Transport   string         `json:"transport"`
			Params      map[string]any `json:"params"`
			Repetitions int            `json:"repetitions"`
			P99         struct {
				Median, Min, Max float64
				Values           []float64
			} `json:"short_p99_us"`
		} `json:"headline"`
		Ratios []struct {
			Config      string `json:"config"`
			Baseline    string `json:"baseline"`
			Repetitions int    `json:"repetitions"`
			TCP         struct {
				Median, Min, Max float64
				Values           []float64
			} `json:"p99_over_baseline"`
		} `json:"ratios"`
	}
	if err := json.Unmarshal(raw, &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Headline) != 2 || len(js.Ratios) != 1 {
		t.Fatalf("headline %d rows, ratios %d rows; want 2 and 1:\n%s", len(js.Headline), len(js.Ratios), raw)
	}
	for _, h := range js.Headline {
		if h.Repetitions != 3 || len(h.P99.Values) != 3 || h.Params["load"] != "0.5" || h.Params["repetition"] != nil {
			t.Errorf("%s: %+v", h.Transport, h)
		}
		want := []float64{p99["x-"+h.Transport+"-1"], p99["x-"+h.Transport+"-2"], p99["x-"+h.Transport+"-3"]}
		for i := range want {
			if math.Abs(h.P99.Values[i]-want[i]) > 1e-9*want[i] { // summary.json keeps 10 digits
				t.Errorf("%s repetition %d: P99 %g, the experiment's %g", h.Transport, i+1, h.P99.Values[i], want[i])
			}
		}
		if h.P99.Min > h.P99.Median || h.P99.Median > h.P99.Max {
			t.Errorf("%s: median %g outside [%g, %g]", h.Transport, h.P99.Median, h.P99.Min, h.P99.Max)
		}
	}
	r := js.Ratios[0]
	if r.Config != "tcp" || r.Baseline != "homa" || r.Repetitions != 3 {
		t.Errorf("ratio row %s over %s, %d repetitions; want tcp over homa, 3", r.Config, r.Baseline, r.Repetitions)
	}
	for i := range 3 {
		rep := string(rune('1' + i))
		if want := p99["x-tcp-"+rep] / p99["x-homa-"+rep]; math.Abs(r.TCP.Values[i]-want) > 1e-9*want {
			t.Errorf("repetition %s: ratio %g, want %g", rep, r.TCP.Values[i], want)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `id="repetitions"`) {
		t.Error("report.html has no table over repetitions")
	}
}

// TestHeadlinesKeepLabelsApart: two configurations of one transport (a
// label) are two rows, not two repetitions of one, and each has its own
// ratio row, keyed by its label.
func TestHeadlinesKeepLabelsApart(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	exp := func(tr, label, config string, p99 float64) stats.Experiment {
		return stats.Experiment{Transport: tr, Label: label, Config: config, Params: map[string]any{}, Short: stats.Short{P50us: f(p99 / 10), P99us: f(p99)}}
	}
	exps := []stats.Experiment{exp("homa", "", "", 100), exp("homa", "ic", "", 50), exp("tcp", "", "tcp-cubic", 1000),
		exp("tcp", "dctcp", "tcp-dctcp", 400), exp("pfabric", "", "pfabric", 80)}
	for _, tc := range []struct {
		name, want, baseline string
		ratios               map[string]float64
	}{
		{"homa by default", "", "homa", map[string]float64{"homa-ic": 0.5, "tcp-cubic": 10, "tcp-dctcp": 4, "pfabric": 0.8}},
		{"chosen", "tcp-cubic", "tcp-cubic", map[string]float64{"homa": 0.1, "homa-ic": 0.05, "tcp-dctcp": 0.4, "pfabric": 0.08}},
		{"chosen but absent", "ndp", "homa", map[string]float64{"homa-ic": 0.5, "tcp-cubic": 10, "tcp-dctcp": 4, "pfabric": 0.8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := stats.ChooseBaseline(exps, tc.want)
			if base != tc.baseline {
				t.Fatalf("baseline %q, want %q", base, tc.baseline)
			}
			heads, ratios := stats.Headlines(exps, base)
			if len(heads) != 5 || heads[1].Config != "homa-ic" || heads[1].Repetitions != 1 || heads[3].Config != "tcp-dctcp" {
				t.Fatalf("headline rows %+v", heads)
			}
			got := map[string]float64{}
			for _, r := range ratios {
				if r.Baseline != base {
					t.Errorf("ratio row for %s against %s, want against %s", r.Config, r.Baseline, base)
				}
				got[r.Config] = r.P99.Median
			}
			if len(ratios) != len(tc.ratios) || !maps.EqualFunc(got, tc.ratios, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
				t.Errorf("ratios %v, want %v", got, tc.ratios)
			}
		})
	}
}
