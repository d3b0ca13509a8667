package reports

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"

	"github.com/homatb/homatb/anatomy"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// parseTemplates parses the report templates with their helper functions.
func parseTemplates() (*template.Template, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"us":    fmtOpt,
		"lat":   fmtLatencyOpt,
		"latv":  fmtLatency,
		"latu":  func(us uint64) string { return fmtLatency(float64(us)) },
		"latci": fmtLatencyCI,
		"bitrate": func(bps float64) string {
			if bps <= 0 {
				return "—"
			}
			return fmtBitRate(bps)
		},
		"latspread": func(s *stats.Spread) string {
			if s == nil {
				return "—"
			}
			return fmtLatency(s.Median) + " (" + fmtLatency(s.Min) + "–" + fmtLatency(s.Max) + ")"
		},
		"mbit":       func(bps float64) float64 { return bps / 1e6 },
		"gbitToMbit": func(g float64) float64 { return g * 1e3 },
		"spread": func(s *stats.Spread, prec int) string {
			if s == nil {
				return "—"
			}
			return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, s.Median, prec, s.Min, prec, s.Max)
		},
		"ci":    fmtCI,
		"f":     func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) },
		"pct":   func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" },
		"bytes": func(v int64) string { return formatLength(float64(v)) },
		"peakq": peakQueue,
		// na: the target cannot give this switch statistic.
		"na":    func(st stats.SwitchStats, field string) bool { return st.Lacks(field) },
		"heat":  heatStyle,
		"most":  largestCount,
		"roles": rolesOf,
		"seq": func(n int) []int {
			s := make([]int, n)
			for i := range s {
				s[i] = i
			}
			return s
		},
		"gbps": func(bps float64) string { return strconv.FormatFloat(bps/1e9, 'g', 4, 64) },
	}).ParseFS(templateFS, "templates/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse report templates: %w", err)
	}
	return t, nil
}

// peakQueue names the queue that held the most bytes and how many.
func peakQueue(st stats.SwitchStats) string {
	best := -1
	for q, b := range st.MaxQueueBytes {
		if b > 0 && (best < 0 || b > st.MaxQueueBytes[best]) {
			best = q
		}
	}
	if best < 0 {
		return "0"
	}
	pkts := ""
	if best < len(st.MaxQueuePkts) {
		pkts = strconv.FormatInt(st.MaxQueuePkts[best], 10) + " pkts, "
	}
	return pkts + formatLength(float64(st.MaxQueueBytes[best])) + " (q" + strconv.Itoa(best) + ")"
}

func fmtOpt(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmtNum(*v)
}

// fmtNum prints three significant digits, enough for latencies and ratios.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fmtCI(iv stats.Interval) string { return ciWith(iv, fmtNum) }

// ciWith writes an interval with each end formatted by f.
func ciWith(iv stats.Interval, f func(float64) string) string {
	end := func(p *float64, open string) string {
		if p == nil {
			return open
		}
		return f(*p)
	}
	return "[" + end(iv[0], "−∞") + ", " + end(iv[1], "open") + "]"
}

// warning is one fidelity warning with where it applies.
type warning struct{ Scope, Msg string }

// repeated is one configuration's headline over the repetitions of its
// params, with its P99 over the baseline's: one ratio, or one per variant
// of the baseline when a sweep of the baseline's own parameter made
// several.
type repeated struct {
	Params string
	Row    stats.HeadlineRow
	Ratios []repeatedRatio
}

// repeatedRatio is one P99 ratio of a repeated row, with the params that
// tell the baseline's variant apart ("" when there is one).
type repeatedRatio struct {
	Against string
	P99     *stats.Spread
}

