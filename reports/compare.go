package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Comparison is compare.json: the experiments of two runs paired up.
type Comparison struct {
	A, B     string   `json:"-"`
	RunA     string   `json:"run_a"`
	RunB     string   `json:"run_b"`
	Pairs    []Pair   `json:"pairs"`
	OnlyA    []string `json:"only_a"`
	OnlyB    []string `json:"only_b"`
	Fidelity []string `json:"fidelity"`
}

// Pair is one experiment in both runs with its headline numbers; ratios are
// B over A (above 1: B is slower).
type Pair struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	Config    string   `json:"config"`
	A         Headline `json:"a"`
	B         Headline `json:"b"`
	RatioP50  *float64 `json:"ratio_short_p50"`
	RatioP99  *float64 `json:"ratio_short_p99"`

	ea, eb *Experiment
}

// Headline is the numbers a comparison puts side by side.
type Headline struct {
	Experiment  string   `json:"experiment"`
	Completed   int64    `json:"completed"`
	ShortP50us  *float64 `json:"short_p50_us"`
	ShortP99us  *float64 `json:"short_p99_us"`
	ShortP50CI  Interval `json:"short_p50_ci_us"`
	ShortP99CI  Interval `json:"short_p99_ci_us"`
	RTTP99us    *float64 `json:"rtt_p99_us"`
	SlowdownP99 *float64 `json:"slowdown_p99"`
	GoodputGbps float64  `json:"goodput_gbps"`
	Drops       int64    `json:"switch_drops"`
	// LongP50us is the median RTT of the longest requests (the by-size
	// table's last row, from LongMinBytes up); MaxQueuePkts the deepest
	// any switch queue became.
	LongP50us    *float64 `json:"long_p50_us"`
	LongMinBytes int64    `json:"long_min_bytes"`
	MaxQueuePkts int64    `json:"max_queue_pkts"`
	// TailHostShare is the part of the short-message tail (the mean at or
	// above the P99) the latency anatomy puts on the hosts (their
	// software and send lag, not waits behind the same connection's
	// queued bytes); null without an anatomy.
	TailHostShare *float64 `json:"tail_host_share"`
}

func headlineOf(e *Experiment) Headline {
	h := Headline{Experiment: e.Name, Completed: e.RPCs.Completed,
		ShortP50us: e.Short.P50us, ShortP99us: e.Short.P99us, ShortP50CI: e.Short.P50CI, ShortP99CI: e.Short.P99CI,
		RTTP99us: e.RTT.P99, GoodputGbps: e.GoodputGbps, Drops: e.Switch.Drops}
	if e.Slowdown != nil {
		h.SlowdownP99 = e.Slowdown.P99
	}
	if n := len(e.BySize); n > 0 {
		last := e.BySize[n-1]
		h.LongP50us, h.LongMinBytes = &last.P50us, last.MinLength
	}
	for _, q := range e.Switch.MaxQueuePkts {
		h.MaxQueuePkts = max(h.MaxQueuePkts, q)
	}
	if a := e.Anatomy; a != nil && a.TailRPCs > 0 && a.Tail.RTT > 0 {
		share := (a.Tail.Host - a.Tail.HostHOL + a.Tail.SendLag) / a.Tail.RTT
		h.TailHostShare = &share
	}
	return h
}

// pairExperiments matches experiments by name, then the rest by transport
// and configuration (params without the transport).
func pairExperiments(a, b []Experiment) (pairs []Pair, onlyA, onlyB []string) {
	usedB := make([]bool, len(b))
	byName := map[string]int{}
	for i, e := range b {
		byName[e.Name] = i
	}
	var rest []int
	for i := range a {
		if j, ok := byName[a[i].Name]; ok {
			usedB[j] = true
			pairs = append(pairs, newPair(&a[i], &b[j]))
		} else {
			rest = append(rest, i)
		}
	}
	for _, i := range rest {
		found := false
		for j := range b {
			if !usedB[j] && b[j].Transport == a[i].Transport && groupKey(b[j]) == groupKey(a[i]) {
				usedB[j], found = true, true
				pairs = append(pairs, newPair(&a[i], &b[j]))
				break
			}
		}
		if !found {
			onlyA = append(onlyA, a[i].Name)
		}
	}
	for j := range b {
		if !usedB[j] {
			onlyB = append(onlyB, b[j].Name)
		}
	}
	return pairs, onlyA, onlyB
}

