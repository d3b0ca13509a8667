package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/homatb/homatb/reports/stats"
)

// comparePage is what compare.html.tmpl renders.
type comparePage struct {
	Title, Generated string
	Cmp              *stats.Comparison
	Charts           []chart
	Definition       string
}

// Compare analyses the run directories dirA and dirB (writing nothing into
// them) and writes compare.json and compare.html into outDir: the paired
// experiments' headline numbers side by side and their latency charts
// overlaid, A solid and B dashed. It returns what compare.json holds.
func Compare(ctx context.Context, dirA, dirB, outDir string, opts ...stats.Option) (*stats.Comparison, error) {
	c, err := stats.NewConfig(opts)
	if err != nil {
		return nil, err
	}
	aa, err := stats.Analyse(ctx, dirA, c)
	if err != nil {
		return nil, fmt.Errorf("compare: run A: %w", err)
	}
	ab, err := stats.Analyse(ctx, dirB, c)
	if err != nil {
		return nil, fmt.Errorf("compare: run B: %w", err)
	}
	cmp := &stats.Comparison{A: dirA, B: dirB, RunA: runName(aa.Sum, dirA), RunB: runName(ab.Sum, dirB)}
	cmp.Pairs, cmp.OnlyA, cmp.OnlyB = stats.PairExperiments(aa.Sum.Experiments, ab.Sum.Experiments)
	for _, w := range aa.Sum.Fidelity {
		cmp.Fidelity = append(cmp.Fidelity, "A: "+w)
	}
	for _, w := range ab.Sum.Fidelity {
		cmp.Fidelity = append(cmp.Fidelity, "B: "+w)
	}
	for _, p := range cmp.Pairs {
		for _, w := range p.ExpA.Fidelity {
			cmp.Fidelity = append(cmp.Fidelity, "A "+p.ExpA.Name+": "+w)
		}
		for _, w := range p.ExpB.Fidelity {
			cmp.Fidelity = append(cmp.Fidelity, "B "+p.ExpB.Name+": "+w)
		}
	}
	pg := &comparePage{Title: fmt.Sprintf("homatb comparison: %s vs %s", cmp.RunA, cmp.RunB),
		Generated: time.Now().UTC().Format(time.RFC3339), Cmp: cmp, Definition: stats.PercentileDefinition}
	for i, p := range cmp.Pairs {
		ca, cb := paletteColor(0), paletteColor(1)
		la, lb := "A "+p.ExpA.Name, "B "+p.ExpB.Name
		specs := []chartSpec{
			rttChart(fmt.Sprintf("cmp-rtt-%d", i), "RTT vs request length: "+p.Name, append(rttSeries(p.ExpA, la, ca), rttSeries(p.ExpB, lb, cb)...)),
			ccdfChart(fmt.Sprintf("cmp-ccdf-%d", i), fmt.Sprintf("CCDF of RTT, RPCs with request and response ≤ %d bytes: %s", c.ShortMax, p.Name),
				append(ccdfSeries(p.ExpA, la, ca, false), ccdfSeries(p.ExpB, lb, cb, true)...)),
		}
		if sa, sb := slowdownSeries(p.ExpA, la, ca), slowdownSeries(p.ExpB, lb, cb); sa != nil && sb != nil {
			specs = append(specs, slowdownChart(fmt.Sprintf("cmp-slowdown-%d", i), "Slowdown vs cumulative fraction of messages: "+p.Name, p.ExpA.BySize, append(sa, sb...)))
		}
		for _, sp := range specs {
			ch, err := render(sp)
			if err != nil {
				return nil, fmt.Errorf("compare: %w", err)
			}
			pg.Charts = append(pg.Charts, ch)
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	err = stats.WriteFile(filepath.Join(outDir, "compare.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(cmp)
	})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	t, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	err = stats.WriteFile(filepath.Join(outDir, "compare.html"), func(w io.Writer) error {
		return t.ExecuteTemplate(w, "compare.html.tmpl", pg)
	})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	c.Logger.Info("comparison written", "dir", outDir, "pairs", len(cmp.Pairs))
	return cmp, nil
}

// runName is the manifest's run name, else the directory's base name.
func runName(s *stats.Summary, dir string) string {
	if s.Run != "" {
		return s.Run
	}
	return filepath.Base(filepath.Clean(dir))
}
