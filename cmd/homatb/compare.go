package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/homatb/homatb/reports"
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
			if err := reports.Compare(cmd.Context(), args[0], args[1], out, reports.WithLogger(logger)); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(out, "compare.html"))
			return nil
		},
	}
	cmd.Flags().StringVar(&parent, "out", "", "parent directory of the comparison's directory, compare-<A>-vs-<B> (default results)")
	cmd.Flags().StringVar(&exact, "run-dir", "", "exact directory for compare.json and compare.html (instead of OUT/compare-<A>-vs-<B>)")
	return cmd
}
