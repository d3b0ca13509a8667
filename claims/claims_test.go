package claims

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	c := &Claim{Points: []Point{near("a", 10, 0.1), band("b", 1, 2, 0)}, ordering: func(m []float64) bool { return m[0] > m[1] }}
	tests := []struct {
		name   string
		values [][]float64
		want   Verdict
	}{
		{"both within", [][]float64{{10.5, 1.5}}, Reproduced},
		{"median of three within", [][]float64{{9.5, 1.5}, {30, 1.5}, {10, 1.0}}, Reproduced},
		{"a missed, ordering holds", [][]float64{{5, 1.5}}, OrderingHolds},
		{"a missed, ordering fails", [][]float64{{1.2, 1.5}}, NotReproduced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Row
			judge(c, &r, tt.values)
			if r.Verdict != tt.want {
				t.Errorf("verdict %q (%s), want %q", r.Verdict, r.Note, tt.want)
			}
			if tt.want != Reproduced && r.Note == "" {
				t.Error("a missed point left no note")
			}
		})
	}
}

// TestDeparture: a point above its published bound but within the band a
// named departure allows passes, and the note names it with the departure.
func TestDeparture(t *testing.T) {
	c := &Claim{Points: []Point{bound("W1", 2.2, 2.4), bound("W2", 2.2, 2.4)}, Departure: "longer headers"}
	var r Row
	judge(c, &r, [][]float64{{2.3, 2.1}})
	if r.Verdict != Reproduced || !strings.Contains(r.Note, "W1 2.3 above the published 2.2, within the named departure: longer headers") || strings.Contains(r.Note, "W2") {
		t.Errorf("verdict %q, note %q", r.Verdict, r.Note)
	}
	r = Row{}
	judge(c, &r, [][]float64{{2.5, 2.1}})
	if r.Verdict != NotReproduced {
		t.Errorf("2.5 beyond the departure's 2.4: verdict %q", r.Verdict)
	}
}

func TestSpread(t *testing.T) {
	if m, lo, hi := spread([]float64{3, 1, 2}); m != 2 || lo != 1 || hi != 3 {
		t.Errorf("spread = %g, %g, %g; want 2, 1, 3", m, lo, hi)
	}
	if m, _, _ := spread([]float64{1, math.NaN()}); !math.IsNaN(m) {
		t.Errorf("a value that could not be measured gave median %g", m)
	}
}

// TestRegistry checks every claim of the table has a row: an id once,
// a source, and either a way to measure it or the reason it is not; and
// that each claim's scenario file names the claim ids it answers.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Registry() {
		if seen[c.ID] {
			t.Errorf("%s: twice", c.ID)
		}
		seen[c.ID] = true
		if c.Text == "" || c.Published == "" || c.Source == "" {
			t.Errorf("%s: claim, published value and source are all needed", c.ID)
		}
		measured := c.queue != nil || c.twin != nil
		if measured == (c.Pending != "") {
			t.Errorf("%s: want either a measurement or the reason there is none", c.ID)
		}
		if measured && len(c.Points) == 0 {
			t.Errorf("%s: measured but no points", c.ID)
		}
		if c.twin != nil {
			b, err := os.ReadFile(filepath.Join("..", c.Scenario))
			if err != nil {
				t.Errorf("%s: %v", c.ID, err)
			} else if !strings.Contains(string(b), c.ID) {
				t.Errorf("%s: %s does not name it", c.ID, c.Scenario)
			}
		}
	}
	// The claims table's ids (reference claims.md).
	for _, id := range strings.Fields("A1 A2 A3 A4 A5 A6 A7 A8 A9 B1 B2 B3 B4 B5 B6 B7 B8 B9 B10 C1 C2 C3 C4 D1 D2 D3 E1 E2 E3 E4 F1 F2") {
		if !seen[id] {
			t.Errorf("%s: no row", id)
		}
	}
}

func TestSelect(t *testing.T) {
	all, err := Select([]string{"all"})
	if err != nil || len(all) != len(Registry()) {
		t.Errorf("Select(all) = %d claims, %v", len(all), err)
	}
	got, err := Select([]string{"d1", "A2"})
	if err != nil || len(got) != 2 || got[0].ID != "A2" || got[1].ID != "D1" {
		t.Errorf("Select(d1, A2) = %v, %v; want A2, D1 in the registry's order", got, err)
	}
	if _, err := Select([]string{"A99"}); err == nil {
		t.Error("Select(A99) gave no error")
	}
}

