package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/claims"
	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/testbed"
	"github.com/homatb/homatb/testbed/cleanup"
	"github.com/homatb/homatb/testbed/dispatch"
	"github.com/homatb/homatb/testbed/scenario"
)

// reproduceFlags are the settings of `homatb reproduce`.
type reproduceFlags struct {
	quick  bool
	jobs   int
	out    string
	root   string
	render string
	reuse  bool
	splits bool
	seeds  int
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
	fl.IntVar(&f.jobs, "jobs", defaultReproduceJobs(), "twin experiments at once (1-16), in as many worker processes, with records identical to one at a time; scenarios run one after another, and an emulated run always runs alone (default: this machine's CPUs, at most 4)")
	fl.StringVar(&f.out, "out", "", "output directory (default results/claims-<timestamp>)")
	fl.StringVar(&f.root, "root", ".", "the repository: the claims' scenarios are under ROOT/scenarios/claims")
	fl.BoolVar(&f.reuse, "reuse", false, "judge the complete runs already in --out (same seeds) afresh instead of running them again; the others run")
	fl.StringVar(&f.render, "render", "", "measure nothing: rebuild DIR's claims.html and claims.md from its claims.json and print its table")
	fl.IntVar(&f.seeds, "queue-seeds", 0, "run the queue model's claims with seeds 1 to N (default: seeds 1-3)")
	fl.BoolVar(&f.splits, "splits", false, "measure the article's level claims (A6-A9) with every candidate level split and print the evidence table")
	return cmd
}

// maxDefaultJobs bounds reproduce's default --jobs: each task holds a
// whole simulation and the report analyses as many experiments at once
// (the whole table with 2 peaked at 6.9 GB), so a machine with many CPUs
// asks for more when it has the memory.
const maxDefaultJobs = 4

// defaultReproduceJobs is reproduce's --jobs unless given: the twin's
// tasks give the same records as one process, so a reproduction uses the
// machine's CPUs.
func defaultReproduceJobs() int { return min(runtime.NumCPU(), maxDefaultJobs) }

