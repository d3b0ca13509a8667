package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/reports/stats"
	"golang.org/x/net/html"
)

// demoRun is a small but complete run: Homa and TCP at two loads (a sweep),
// with calibration, telemetry and switch statistics.
func demoRun() synthRun {
	lengths := []int64{64, 100, 300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000}
	return synthRun{seed: 11, lengths: lengths, telSamples: 400, exps: []synthExp{
		{name: "load50-homa", transport: "homa", n: 6000, meanNs: 15_000, params: map[string]any{"load": "0.5"}},
		{name: "load50-tcp", transport: "tcp", n: 6000, meanNs: 150_000, params: map[string]any{"load": "0.5"}},
		{name: "load80-homa", transport: "homa", n: 6000, meanNs: 30_000, params: map[string]any{"load": "0.8"}},
		{name: "load80-tcp", transport: "tcp", n: 6000, meanNs: 600_000, failed: 4, params: map[string]any{"load": "0.8"}},
	}}
}

// chromium finds Debian's headless browser.
func chromium() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH")
}

// runChromium runs headless Chromium with the network off. (JavaScript
// stays on because --dump-dom needs it; the build test checks the report
// holds no script.)
func runChromium(ctx context.Context, t *testing.T, bin string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0",
		// Any attempt to reach the network fails loudly instead of leaking.
		"--host-resolver-rules=MAP * ~NOTFOUND"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes(), errb.Bytes()
}

// pageErrors picks the lines of Chromium's log about the page itself:
// console messages and failed loads, not the browser's own start-up noise.
func pageErrors(log []byte) []string {
	var bad []string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Failed to load") ||
			strings.Contains(l, "ERR_NAME_NOT_RESOLVED") || strings.Contains(l, "net::ERR") {
			bad = append(bad, l)
		}
	}
	return bad
}