// repeatedRows pairs each repeated headline row with its ratios to the
// baseline.
func repeatedRows(s *stats.Summary) []repeated {
	var out []repeated
	for _, h := range s.Headline {
		if h.Repetitions < 2 {
			continue
		}
		r := repeated{Params: stats.ParamsKey(stats.Experiment{Params: h.Params}, ""), Row: h}
		var matched []stats.RatioRow
		for _, rr := range s.Ratios {
			if rr.Config == h.Config && stats.SubsetParams(h.Params, rr.Params) {
				matched = append(matched, rr)
			}
		}
		for _, rr := range matched {
			against := ""
			if len(matched) > 1 {
				extra := map[string]any{}
				for k, v := range rr.Params {
					if _, own := h.Params[k]; !own {
						extra[k] = v
					}
				}
				against = stats.ParamsKey(stats.Experiment{Params: extra}, "")
			}
			r.Ratios = append(r.Ratios, repeatedRatio{Against: against, P99: rr.P99})
		}
		out = append(out, r)
	}
	return out
}

// group is the experiments sharing one configuration, with their charts.
type group struct {
	Config string
	Charts []chart
	Notes  []string
}

// reportPage is what report.html.tmpl renders.
type reportPage struct {
	Title     string
	Generated string
	Summary   *stats.Summary
	Warnings  []warning
	// Baseline is the configuration every other one is compared with;
	// Headlines has one row per other configuration and group of params.
	Baseline  string
	Headlines []stats.Contrast
	// Sentences say each comparison in words; Setup is what ran.
	Sentences []string
	Setup     [][2]string
	// Repeated has the headline over repetitions, when a configuration
	// ran more than once.
	Repeated []repeated
	// Paper is the Homa paper's slowdown grid, when a sweep covers
	// workloads.
	Paper       *paperGrid
	Groups      []group
	Sweeps      []chart
	SweepNotes  []string
	Manifest    string
	ManifestKV  [][2]string
	Experiments []*stats.Experiment
	Captures    []captureRow
	PFC         []pfcRow
	Collectives []collectiveSection
	Matrices    []stats.MatrixRow
	Adversaries []adversaryRow
}

// NoShort reports whether no experiment has an RPC the headline counts
// (a run of collectives or connection matrices alone): the headline's
// tables would hold only dashes.
func (p *reportPage) NoShort() bool {
	for _, e := range p.Experiments {
		if e.Short.Count > 0 || (e.ShortestHalf != nil && e.ShortestHalf.Count > 0) {
			return false
		}
	}
	return true
}

// groupExperiments groups experiments by configuration, in first-seen order.
func groupExperiments(exps []stats.Experiment) ([]string, map[string][]*stats.Experiment) {
	var keys []string
	by := map[string][]*stats.Experiment{}
	for i := range exps {
		k := stats.GroupKey(exps[i])
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], &exps[i])
	}
	return keys, by
}

