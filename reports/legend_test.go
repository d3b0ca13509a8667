package reports

import (
	"context"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/anatomy"
	"github.com/homatb/homatb/reports/stats"
)

var (
	viewBoxRe = regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)
	textRe    = regexp.MustCompile(`<text([^>]*)>([^<]*)</text>`)
	rectRe    = regexp.MustCompile(`<rect([^>]*)/?>`)
	attrRe    = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
)

// outsideBox lists the labels and swatches of an SVG chart that reach
// outside its viewBox, with a text's extent estimated at charWidth a
// character (wider than most sans-serif characters, so the estimate errs
// towards failing).
func outsideBox(svg string) []string {
	m := viewBoxRe.FindStringSubmatch(svg)
	if m == nil {
		return []string{"no viewBox"}
	}
	w, _ := strconv.ParseFloat(m[1], 64)
	h, _ := strconv.ParseFloat(m[2], 64)
	attrs := func(s string) map[string]string {
		out := map[string]string{}
		for _, a := range attrRe.FindAllStringSubmatch(s, -1) {
			out[a[1]] = a[2]
		}
		return out
	}
	num := func(a map[string]string, k string) float64 {
		v, _ := strconv.ParseFloat(a[k], 64)
		return v
	}
	const slack = 0.5
	var out []string
	for _, t := range textRe.FindAllStringSubmatch(svg, -1) {
		a := attrs(t[1])
		text := html.UnescapeString(t[2])
		x, y := num(a, "x"), num(a, "y")
		if a["transform"] != "" {
			continue // rotated axis labels are placed by their own rule
		}
		ext := charWidth * float64(len([]rune(text)))
		lo, hi := x, x+ext
		switch a["text-anchor"] {
		case "middle":
			lo, hi = x-ext/2, x+ext/2
		case "end":
			lo, hi = x-ext, x
		}
		if lo < -slack || hi > w+slack || y < fontSize-slack || y > h+slack {
			out = append(out, "text "+strconv.Quote(text)+" at x "+strconv.FormatFloat(lo, 'f', 0, 64)+".."+strconv.FormatFloat(hi, 'f', 0, 64)+", y "+a["y"])
		}
	}
	for _, r := range rectRe.FindAllStringSubmatch(svg, -1) {
		a := attrs(r[1])
		x, y, rw, rh := num(a, "x"), num(a, "y"), num(a, "width"), num(a, "height")
		if x < -slack || x+rw > w+slack || y < -slack || y+rh > h+slack {
			out = append(out, "rect at "+a["x"]+","+a["y"]+" size "+a["width"]+"x"+a["height"])
		}
	}
	return out
}

// TestEveryChartInsideItsBox draws every chart the report can draw (the
// latency charts of each group, time series, the anatomy, the sweeps and
// their ratio chart) for runs with short and with long experiment names,
// and checks that no label or legend swatch leaves its chart's box.
func TestEveryChartInsideItsBox(t *testing.T) {
	long := demoRun()
	for i := range long.exps {
		long.exps[i].name = "a-much-longer-scenario-name-" + long.exps[i].name + "-with-a-label-and-more-r1"
	}
	for _, tc := range []struct {
		name string
		run  synthRun
	}{{"demo", demoRun()}, {"long names", long}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.run.write(t, dir)
			a, err := stats.Analyse(context.Background(), dir, stats.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			for i := range a.Sum.Experiments {
				parts := anatomy.Parts{RTT: 900, SendLag: 50, Host: 500, HostHOL: 100, Recovery: 20, Wire: 80, Queue: 150, Switch: 30, Unattributed: 70}
				a.Sum.Experiments[i].Anatomy = &anatomy.Summary{RPCs: 100, Joined: 100, Median: parts, Tail: parts, TailRPCs: 1}
			}
			pg, err := buildPage(a, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var charts []chart
			for _, g := range pg.Groups {
				charts = append(charts, g.Charts...)
			}
			charts = append(charts, pg.Sweeps...)
			kinds := map[string]bool{}
			for _, c := range charts {
				if c.SVG == "" {
					continue
				}
				kinds[strings.TrimRight(c.ID, "-0123456789")] = true
				if bad := outsideBox(string(c.SVG)); len(bad) > 0 {
					t.Errorf("chart %s (%s): %d elements outside the box, e.g. %s", c.ID, c.Title, len(bad), strings.Join(bad[:min(3, len(bad))], "; "))
				}
			}
			for _, k := range []string{"rtt", "ccdf", "slowdown-pct", "anatomy", "sweep-lat", "sweep-ratio"} {
				if !kinds[k] {
					t.Errorf("no %s chart drawn; drew %v", k, kinds)
				}
			}
		})
	}
}
