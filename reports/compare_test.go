package reports

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

func TestCompare(t *testing.T) {
	lengths := []int64{100, 1000, 50000}
	runA := synthRun{seed: 1, lengths: lengths, noTel: true, exps: []synthExp{
		{name: "x-homa", transport: "homa", n: 3000, meanNs: 10_000, params: map[string]any{"load": "0.5"}},
		{name: "x-tcp", transport: "tcp", n: 3000, meanNs: 100_000, params: map[string]any{"load": "0.5"}},
		{name: "only-a", transport: "homa", n: 100, meanNs: 1000, params: map[string]any{"load": "0.9"}},
	}}
	// B: Homa renamed but same configuration (paired by params), TCP forty
	// times slower, and one experiment A lacks.
	runB := synthRun{seed: 2, lengths: lengths, noTel: true, exps: []synthExp{
		{name: "y-homa", transport: "homa", n: 3000, meanNs: 10_000, params: map[string]any{"load": "0.5"}},
		{name: "x-tcp", transport: "tcp", n: 3000, meanNs: 4_000_000, params: map[string]any{"load": "0.5"}},
		{name: "only-b", transport: "tcp", n: 100, meanNs: 1000, params: map[string]any{"load": "0.1"}},
	}}
	root := t.TempDir()
	da, db, out := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "cmp")
	for d, r := range map[string]synthRun{da: runA, db: runB} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		r.write(t, d)
	}
	if _, err := Compare(context.Background(), da, db, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cmp stats.Comparison
	if err := json.Unmarshal(b, &cmp); err != nil {
		t.Fatal(err)
	}
	if len(cmp.Pairs) != 2 || !slices.Equal(cmp.OnlyA, []string{"only-a"}) || !slices.Equal(cmp.OnlyB, []string{"only-b"}) {
		t.Fatalf("pairs %d, only A %v, only B %v", len(cmp.Pairs), cmp.OnlyA, cmp.OnlyB)
	}
	for _, p := range cmp.Pairs {
		switch p.Transport {
		case "tcp":
			// Queueing delay dominates TCP's short RTTs, so B is much slower.
			if p.RatioP50 == nil || *p.RatioP50 < 2 {
				t.Errorf("tcp B/A short P50 ratio %v, want well above 1", p.RatioP50)
			}
		case "homa":
			if p.A.Experiment != "x-homa" || p.B.Experiment != "y-homa" {
				t.Errorf("homa paired %s with %s", p.A.Experiment, p.B.Experiment)
			}
			if p.RatioP50 == nil || *p.RatioP50 < 0.8 || *p.RatioP50 > 1.25 {
				t.Errorf("homa B/A short P50 ratio %v, want about 1 (same distribution)", p.RatioP50)
			}
		}
	}
	html, err := os.ReadFile(filepath.Join(out, "compare.html"))
	if err != nil {
		t.Fatal(err)
	}
	// Latencies in the unit their magnitude reads best in: TCP's tails
	// here reach tens of ms.
	if !strings.Contains(string(html), " ms") {
		t.Error("compare.html prints no latency in ms")
	}
	for _, m := range regexp.MustCompile(`([0-9][0-9.]*) µs`).FindAllStringSubmatch(string(html), -1) {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil && v > 10_000 {
			t.Errorf("compare.html prints %q in µs", m[0])
		}
	}
	if n := strings.Count(string(html), `<figure class="chart"`); n != 3*2 {
		t.Errorf("compare.html has %d charts, want 6", n)
	}
	for _, d := range []string{da, db} {
		if _, err := os.Stat(filepath.Join(d, "summary.json")); err == nil {
			t.Errorf("Compare wrote into run directory %s", d)
		}
	}
}