// buildPage computes every chart and table of a run's report.
func buildPage(a *stats.Analysis, now time.Time) (*reportPage, error) {
	s := a.Sum
	pg := &reportPage{Summary: s, Generated: now.UTC().Format(time.RFC3339)}
	pg.Title = "homatb report"
	if s.Run != "" {
		pg.Title += ": " + s.Run
	}
	if s.Manifest != nil && s.Manifest.Mode == rundir.ModeSimulated {
		pg.Title += " (simulated)"
	}
	for _, w := range s.Fidelity {
		pg.Warnings = append(pg.Warnings, warning{"run", w})
	}
	for i := range s.Experiments {
		e := &s.Experiments[i]
		pg.Experiments = append(pg.Experiments, e)
		for _, w := range e.Fidelity {
			pg.Warnings = append(pg.Warnings, warning{e.Name, w})
		}
	}
	pg.Repeated = repeatedRows(s)
	pg.Baseline = s.Baseline
	pg.Headlines = stats.Comparisons(s.Experiments, s.Baseline)
	pg.Sentences = headlineSentences(s, pg.Headlines)
	pg.Setup = setupOf(s.Manifest)
	keys, by := groupExperiments(s.Experiments)
	for gi, k := range keys {
		exps := by[k]

		g := group{Config: k}
		var rtt, slow, ccdf []series
		var rows []stats.SizeRow
		for _, e := range exps {
			g.Notes = append(g.Notes, stats.Anomalies(e)...)
		}
		// Transport colours only while they tell the experiments apart.
		transports := map[string]bool{}
		for _, e := range exps {
			transports[e.Transport] = true
		}
		for i, e := range exps {
			c := transportColor(e.Transport, i)
			if len(transports) < len(exps) {
				c = paletteColor(i)
			}
			rtt = append(rtt, rttSeries(e, e.Name, c)...)
			if ss := slowdownSeries(e, e.Name, c); ss != nil {
				slow = append(slow, ss...)
				slow = append(slow, unloadedSeries(e, e.Name, c)...)
				if rows == nil {
					rows = e.BySize
				}
			} else if len(e.BySize) == 0 && e.RPCs.Completed > 0 {
				// Collective steps and matrix flows are not in the size bins.
				g.Notes = append(g.Notes, fmt.Sprintf("%s: no RPC of a client phase, so no slowdown chart for it", e.Name))
			} else if e.RPCs.Completed > 0 {
				g.Notes = append(g.Notes, fmt.Sprintf("%s: no calibration, so no slowdown chart for it", e.Name))
			}
			ccdf = append(ccdf, ccdfSeries(e, e.Name, c, false)...)
		}
		title := func(t string) string {
			if k == "" {
				return t
			}
			return t + " (" + k + ")"
		}
		// The papers' figure comes first: slowdown against message size.
		var specs []chartSpec
		if len(slow) > 0 {
			specs = append(specs, slowdownChart(fmt.Sprintf("slowdown-pct-%d", gi), title("Slowdown vs message size, spaced by cumulative % of messages"), rows, slow))
		}
		specs = append(specs, rttChart(fmt.Sprintf("rtt-%d", gi), title("RTT vs request length"), rtt))
		specs = append(specs, ccdfChart(fmt.Sprintf("ccdf-%d", gi), title("CCDF of RTT, "+s.ShortSet()), ccdf))
		for i, e := range exps {
			if len(e.Active) > 0 {
				specs = append(specs, activeChart(fmt.Sprintf("active-%d-%d", gi, i), e))
			}
		}
		for i, e := range exps {
			if len(e.Series) == 0 {
				why := "no telemetry"
				if s.Manifest != nil && s.Manifest.Mode == rundir.ModeSimulated {
					why = "no telemetry (the twin samples no queues: its switches' exact peaks and the anatomy stand in)"
				}
				g.Notes = append(g.Notes, fmt.Sprintf("%s: %s, so no queue-occupancy or utilisation chart", e.Name, why))
				continue
			}
			for j, ss := range e.Series {
				specs = append(specs, queueChart(fmt.Sprintf("queue-%d-%d-%d", gi, i, j), e, ss))
				if len(ss.NoRate) > 0 {
					g.Notes = append(g.Notes, fmt.Sprintf("%s %s: ports %v have no known rate; utilisation omitted for them", e.Name, ss.Switch, ss.NoRate))
				}
				if len(ss.Util) > 0 {
					specs = append(specs, utilChart(fmt.Sprintf("util-%d-%d-%d", gi, i, j), e, ss))
				}
			}
		}
		shareAxes(specs)
		for _, sp := range specs {
			c, err := render(sp)
			if err != nil {
				return nil, err
			}
			g.Charts = append(g.Charts, c)
			if sp.id == fmt.Sprintf("ccdf-%d", gi) {
				// Where the short RPCs' time went, right after their CCDF.
				ac := anatomyChart(fmt.Sprintf("anatomy-%d", gi), title(fmt.Sprintf("Latency anatomy, RPCs with request and response ≤ %d bytes: share of the RTT by part", anatomy.ShortMaxBytes)), exps)
				if ac.SVG != "" {
					g.Charts = append(g.Charts, ac)
				} else {
					g.Notes = append(g.Notes, "no latency anatomy: "+ac.Note)
				}
			}
		}
		pg.Groups = append(pg.Groups, g)
	}
	paper, err := buildPaperGrid(s)
	if err != nil {
		return nil, err
	}
	pg.Paper = paper
	if err := buildSweeps(pg, s); err != nil {
		return nil, err
	}
	if err := buildCollectives(pg, s); err != nil {
		return nil, err
	}
	pg.Matrices = stats.MatrixRows(s)
	if err := manifestView(pg, s.Manifest); err != nil {
		return nil, err
	}
	pg.Captures = captureRows(s.Manifest)
	pg.PFC = pfcRows(s)
	pg.Adversaries = adversaryRows(s)
	return pg, nil
}