func runReproduce(cmd *cobra.Command, ids []string, f reproduceFlags) error {
	if f.render != "" {
		return renderClaims(cmd.OutOrStdout(), f.render)
	}
	if f.splits {
		return splitTables(cmd)
	}
	if f.jobs < 1 || f.jobs > 16 {
		return usagef("--jobs: expected 1 to 16, got %d", f.jobs)
	}
	if f.seeds < 0 || f.seeds > 1000 {
		return usagef("--queue-seeds: expected 0 (seeds 1-3) to 1000, got %d", f.seeds)
	}
	if _, err := claims.Select(ids); err != nil {
		return usagef("%v", err)
	}
	start := time.Now()
	if f.out == "" {
		f.out = filepath.Join("results", "claims-"+start.UTC().Format("20060102-150405"))
	}
	var progress io.Writer = cmd.ErrOrStderr()
	opt := claims.Options{
		// The experiments of a twin scenario, not the scenarios, run side
		// by side: the paper's table, which is most of the work, then keeps
		// every core busy to its end.
		IDs: ids, Quick: f.quick, Jobs: 1, Out: f.out, Root: f.root, QueueSeeds: f.seeds,
		Twin: simulateScenario(f.jobs, ""), Progress: progress, Reuse: f.reuse,
	}
	if why := cannotEmulate(); why != "" {
		fmt.Fprintf(progress, "emulation claims not measured: %s\n", why)
	} else {
		opt.Emulate = emulateScenario
	}
	rows, err := claims.Reproduce(cmd.Context(), opt)
	if rows == nil {
		return err
	}
	line := "homatb reproduce " + strings.Join(append(ids, quickFlag(f.quick)...), " ")
	if f.seeds > 0 {
		line += fmt.Sprintf(" --queue-seeds %d", f.seeds)
	}
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

// splitTables prints the evidence for the article's level split: every
// candidate on A6-A9, then the grid the chosen bounds were fitted on (A7
// and A8).
func splitTables(cmd *cobra.Command) error {
	out := cmd.OutOrStdout()
	rows, err := claims.SplitEvidence(cmd.Context(), 0, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if err := claims.WriteSplitTable(out, rows); err != nil {
		return err
	}
	fmt.Fprintln(out)
	fit, err := claims.SplitFit(cmd.Context(), 0, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	return claims.WriteSplitTable(out, fit)
}

func quickFlag(q bool) []string {
	if q {
		return []string{"--quick"}
	}
	return nil
}

// simulateScenario runs a scenario in the twin the way `homatb run
// --simulate --jobs jobs` does and reads its summary: in this process
// (scenario.Load, testbed.Run in virtual time), or with jobs above one in
// that many local worker processes, each running experiment after
// experiment, whose records are byte-identical to one process's. A large
// scenario (the paper's table) then keeps every core busy, where running
// scenarios side by side leaves it alone on one at the end. The tasks run bin ("": this binary).
func simulateScenario(jobs int, bin string) claims.Runner {
	return func(ctx context.Context, file string, repetitions int, runDir string) (*reports.Summary, error) {
		plan, err := scenario.Load(file, scenario.Options{Repetitions: repetitions, Simulate: true})
		if err != nil {
			return nil, err
		}
		if jobs <= 1 || len(plan.Experiments) < 2 {
			res, err := testbed.Run(ctx, plan, testbed.Options{RunDir: runDir, ScenarioFile: file, Simulate: true})
			if err != nil {
				return nil, err
			}
			return readRunSummary(res.RunDir)
		}
		if err := simulateTasks(ctx, plan, file, runDir, bin, repetitions, jobs); err != nil {
			return nil, err
		}
		return readRunSummary(runDir)
	}
}

// simulateTasks runs plan's experiments (file's, with reps repetitions) as
// jobs local tasks of bin into dir, longest first, then merges them and builds
// the report.
func simulateTasks(ctx context.Context, plan *scenario.Plan, file, dir, bin string, reps, jobs int) error {
	d, err := newDispatch(plan, file, reps, nil, true, "", "local")
	if err != nil {
		return err
	}
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("find the homatb binary: %w", err)
		}
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("run directory %s is not empty: remove it, or use --reuse to judge a complete run again", dir)
	}
	if err := dispatch.Prepare(dir, d); err != nil {
		return err
	}
	order, err := longestFirst(plan)
	if err != nil {
		return err
	}
	outcomes, runErr := dispatch.Local{Binary: bin, Jobs: jobs, Order: order}.Run(ctx, dir, d, func(string) {})
	merged, err := mergeTasks(ctx, dir, d, outcomes, false, jobs)
	if err != nil || runErr != nil {
		return errors.Join(runErr, err)
	}
	if merged.Manifest.Incomplete {
		return fmt.Errorf("run %s is incomplete: %d of %d experiments not measured (see its manifest.json's fidelity)", dir, len(merged.Missing), len(d.Experiments))
	}
	return nil
}

// readRunSummary reads a run directory's summary.json.
func readRunSummary(dir string) (*reports.Summary, error) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	var s reports.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	return &s, nil
}

// cannotEmulate says why this machine cannot run emulated scenarios ("" if
// it can): they need root and Mininet.
func cannotEmulate() string {
	if os.Geteuid() != 0 {
		return "emulation needs root"
	}
	if _, err := exec.LookPath("mn"); err != nil {
		return "emulation needs Mininet (mn not found; make deps)"
	}
	return ""
}

// emulateScenario runs a scenario emulated the way `homatb run` does
// (scenario.Load, testbed.Preflight, testbed.Run) and reads its summary.
func emulateScenario(ctx context.Context, file string, repetitions int, runDir string) (*reports.Summary, error) {
	plan, err := scenario.Load(file, scenario.Options{Repetitions: repetitions})
	if err != nil {
		return nil, err
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the homatb binary: %w", err)
	}
	left, err := testbed.Preflight(plan, bin, cleanup.DefaultRegistry)
	if err != nil {
		return nil, err
	}
	if len(left) > 0 {
		return nil, fmt.Errorf("leftovers of earlier runs (%d): run homatb clean first", len(left))
	}
	res, err := testbed.Run(ctx, plan, testbed.Options{RunDir: runDir, ScenarioFile: file, Binary: bin, Registry: cleanup.DefaultRegistry})
	if res == nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return readRunSummary(res.RunDir)
}

// renderClaims rebuilds a reproduce output directory's pages from its
// claims.json.
func renderClaims(w io.Writer, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "claims.json"))
	if err != nil {
		return err
	}
	var rep claims.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "claims.json"), err)
	}
	if err := claims.WriteFiles(dir, &rep); err != nil {
		return err
	}
	return claims.WriteTable(w, rep.Rows)
}