// figures returns each chart figure's data-points and how many series
// (lines or sets of markers) its SVG draws.
func figures(t *testing.T, dom []byte) map[string][2]int {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int{}
	var countPaths func(n *html.Node) int
	countPaths = func(n *html.Node) int {
		c := 0
		if n.Type == html.ElementNode && (n.Data == "polyline" || n.Data == "g") {
			for _, a := range n.Attr {
				if a.Key == "class" && (a.Val == "series" || a.Val == "markers") {
					c++
				}
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			c += countPaths(ch)
		}
		return c
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "figure" {
			var id string
			pts := 0
			for _, a := range n.Attr {
				switch a.Key {
				case "id":
					id = a.Val
				case "data-points":
					pts, _ = strconv.Atoi(a.Val)
				}
			}
			out[id] = [2]int{pts, countPaths(n)}
			return
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	return out
}

// TestReportRendersInChromium renders report.html in headless Chromium
// without JavaScript or network and checks every chart is there with data.
// HOMATB_SCREENSHOT=path keeps the screenshot (docs/report-screenshot-synthetic.png);
// HOMATB_DEMO_RUN=dir keeps the run directory and its report.
func TestReportRendersInChromium(t *testing.T) {
	bin, err := chromium()
	if err != nil {
		t.Skip("skipping: headless Chromium not installed (Debian package chromium):", err)
	}
	dir := t.TempDir()
	if keep := os.Getenv("HOMATB_DEMO_RUN"); keep != "" {
		if err := os.MkdirAll(keep, 0o755); err != nil {
			t.Fatal(err)
		}
		dir = keep
	}
	demoRun().write(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := Build(ctx, dir); err != nil {
		t.Fatal(err)
	}
	// The charts the report should hold, from the same analysis.
	a, err := stats.Analyse(ctx, dir, stats.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	pg, err := buildPage(a, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, g := range pg.Groups {
		for _, c := range g.Charts {
			want = append(want, c.ID)
		}
	}
	for _, c := range pg.Sweeps {
		want = append(want, c.ID)
	}
	// Per configuration: slowdown, RTT, CCDF, and per experiment queue
	// and utilisation charts; plus four sweep charts for the load
	// (latency, goodput, link utilisation, ratio). Counters by priority
	// are a shaded table, not a chart.
	if len(want) != 2*(3+2*2)+4 {
		t.Errorf("report plans %d charts: %v", len(want), want)
	}
	// Negative control: the log check must catch a page that does log.
	bad := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(bad, []byte(`<html><body><script>console.error("planted")</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, log := runChromium(ctx, t, bin, "--dump-dom", "file://"+bad); len(pageErrors(log)) == 0 {
		t.Fatal("the console check missed a planted console.error; Chromium's logging changed")
	}
	page := "file://" + filepath.Join(dir, "report.html")
	dom, log := runChromium(ctx, t, bin, "--dump-dom", page)
	if bad := pageErrors(log); len(bad) > 0 {
		t.Errorf("page errors in Chromium's log:\n%s", strings.Join(bad, "\n"))
	}
	figs := figures(t, dom)
	for _, id := range want {
		f, ok := figs[id]
		switch {
		case !ok:
			t.Errorf("chart %s missing from the rendered page", id)
		case f[0] <= 0 || f[1] < 1:
			t.Errorf("chart %s holds no data: %d points, %d drawn paths", id, f[0], f[1])
		}
	}
	if len(figs) != len(want) {
		t.Errorf("rendered page has %d charts, want %d", len(figs), len(want))
	}
	// The comparison page renders the same way: every overlaid chart holds
	// data from both runs.
	other := demoRun()
	other.seed = 12
	dirB, cmpDir := t.TempDir(), t.TempDir()
	other.write(t, dirB)
	if _, err := Compare(ctx, dir, dirB, cmpDir); err != nil {
		t.Fatal(err)
	}
	cdom, clog := runChromium(ctx, t, bin, "--dump-dom", "file://"+filepath.Join(cmpDir, "compare.html"))
	if bad := pageErrors(clog); len(bad) > 0 {
		t.Errorf("page errors in Chromium's log for compare.html:\n%s", strings.Join(bad, "\n"))
	}
	cfigs := figures(t, cdom)
	if len(cfigs) != 3*len(demoRun().exps) {
		t.Errorf("compare.html renders %d charts, want %d", len(cfigs), 3*len(demoRun().exps))
	}
	for id, f := range cfigs {
		// Each overlaid chart draws a series per run.
		if f[0] <= 0 || f[1] < 2 {
			t.Errorf("compare chart %s: %d points, %d drawn paths", id, f[0], f[1])
		}
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	_, log = runChromium(ctx, t, bin, "--screenshot="+shot, "--window-size=1280,3200", "--hide-scrollbars", page)
	if bad := pageErrors(log); len(bad) > 0 {
		t.Errorf("page errors while taking the screenshot:\n%s", strings.Join(bad, "\n"))
	}
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10_000 {
		t.Errorf("screenshot is not a plausible PNG (%d bytes)", len(png))
	}
	if keep := os.Getenv("HOMATB_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// layoutProbe is inserted, for the test only, into a copy of a report: it
// measures the laid-out page and writes the result into the DOM, where
// --dump-dom hands it back. The report itself carries no script.
const layoutProbe = `<script>
(function () {
  var r = {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
    links: 0, broken: [], slowdown: false, legends: 0, series: 0, overlaps: [], tables: 0, cut: [], hidden: 0};
  // A table is cut when it must scroll inside itself to show every column,
  // hidden when it is not rendered at all (inside closed details).
  document.querySelectorAll('table').forEach(function (t, i) {
    r.tables++;
    if (!t.checkVisibility() || t.getClientRects().length === 0) { r.hidden++; } else if (t.scrollWidth > t.clientWidth + 1) { r.cut.push(i + ': ' + t.scrollWidth + ' > ' + t.clientWidth); }
  });
  document.querySelectorAll('a[href^="#"]').forEach(function (a) {
    var id = decodeURIComponent(a.getAttribute('href').slice(1));
    if (document.getElementById(id)) { r.links++; } else { r.broken.push(id); }
  });
  document.querySelectorAll('figure[id^="slowdown-pct-"]').forEach(function (f) {
    if (f.querySelector('svg polyline.series') && f.textContent.indexOf('cumulative % of messages') >= 0) { r.slowdown = true; }
  });
  document.querySelectorAll('svg').forEach(function (svg) {
    var fig = svg.closest('figure'), id = fig ? fig.id : '?';
    var boxes = [];
    svg.querySelectorAll('.legend').forEach(function (g) { boxes.push(g.getBoundingClientRect()); r.legends++; });
    var under = function (p) {
      return boxes.some(function (b) { return p.x >= b.left && p.x <= b.right && p.y >= b.top && p.y <= b.bottom; });
    };
    svg.querySelectorAll('polyline.series, g.markers').forEach(function (el) {
      r.series++;
      var m = el.getScreenCTM(), prev = null, pts = [];
      if (el.tagName === 'polyline') {
        for (var i = 0; i < el.points.numberOfItems; i++) { pts.push(el.points.getItem(i)); }
      } else {
        el.querySelectorAll('circle').forEach(function (c) { pts.push({x: c.cx.baseVal.value, y: c.cy.baseVal.value}); });
      }
      for (var j = 0; j < pts.length; j++) {
        var q = new DOMPoint(pts[j].x, pts[j].y).matrixTransform(m), hit = under(q);
        // Sample the segment from the previous point every 2 px.
        if (prev && el.tagName === 'polyline') {
          var n = Math.ceil(Math.hypot(q.x - prev.x, q.y - prev.y) / 2);
          for (var k = 1; k < n && !hit; k++) {
            hit = under({x: prev.x + (q.x - prev.x) * k / n, y: prev.y + (q.y - prev.y) * k / n});
          }
        }
        if (hit) { r.overlaps.push(id + ': ' + el.getAttribute('data-series')); break; }
        prev = q;
      }
    });
  });
  var pre = document.createElement('pre');
  pre.id = 'layout-probe';
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
})();
</script>`

// layoutResult is what layoutProbe measured.
type layoutResult struct {
	ScrollWidth int      `json:"scrollWidth"`
	InnerWidth  int      `json:"innerWidth"`
	Links       int      `json:"links"`
	Broken      []string `json:"broken"`
	Slowdown    bool     `json:"slowdown"`
	Legends     int      `json:"legends"`
	Series      int      `json:"series"`
	Overlaps    []string `json:"overlaps"`
	Tables      int      `json:"tables"`
	Cut         []string `json:"cut"`
	Hidden      int      `json:"hidden"`
}

// measureLayout lays out page (HTML) in Chromium width px wide with the
// probe added and returns the measurements.
func measureLayout(ctx context.Context, t *testing.T, bin string, page []byte, width int) layoutResult {
	t.Helper()
	i := bytes.LastIndex(page, []byte("</body>"))
	if i < 0 {
		t.Fatal("page has no </body>")
	}
	probed := append(append(append([]byte{}, page[:i]...), layoutProbe...), page[i:]...)
	path := filepath.Join(t.TempDir(), "probed.html")
	if err := os.WriteFile(path, probed, 0o644); err != nil {
		t.Fatal(err)
	}
	dom, _ := runChromium(ctx, t, bin, "--window-size="+strconv.Itoa(width)+",1400", "--dump-dom", "file://"+path)
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	var text string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "pre" {
			for _, a := range n.Attr {
				if a.Key == "id" && a.Val == "layout-probe" && n.FirstChild != nil {
					text = n.FirstChild.Data
				}
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	if text == "" {
		t.Fatal("the layout probe wrote no result; did the page's layout or Chromium change?")
	}
	var r layoutResult
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatalf("layout probe result %q: %v", text, err)
	}
	return r
}

// demoReport finds Chromium (skipping the test without it), builds the
// report of demoRun and returns the browser, the run directory and the page.
func demoReport(t *testing.T) (bin, dir string, page []byte) {
	t.Helper()
	bin, err := chromium()
	if err != nil {
		t.Skip("skipping: headless Chromium not installed (Debian package chromium):", err)
	}
	dir = t.TempDir()
	demoRun().write(t, dir)
	if _, err := Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	page, err = os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	return bin, dir, page
}

// TestReportLayoutInChromium checks the report reads well at 1280 px: no
// sideways scrolling, a contents list whose links all land, the papers'
// slowdown chart, and no data line passing under a legend. Each check is
// shown to fail on a page planted with the fault.
func TestReportLayoutInChromium(t *testing.T) {
	bin, dir, page := demoReport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if _, log := runChromium(ctx, t, bin, "--window-size=1280,1400", "--dump-dom", "file://"+filepath.Join(dir, "report.html")); len(pageErrors(log)) > 0 {
		t.Errorf("page errors in Chromium's log:\n%s", strings.Join(pageErrors(log), "\n"))
	}
	r := measureLayout(ctx, t, bin, page, 1280)
	t.Logf("layout: %+v", r)
	if r.InnerWidth < 1200 || r.InnerWidth > 1280 {
		t.Errorf("viewport %d px wide, want 1280 (less a scroll bar)", r.InnerWidth)
	}
	if r.ScrollWidth > r.InnerWidth {
		t.Errorf("page scrolls sideways: %d px wide in a %d px window", r.ScrollWidth, r.InnerWidth)
	}
	if r.Links < 5 || len(r.Broken) > 0 {
		t.Errorf("%d in-page links land, want at least 5; broken: %q", r.Links, r.Broken)
	}
	if !r.Slowdown {
		t.Error("no slowdown vs size-percentile chart (figure slowdown-pct-*) with data and its top axis")
	}
	if r.Legends == 0 || r.Series == 0 {
		t.Errorf("found %d legends and %d series; the probe's selectors no longer match the charts", r.Legends, r.Series)
	}
	if len(r.Overlaps) > 0 {
		t.Errorf("data drawn under a legend: %q", r.Overlaps)
	}

	// Negative controls: the same page with each fault planted.
	tests := []struct {
		name, old, new string
		failed         func(layoutResult) bool
	}{
		{"legend over the plot", `<g class="legend">`,
			`<g class="legend"><rect x="0" y="0" width="800" height="320" fill="none"/></g><g class="legend">`,
			func(r layoutResult) bool { return len(r.Overlaps) > 0 }},
		{"wide element", `<h1>`, `<div style="width:2000px">wide</div><h1>`,
			func(r layoutResult) bool { return r.ScrollWidth > r.InnerWidth }},
		{"broken link", `<nav class="toc" id="contents">`, `<nav class="toc" id="contents"><a href="#nowhere">x</a>`,
			func(r layoutResult) bool { return len(r.Broken) > 0 }},
	}
	for _, tc := range tests {
		if !bytes.Contains(page, []byte(tc.old)) {
			t.Fatalf("%s: the report no longer holds %q", tc.name, tc.old)
		}
		bad := bytes.Replace(page, []byte(tc.old), []byte(tc.new), 1)
		if !tc.failed(measureLayout(ctx, t, bin, bad, 1280)) {
			t.Errorf("%s: planted fault not detected", tc.name)
		}
	}
}

// TestReportPrintLayout checks the print style: laid out as on an A4 page
// (720 px between the margins at 96 dpi), with the print rules applied on
// screen, every table shows all its columns and none stays folded in a
// closed details element. Without the print rules tables are cut, which
// shows the check can fail. It also prints a PDF to see that Chromium can.
func TestReportPrintLayout(t *testing.T) {
	bin, dir, page := demoReport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const printRules = "@media print{"
	if !bytes.Contains(page, []byte(printRules)) {
		t.Fatal("the report has no print style")
	}
	printed := bytes.Replace(page, []byte(printRules), []byte("@media all{"), 1)
	r := measureLayout(ctx, t, bin, printed, 720)
	if r.Tables == 0 || len(r.Cut) > 0 || r.Hidden > 0 || r.ScrollWidth > r.InnerWidth {
		t.Errorf("printed: %d tables, cut %q, %d hidden, page %d px in %d", r.Tables, r.Cut, r.Hidden, r.ScrollWidth, r.InnerWidth)
	}
	if r := measureLayout(ctx, t, bin, page, 720); len(r.Cut) == 0 || r.Hidden == 0 {
		t.Errorf("on screen at 720 px some tables should scroll and the details stay closed: cut %q, %d hidden", r.Cut, r.Hidden)
	}
	pdf := filepath.Join(t.TempDir(), "report.pdf")
	runChromium(ctx, t, bin, "--no-pdf-header-footer", "--print-to-pdf="+pdf, "file://"+filepath.Join(dir, "report.html"))
	b, err := os.ReadFile(pdf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("%PDF")) || len(b) < 10_000 {
		t.Errorf("printed PDF is not plausible (%d bytes)", len(b))
	}
	if keep := os.Getenv("HOMATB_PDF"); keep != "" {
		if err := os.WriteFile(keep, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// foldProbe measures, in the rendered page, where the headline sentences
// and the setup box end, which chart labels leave their SVG's viewBox
// (with the browser's own font metrics), and which latencies of more than
// 10,000 µs are printed in µs; it writes the findings into the body's
// data-probe attribute for --dump-dom to carry out.
const foldProbe = `<script>
window.addEventListener("load", () => {
  const bottom = id => { const e = document.getElementById(id); return e ? e.getBoundingClientRect().bottom : -1; };
  const outside = [];
  for (const svg of document.querySelectorAll("svg")) {
    const vb = svg.viewBox.baseVal;
    for (const t of svg.querySelectorAll("text")) {
      if (t.getAttribute("transform")) continue;
      const b = t.getBBox();
      if (b.x < vb.x - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 || b.y < vb.y - 0.5 || b.y + b.height > vb.y + vb.height + 0.5)
        outside.push((svg.closest("figure") || {}).id + ": " + t.textContent);
    }
  }
  const big = (document.body.innerText.match(/[0-9][0-9.]* µs/g) || []).filter(s => parseFloat(s) > 10000);
  document.body.setAttribute("data-probe", JSON.stringify({summary: bottom("summary"), setup: bottom("setup"), height: window.innerHeight, outside, big}));
});
</script>`

// TestFirstScreenInChromium renders the demo report (a sweep over the
// load) and a run with repetitions in headless Chromium at 1280x800: the
// headline sentences and the setup box are above the fold, no chart label
// leaves its chart's box, and no latency above 10,000 µs is printed in µs.
func TestFirstScreenInChromium(t *testing.T) {
	bin, err := chromium()
	if err != nil {
		t.Skip("skipping: headless Chromium not installed (Debian package chromium):", err)
	}
	reps := demoRun()
	reps.exps = nil
	for _, rep := range []string{"1", "2", "3"} {
		reps.exps = append(reps.exps,
			synthExp{name: "x-homa-r" + rep, transport: "homa", n: 3000, meanNs: 20_000, params: map[string]any{"repetition": rep}},
			synthExp{name: "x-tcp-r" + rep, transport: "tcp", n: 3000, meanNs: 3_000_000, params: map[string]any{"repetition": rep}})
	}
	for _, tc := range []struct {
		name string
		run  synthRun
	}{{"sweep", demoRun()}, {"repetitions", reps}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run.scenario = demoScenario()
			page := buildReport(t, tc.run)
			probe := filepath.Join(t.TempDir(), "probe.html")
			if err := os.WriteFile(probe, []byte(strings.Replace(page, "</body>", foldProbe+"</body>", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			dom, _ := runChromium(ctx, t, bin, "--window-size=1280,800", "--dump-dom", "file://"+probe)
			m := regexp.MustCompile(`data-probe="([^"]*)"`).FindSubmatch(dom)
			if m == nil {
				t.Fatal("the probe left no findings in the page")
			}
			var got struct {
				Summary, Setup, Height float64
				Outside, Big           []string
			}
			if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
				t.Fatal(err)
			}
			t.Logf("headline ends at %.0f px, setup box at %.0f px, window %.0f px", got.Summary, got.Setup, got.Height)
			if got.Summary <= 0 || got.Setup <= 0 || got.Setup > got.Height || got.Summary > got.Height {
				t.Errorf("headline ends at %.0f px, setup box at %.0f px; want both above the fold at %.0f px", got.Summary, got.Setup, got.Height)
			}
			if len(got.Outside) > 0 {
				t.Errorf("%d chart labels outside their box, e.g. %q", len(got.Outside), got.Outside[:min(5, len(got.Outside))])
			}
			if len(got.Big) > 0 {
				t.Errorf("latencies above 10,000 µs printed in µs: %q", got.Big)
			}
		})
	}
}
