package reports

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/reports/stats"
)

// TestSharedTransportsColoured: the transports of a shared experiment are
// parts of one group (its params), each drawn in its transport's colour
// and named in the legend as experiment/transport.
func TestSharedTransportsColoured(t *testing.T) {
	run := synthRun{seed: 3, exps: []synthExp{
		{name: "co-none", transport: "homa", n: 400, meanNs: 40_000, params: map[string]any{"host_qdisc": "none"}},
		{name: "co-none", transport: "tcp", n: 300, meanNs: 400_000, params: map[string]any{"host_qdisc": "none"}},
		{name: "co-pacer", transport: "homa", n: 400, meanNs: 10_000, params: map[string]any{"host_qdisc": "pacer"}},
		{name: "co-pacer", transport: "tcp", n: 300, meanNs: 300_000, params: map[string]any{"host_qdisc": "pacer"}},
	}}
	dir := t.TempDir()
	run.write(t, dir)
	a, err := stats.Analyse(context.Background(), dir, stats.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	pg, err := buildPage(a, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	homa, tcp := hexColor(transportColor("homa", 0)), hexColor(transportColor("tcp", 1))
	if homa == tcp {
		t.Fatalf("homa and tcp share colour %s", homa)
	}
	groups := map[string]bool{}
	for _, g := range pg.Groups {
		groups[g.Config] = true
		if len(g.Charts) == 0 || g.Charts[0].SVG == "" {
			t.Errorf("group %q: no chart", g.Config)
			continue
		}
		exp := "co-" + strings.TrimPrefix(g.Config, "host_qdisc=")
		svg := string(g.Charts[0].SVG)
		for _, want := range []string{homa, tcp, exp + "/homa", exp + "/tcp"} {
			if !strings.Contains(svg, want) {
				t.Errorf("group %q, chart %s: no %q", g.Config, g.Charts[0].ID, want)
			}
		}
	}
	if len(groups) != 2 || !groups["host_qdisc=none"] || !groups["host_qdisc=pacer"] {
		t.Errorf("groups %v, want host_qdisc=none and host_qdisc=pacer", groups)
	}
}
