package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/reports/stats"
	"github.com/spf13/cobra"
)

// newCompareCmd is `homatb compare DIR_A DIR_B`: two runs side by side.
func newCompareCmd() *cobra.Command {
	var parent, exact string
	cmd := &cobra.Command{
		Use:   "compare DIR_A DIR_B",
		Short: "Put two run directories side by side: compare.json and compare.html with overlaid charts",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := fmt.Sprintf("compare-%s-vs-%s", filepath.Base(filepath.Clean(args[0])), filepath.Base(filepath.Clean(args[1])))
			out, err := outDir(parent, exact, name)
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("results", name)
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
			c, err := reports.Compare(cmd.Context(), args[0], args[1], out, reports.WithLogger(logger))
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, l := range comparisonLines(c) {
				fmt.Fprintln(w, l)
			}
			fmt.Fprintln(w, filepath.Join(out, "compare.html"))
			return nil
		},
	}
	cmd.Flags().StringVar(&parent, "out", "", "parent directory of the comparison's directory, compare-<A>-vs-<B> (default results)")
	cmd.Flags().StringVar(&exact, "run-dir", "", "exact directory for compare.json and compare.html (instead of OUT/compare-<A>-vs-<B>)")
	return cmd
}

// comparisonLines are the terminal's side-by-side table of a comparison:
// per pair, what completed, the short messages' P99 and the first
// collective's CCT P50 in A and B and their ratio (B/A), and the drops.
func comparisonLines(c *stats.Comparison) []string {
	out := []string{fmt.Sprintf("A = %s (%s), B = %s (%s); ratios B/A (above 1: B slower)", c.RunA, c.A, c.RunB, c.B)}
	ratio := func(r *float64) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprintf("%.3g", *r)
	}
	for _, p := range c.Pairs {
		l := fmt.Sprintf("  %-28s completed %d / %d", p.Name, p.A.Completed, p.B.Completed)
		if p.A.ShortP99us != nil || p.B.ShortP99us != nil {
			l += fmt.Sprintf("; short P99 %s / %s (%s)", optUs(p.A.ShortP99us), optUs(p.B.ShortP99us), ratio(p.RatioP99))
		}
		if p.A.CCTPhase != "" || p.B.CCTPhase != "" {
			l += fmt.Sprintf("; %s CCT P50 %s / %s (%s)", cmp.Or(p.A.CCTPhase, p.B.CCTPhase), optUs(p.A.CCTP50us), optUs(p.B.CCTP50us), ratio(p.RatioCCT))
		}
		l += fmt.Sprintf("; switch drops %d / %d", p.A.Drops, p.B.Drops)
		out = append(out, l)
	}
	if len(c.OnlyA) > 0 {
		out = append(out, "  only in A: "+strings.Join(c.OnlyA, ", "))
	}
	if len(c.OnlyB) > 0 {
		out = append(out, "  only in B: "+strings.Join(c.OnlyB, ", "))
	}
	return out
}