func newPair(ea, eb *Experiment) Pair {
	p := Pair{Name: ea.Name, Transport: ea.Transport, Config: groupKey(*ea), A: headlineOf(ea), B: headlineOf(eb), ea: ea, eb: eb}
	if eb.Name != ea.Name {
		p.Name = ea.Name + " / " + eb.Name
	}
	p.RatioP50 = ratio(ea.Short.P50us, eb.Short.P50us)
	p.RatioP99 = ratio(ea.Short.P99us, eb.Short.P99us)
	return p
}

// comparePage is what compare.html.tmpl renders.
type comparePage struct {
	Title, Generated string
	Cmp              *Comparison
	Charts           []chart
	Definition       string
}

// Compare analyses the run directories dirA and dirB (writing nothing into
// them) and writes compare.json and compare.html into outDir: the paired
// experiments' headline numbers side by side and their latency charts
// overlaid, A solid and B dashed.
func Compare(ctx context.Context, dirA, dirB, outDir string, opts ...Option) error {
	c, err := newConfig(opts)
	if err != nil {
		return err
	}
	aa, err := analyse(ctx, dirA, c)
	if err != nil {
		return fmt.Errorf("compare: run A: %w", err)
	}
	ab, err := analyse(ctx, dirB, c)
	if err != nil {
		return fmt.Errorf("compare: run B: %w", err)
	}
	cmp := &Comparison{A: dirA, B: dirB, RunA: runName(aa.sum, dirA), RunB: runName(ab.sum, dirB)}
	cmp.Pairs, cmp.OnlyA, cmp.OnlyB = pairExperiments(aa.sum.Experiments, ab.sum.Experiments)
	for _, w := range aa.sum.Fidelity {
		cmp.Fidelity = append(cmp.Fidelity, "A: "+w)
	}
	for _, w := range ab.sum.Fidelity {
		cmp.Fidelity = append(cmp.Fidelity, "B: "+w)
	}
	for _, p := range cmp.Pairs {
		for _, w := range p.ea.Fidelity {
			cmp.Fidelity = append(cmp.Fidelity, "A "+p.ea.Name+": "+w)
		}
		for _, w := range p.eb.Fidelity {
			cmp.Fidelity = append(cmp.Fidelity, "B "+p.eb.Name+": "+w)
		}
	}
	pg := &comparePage{Title: fmt.Sprintf("homatb comparison: %s vs %s", cmp.RunA, cmp.RunB),
		Generated: time.Now().UTC().Format(time.RFC3339), Cmp: cmp, Definition: percentileDefinition}
	for i, p := range cmp.Pairs {
		ca, cb := paletteColor(0), paletteColor(1)
		la, lb := "A "+p.ea.Name, "B "+p.eb.Name
		specs := []chartSpec{
			rttChart(fmt.Sprintf("cmp-rtt-%d", i), "RTT vs request length: "+p.Name, append(rttSeries(p.ea, la, ca), rttSeries(p.eb, lb, cb)...)),
			ccdfChart(fmt.Sprintf("cmp-ccdf-%d", i), fmt.Sprintf("CCDF of RTT, RPCs with request and response ≤ %d bytes: %s", c.shortMax, p.Name),
				append(ccdfSeries(p.ea, la, ca, false), ccdfSeries(p.eb, lb, cb, true)...)),
		}
		if sa, sb := slowdownSeries(p.ea, la, ca), slowdownSeries(p.eb, lb, cb); sa != nil && sb != nil {
			specs = append(specs, slowdownChart(fmt.Sprintf("cmp-slowdown-%d", i), "Slowdown vs cumulative fraction of messages: "+p.Name, p.ea.BySize, append(sa, sb...)))
		}
		for _, sp := range specs {
			ch, err := render(sp)
			if err != nil {
				return fmt.Errorf("compare: %w", err)
			}
			pg.Charts = append(pg.Charts, ch)
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	err = writeFile(filepath.Join(outDir, "compare.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(cmp)
	})
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	t, err := parseTemplates()
	if err != nil {
		return err
	}
	err = writeFile(filepath.Join(outDir, "compare.html"), func(w io.Writer) error {
		return t.ExecuteTemplate(w, "compare.html.tmpl", pg)
	})
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	c.logger.Info("comparison written", "dir", outDir, "pairs", len(cmp.Pairs))
	return nil
}

// runName is the manifest's run name, else the directory's base name.
func runName(s *Summary, dir string) string {
	if s.Run != "" {
		return s.Run
	}
	return filepath.Base(filepath.Clean(dir))
}