func TestOverrideTop(t *testing.T) {
	got, err := overrideTop([]byte("name: x\nwarmup: 2ms\nsweep: [1]\n"), []byte("warmup: 300us\nextra: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "name: x\nwarmup: 300us\nsweep: [1]\nextra: true\n"
	if string(got) != want {
		t.Errorf("overrideTop =\n%s\nwant\n%s", got, want)
	}
	if _, err := overrideTop([]byte("- a\n"), []byte("b: 1\n")); err == nil {
		t.Error("a list at the top gave no error")
	}
}

// TestQueueClaimsQuick measures two queue-model claims on a tenth of the
// article's messages: D1 reads the workloads exactly, and D3's mean
// slowdown under fair sharing lands near 5.
func TestQueueClaimsQuick(t *testing.T) {
	rows, err := Reproduce(t.Context(), Options{IDs: []string{"D1", "D3"}, Quick: true, Messages: 40_000, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Verdict == NotYetMeasured || len(r.Points) == 0 {
			t.Errorf("%s: %s (%s)", r.ID, r.Verdict, r.Note)
		}
	}
	if v := rows[0].Points[1].Median; math.Abs(v-0.005) > 0.0005 {
		t.Errorf("D1: W4's messages <= 1000 B carry %g of the bytes, want 0.005", v)
	}
	if v := rows[1].Points[0].Median; v < 3.5 || v > 6.5 {
		t.Errorf("D3: mean slowdown %g, want about 5", v)
	}
}

func TestChart(t *testing.T) {
	v := 21.0
	r := &Row{Points: []PointResult{{Label: "x", Published: &v, Lo: 18.9, Hi: 23.1, Median: 20, Min: 19, Max: 21, Pass: true}}}
	s := chart(r)
	if !strings.HasPrefix(s, "<svg") || !strings.Contains(s, "circle") {
		t.Errorf("chart = %q", s)
	}
	if chart(&Row{}) != "" {
		t.Error("a row without points drew a chart")
	}
}

// TestPointJSON: claims.json holds points whose values are not finite
// (a ratio over a transport that sustained no load, a band open above).
func TestPointJSON(t *testing.T) {
	pub := 2.0
	in := PointResult{Label: "x", Published: &pub, Lo: 1, Hi: math.Inf(1), Values: []float64{math.Inf(1), math.NaN()}, Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out PointResult
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !math.IsInf(out.Hi, 1) || !math.IsInf(out.Values[0], 1) || !math.IsNaN(out.Values[1]) || !math.IsNaN(out.Median) || *out.Published != 2 || out.Lo != 1 {
		t.Errorf("round trip of %s gave %+v", b, out)
	}
}

// TestArticleSplitLevels measures A7 and A8 with ArticleSplit on half
// of the article's messages: every point inside its band. The split
// today's came from (log-spaced between W4's smallest and largest
// message) misses A7's 2 levels (about 1.1 against 2.0) and A8's 4 levels
// (about 11 against 8.2), so a regression of the split fails here.
func TestArticleSplitLevels(t *testing.T) {
	rows, err := Reproduce(t.Context(), Options{IDs: []string{"A7", "A8"}, Messages: 200_000, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for _, p := range r.Points {
			t.Logf("%s %s: %.3g (seeds %.3g)", r.ID, p.Label, p.Median, p.Values)
			if !p.Pass {
				t.Errorf("%s %s: %g (seeds %v) outside [%g, %g]", r.ID, p.Label, p.Median, p.Values, p.Lo, p.Hi)
			}
		}
	}
}

// TestSplitCandidates: every candidate is a distinct, valid policy, and
// ArticleSplit is one of them.
func TestSplitCandidates(t *testing.T) {
	seen := map[string]bool{}
	found := false
	for _, c := range SplitCandidates() {
		name := withLevels(c.Policy, 8).String()
		if seen[name] {
			t.Errorf("two candidates are %s", name)
		}
		seen[name] = true
		found = found || name == withLevels(ArticleSplit, 8).String()
	}
	if !found {
		t.Errorf("ArticleSplit %s is not among the candidates", withLevels(ArticleSplit, 8))
	}
}

// TestQueueSeeds: --queue-seeds N measures the queue model's claims with
// seeds 1 to N, each seed's value kept, and says so in the row's command.
func TestQueueSeeds(t *testing.T) {
	rows, err := Reproduce(t.Context(), Options{IDs: []string{"A2", "D3"}, QueueSeeds: 5, Messages: 20_000, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if len(r.Seeds) != 5 || r.Seeds[4] != 5 || len(r.Points[0].Values) != 5 {
			t.Errorf("%s: seeds %v, values %v; want seeds 1-5 and a value each", r.ID, r.Seeds, r.Points[0].Values)
		}
		if !strings.HasSuffix(r.Command, " --queue-seeds 5") {
			t.Errorf("%s: command %q does not name the seeds", r.ID, r.Command)
		}
		// Different seeds draw different messages.
		if v := r.Points[0].Values; slices.Min(v) == slices.Max(v) && r.ID == "A2" {
			t.Errorf("%s: every seed gave %g", r.ID, v[0])
		}
	}
}
