package reports

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		s := newSpread(tc.in)
		if s.Median != tc.med || s.Min != tc.lo || s.Max != tc.hi || len(s.Values) != len(tc.in) {
			t.Errorf("newSpread(%v) = %+v", tc.in, s)
		}
	}
	if newSpread(nil) != nil {
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
			Repetitions int `json:"repetitions"`
			TCP         struct {
				Median, Min, Max float64
				Values           []float64
			} `json:"tcp_over_homa_p99"`
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
// label) are two rows, not two repetitions of one.
func TestHeadlinesKeepLabelsApart(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	exp := func(tr, label string, p99 float64) Experiment {
		return Experiment{Transport: tr, Label: label, Params: map[string]any{}, Short: Short{P50us: f(p99 / 10), P99us: f(p99)}}
	}
	heads, ratios := headlines([]Experiment{exp("homa", "", 100), exp("homa", "ic", 50), exp("tcp", "", 1000)})
	if len(heads) != 3 || heads[1].Transport != "homa-ic" || heads[1].Repetitions != 1 {
		t.Fatalf("headline rows %+v", heads)
	}
	if len(ratios) != 1 || ratios[0].TCPOverHomaP99.Median != 10 || ratios[0].OverHomaP99["homa-ic"].Median != 0.5 {
		t.Errorf("ratios %+v", ratios)
	}
}