// HasPhases reports whether any experiment has per-phase percentiles.
func (p *reportPage) HasPhases() bool {
	for _, e := range p.Experiments {
		if len(e.Phases) > 0 {
			return true
		}
	}
	return false
}

// buildSweeps draws each headline metric against every numeric swept
// parameter, one line per transport.
func buildSweeps(pg *reportPage, s *stats.Summary) error {
	for pi, param := range s.SweptParams {
		type line struct {
			transport            string
			p50, p99, good, util []stats.Point
		}
		lines := map[string]*line{}
		var order []string
		numeric := true
		for i := range s.Experiments {
			e := &s.Experiments[i]
			v, ok := e.Params[param]
			if !ok {
				continue
			}
			x, err := strconv.ParseFloat(fmt.Sprint(v), 64)
			if err != nil {
				numeric = false
				break
			}
			// One line per transport and value of the other params, so a
			// second swept param does not zigzag into this one's line.
			key := e.Transport
			if rest := stats.ParamsKey(*e, param); rest != "" {
				key += " " + rest
			}
			l := lines[key]
			if l == nil {
				l = &line{transport: e.Transport}
				lines[key] = l
				order = append(order, key)
			}
			if e.Short.P50us != nil {
				l.p50 = append(l.p50, stats.Point{X: x, Y: *e.Short.P50us})
				l.p99 = append(l.p99, stats.Point{X: x, Y: *e.Short.P99us})
			}
			l.good = append(l.good, stats.Point{X: x, Y: e.GoodputGbps * 1e3})
			if e.MeanLinkUtil != nil {
				l.util = append(l.util, stats.Point{X: x, Y: *e.MeanLinkUtil})
			}
		}
		if !numeric {
			pg.SweepNotes = append(pg.SweepNotes, fmt.Sprintf("parameter %q is not numeric; see the headline table for its values", param))
			continue
		}
		var lat, good, util []series
		transports := map[string]bool{}
		for _, l := range lines {
			transports[l.transport] = true
		}
		for i, name := range order {
			l := lines[name]
			byX := func(a, b stats.Point) int { return cmp.Compare(a.X, b.X) }
			slices.SortFunc(l.p50, byX)
			slices.SortFunc(l.p99, byX)
			slices.SortFunc(l.good, byX)
			slices.SortFunc(l.util, byX)
			// Transport colours only while they tell the lines apart.
			c := transportColor(l.transport, i)
			if len(order) > len(transports) {
				c = paletteColor(i)
			}
			lat = append(lat, series{name: name + " short P50", pts: l.p50, color: c},
				series{name: name + " short P99", pts: l.p99, color: c, dashed: true})
			good = append(good, series{name: name + " goodput", pts: l.good, color: c})
			if len(l.util) > 0 {
				util = append(util, series{name: name + " mean link utilisation", pts: l.util, color: c})
			}
		}
		specs := []chartSpec{
			{id: fmt.Sprintf("sweep-lat-%d", pi), title: "Short-message RTT vs " + param,
				xLabel: param, yLabel: "RTT (µs)", logY: spansDecade(lat), series: lat},
			{id: fmt.Sprintf("sweep-good-%d", pi), title: "Goodput vs " + param,
				xLabel: param, yLabel: "goodput (Mbit/s)", series: good},
		}
		if len(util) > 0 {
			zero, one := 0.0, 1.0
			specs = append(specs, chartSpec{id: fmt.Sprintf("sweep-util-%d", pi), title: "Mean switch egress (downlink) utilisation vs " + param,
				xLabel: param, yLabel: "utilisation (fraction of link rate)", yMin: &zero, yMax: &one, series: util})
		}
		if rs := ratioSweep(pg.Headlines, param); len(rs) > 0 {
			specs = append(specs, chartSpec{id: fmt.Sprintf("sweep-ratio-%d", pi), title: "Short-message RTT over " + pg.Baseline + "'s vs " + param,
				xLabel: param, yLabel: "RTT / " + pg.Baseline + " RTT", series: rs})
		}
		for _, sp := range specs {
			c, err := render(sp)
			if err != nil {
				return err
			}
			pg.Sweeps = append(pg.Sweeps, c)
		}
	}
	return nil
}

