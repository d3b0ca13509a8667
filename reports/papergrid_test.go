package reports

import (
	"regexp"
	"strings"
	"testing"
)

// TestPaperGrid: a sweep over a phase's sizes lays the slowdown charts out
// as the Homa paper's grid (a P99 and a P50 panel per workload, every
// configuration in each) with the shortest half's P99 slowdown per workload
// and configuration, the median over repetitions; a run whose sweep does
// not vary sizes has no such section.
func TestPaperGrid(t *testing.T) {
	const param = "phases.all2all.sizes"
	var exps []synthExp
	for _, w := range []string{"w2", "w4"} {
		for _, rep := range []string{"1", "2", "3"} {
			p := map[string]any{param: w, "repetition": rep}
			exps = append(exps,
				synthExp{name: "p-" + w + "-homa-" + rep, transport: "homa", n: 3000, meanNs: 5_000, params: p},
				synthExp{name: "p-" + w + "-pfabric-" + rep, transport: "pfabric", n: 3000, meanNs: 80_000, params: p})
		}
	}
	sum, html := synthRun{seed: 5, lengths: []int64{100, 1000, 10000, 100000}, exps: exps}.build(t)
	if !strings.Contains(html, `id="paper"`) {
		t.Fatal("no paper grid in a run that sweeps phases.all2all.sizes")
	}
	for _, id := range []string{"paper-p99-0", "paper-p99-1", "paper-p50-0", "paper-p50-1"} {
		if !regexp.MustCompile(`<figure class="chart" id="` + id + `"`).MatchString(html) {
			t.Errorf("panel %s missing", id)
		}
	}
	g, err := buildPaperGrid(sum)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Rows) != 2 || len(g.Configs) != 2 || g.Configs[0] != "homa" {
		t.Fatalf("rows %d configs %v, want 2 rows, homa first of 2", len(g.Rows), g.Configs)
	}
	for _, r := range g.Rows {
		homa, pf := r.Cells[0], r.Cells[1]
		if homa == nil || pf == nil || len(homa.Values) != 3 || len(pf.Values) != 3 {
			t.Fatalf("%s: cells %+v %+v, want 3 repetitions each", r.Workload, homa, pf)
		}
		// The synthetic queueing delay is 16x longer for pfabric.
		if !(homa.Median < pf.Median) || homa.Median < 1 {
			t.Errorf("%s: shortest-half P99 slowdown homa %.2f, pfabric %.2f", r.Workload, homa.Median, pf.Median)
		}
	}

	_, plain := synthRun{seed: 5, lengths: []int64{100, 1000}, exps: []synthExp{
		{name: "a-homa", transport: "homa", n: 2000, meanNs: 5_000, params: map[string]any{"load": "0.5"}},
		{name: "b-homa", transport: "homa", n: 2000, meanNs: 5_000, params: map[string]any{"load": "0.8"}},
	}}.build(t)
	if strings.Contains(plain, `id="paper"`) {
		t.Error("a load sweep drew the workload grid")
	}
}
