package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/claims"
	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/simulate"
)

// reproduceFlags are the settings of `homatb reproduce`.
type reproduceFlags struct {
	quick bool
	jobs  int
	out   string
	root  string
}

// newReproduceCmd measures the published claims and gives each a verdict.
func newReproduceCmd() *cobra.Command {
	var f reproduceFlags
	cmd := &cobra.Command{
		Use:   "reproduce [IDS...|all]",
		Short: "Measure the published claims (the article's model, the Homa paper, TCP-NV, the talk) and give each a verdict",
		Long: `reproduce runs, for each claim of the claims table (docs/claims.md), the
experiment that measures it — the single-queue model, the twin (homatb run
--simulate) or emulation — and prints a table: the published value, homatb's
median and range over seeds, the verdict and the command of the row. It
writes claims.json and claims.html into --out, with the run directories.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReproduce(cmd, args, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.quick, "quick", false, "one seed and shorter runs (the whole table in under 30 minutes)")
	fl.IntVar(&f.jobs, "jobs", 1, "scenario runs at once (1-16)")
	fl.StringVar(&f.out, "out", "", "output directory (default results/claims-<timestamp>)")
	fl.StringVar(&f.root, "root", ".", "the repository: the claims' scenarios are under ROOT/scenarios/claims")
	return cmd
}

func runReproduce(cmd *cobra.Command, ids []string, f reproduceFlags) error {
	if f.jobs < 1 || f.jobs > 16 {
		return usagef("--jobs: expected 1 to 16, got %d", f.jobs)
	}
	if _, err := claims.Select(ids); err != nil {
		return usagef("%v", err)
	}
	start := time.Now()
	if f.out == "" {
		f.out = filepath.Join("results", "claims-"+start.UTC().Format("20060102-150405"))
	}
	var progress io.Writer = cmd.ErrOrStderr()
	rows, err := claims.Reproduce(cmd.Context(), claims.Options{
		IDs: ids, Quick: f.quick, Jobs: f.jobs, Out: f.out, Root: f.root,
		Twin: simulateScenario, Progress: progress,
	})
	if rows == nil {
		return err
	}
	line := "homatb reproduce " + strings.Join(append(ids, quickFlag(f.quick)...), " ")
	rep := claims.NewReport(strings.TrimSpace(line), start, f.quick, time.Since(start), rows)
	if werr := claims.WriteFiles(f.out, rep); werr != nil {
		return fmt.Errorf("write %s: %w", f.out, werr)
	}
	out := cmd.OutOrStdout()
	if terr := claims.WriteTable(out, rows); terr != nil {
		return terr
	}
	fmt.Fprintf(out, "claims: %s, %s\n", filepath.Join(f.out, "claims.json"), filepath.Join(f.out, "claims.html"))
	return err
}

func quickFlag(q bool) []string {
	if q {
		return []string{"--quick"}
	}
	return nil
}

// simulateScenario runs a scenario in the twin the way `homatb run
// --simulate` does (scenario.Load, simulate.Run) and reads its summary.
func simulateScenario(ctx context.Context, file string, repetitions int, runDir string) (*reports.Summary, error) {
	plan, err := scenario.Load(file, scenario.Options{Repetitions: repetitions, Simulate: true})
	if err != nil {
		return nil, err
	}
	res, err := simulate.Run(ctx, plan, simulate.Options{RunDir: runDir, ScenarioFile: file})
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(res.RunDir, "summary.json"))
	if err != nil {
		return nil, err
	}
	var s reports.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(res.RunDir, "summary.json"), err)
	}
	return &s, nil
}