// ratioSweep draws each configuration's short-message RTT over the
// baseline's (P50 solid, P99 dashed) against a numeric param, one pair of
// lines per configuration and value of the other params.
func ratioSweep(cs []stats.Contrast, param string) []series {
	type pair struct{ p50, p99 []stats.Point }
	lines := map[string]*pair{}
	var order []string
	for _, c := range cs {
		if c.RatioP50 == nil || c.RatioP99 == nil {
			continue
		}
		x, err := strconv.ParseFloat(fmt.Sprint(c.ParamMap[param]), 64)
		if err != nil {
			continue
		}
		key := stats.ConfigID(c.Other) + "/" + stats.ConfigID(c.Base)
		if rest := stats.ParamsKey(stats.Experiment{Params: c.ParamMap}, param); rest != "" {
			key += " " + rest
		}
		l := lines[key]
		if l == nil {
			l = &pair{}
			lines[key] = l
			order = append(order, key)
		}
		l.p50 = append(l.p50, stats.Point{X: x, Y: *c.RatioP50})
		l.p99 = append(l.p99, stats.Point{X: x, Y: *c.RatioP99})
	}
	var out []series
	for i, key := range order {
		l := lines[key]
		byX := func(a, b stats.Point) int { return cmp.Compare(a.X, b.X) }
		slices.SortFunc(l.p50, byX)
		slices.SortFunc(l.p99, byX)
		out = append(out, series{name: key + " P50", pts: l.p50, color: paletteColor(i)},
			series{name: key + " P99", pts: l.p99, color: paletteColor(i), dashed: true})
	}
	return out
}

// spansDecade reports whether the positive y values cover a factor of 10.
func spansDecade(ss []series) bool {
	lo, hi := math.Inf(1), 0.0
	for _, s := range ss {
		for _, p := range s.pts {
			if p.Y > 0 {
				lo, hi = min(lo, p.Y), max(hi, p.Y)
			}
		}
	}
	return hi >= 10*lo
}

// manifestView pretty-prints the manifest and picks its key facts.
func manifestView(pg *reportPage, m *stats.Manifest) error {
	if m == nil || len(m.Raw) == 0 {
		return nil
	}
	readable, err := readableManifest(m.Raw)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, readable, "", "  "); err != nil {
		return fmt.Errorf("format manifest: %w", err)
	}
	pg.Manifest = buf.String()
	kv := [][2]string{{"run", m.Run}, {"scenario", m.ScenarioFile}, {"git commit", m.GitCommit}}
	if m.Started > 0 {
		kv = append(kv, [2]string{"started", time.Unix(0, m.Started).UTC().Format(time.RFC3339)})
	}
	if m.Ended > 0 {
		kv = append(kv, [2]string{"ended", time.Unix(0, m.Ended).UTC().Format(time.RFC3339)})
	}
	if m.RateBps() > 0 {
		kv = append(kv, [2]string{"link rate", fmt.Sprintf("%g Gbit/s", float64(m.RateBps())/1e9)})
	}
	for _, k := range stats.SortedKeys(m.Versions) {
		kv = append(kv, [2]string{k + " version", m.Versions[k]})
	}
	pg.ManifestKV = kv
	return nil
}

// writeReport renders report.html.
func writeReport(w io.Writer, pg *reportPage) error {
	t, err := parseTemplates()
	if err != nil {
		return err
	}
	if err := t.ExecuteTemplate(w, "report.html.tmpl", pg); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}
