package reports

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/homatb/homatb/reports/stats"
)

// Build reads the run directory runDir and writes summary.json, by_size.csv,
// <experiment>.data, <experiment>_cdf.data, <experiment>.hgrm and
// report.html into it (or into WithOutputDir). It returns the summary.
func Build(ctx context.Context, runDir string, opts ...stats.Option) (*stats.Summary, error) {
	c, err := stats.NewConfig(opts)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	out := c.OutDir
	if out == "" {
		out = runDir
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("report %s: create output dir: %w", runDir, err)
	}
	a, err := stats.AnalyseInto(ctx, runDir, c, out)
	if err != nil {
		return nil, fmt.Errorf("report %s: %w", runDir, err)
	}
	if err := stats.WriteOutputs(out, a); err != nil {
		return nil, fmt.Errorf("report %s: %w", runDir, err)
	}
	pg, err := buildPage(a, time.Now())
	if err != nil {
		return nil, fmt.Errorf("report %s: %w", runDir, err)
	}
	html := filepath.Join(out, "report.html")
	if err := stats.WriteFile(html, func(w io.Writer) error { return writeReport(w, pg) }); err != nil {
		return nil, fmt.Errorf("report %s: %w", runDir, err)
	}
	c.Logger.Info("report built", "dir", out, "experiments", len(a.Sum.Experiments), "elapsed", time.Since(start))
	return a.Sum, nil
}
