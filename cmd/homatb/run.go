package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/homatb/homatb/internal/memlimit"
	"github.com/homatb/homatb/internal/schedprio"
	"github.com/homatb/homatb/internal/units"
	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed"
	"github.com/homatb/homatb/testbed/cleanup"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/simulate"
)

// runFlags are the settings of `homatb run`.
type runFlags struct {
	out, runDir, binary, registry  string
	heapProfile, runtimeMetrics    string
	cpuProfile                     string
	dryRun, clean, quiet, noReport bool
	realtime, simulate             bool
	timeout, slice                 time.Duration
	repetitions                    int
	only                           []string
	hostNIC                        string
	dispatch                       dispatchFlags
}

// newRunCmd runs a scenario end to end and writes a run directory.
func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml",
		Short: "Run a scenario: build the network, calibrate, run every experiment, report",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "results", "parent directory of run directories")
	fl.StringVar(&f.runDir, "run-dir", "", "exact run directory (default OUT/<timestamp>-<scenario>)")
	fl.StringSliceVar(&f.only, "only", nil, "run only these configurations (transport names or labels as the report names them, comma-separated)")
	fl.BoolVar(&f.simulate, "simulate", false, "run in virtual time: homatb's own engine and switch code on a discrete-event network, no packets and no root (tcp and pias on a model of TCP; docs/simulation.md)")
	fl.StringVar(&f.hostNIC, "host-nic", simulate.NICFIFO, "with --simulate: the hosts' NIC, \"fifo\" (a real NIC at the link rate) or \"shaper\" (the emulated hosts' 15 kB-burst htb, for setting a run beside an emulated one)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "validate and print the expanded plan without running")
	fl.BoolVar(&f.clean, "clean", false, "remove leftovers of earlier runs without asking")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress output")
	fl.IntVar(&f.repetitions, "repetitions", 0, "run every configuration this many times with other seeds, whatever the scenario says (1-100; 0: as the scenario says); the headline is then the median with its range")
	fl.DurationVar(&f.timeout, "timeout", 0, "stop the run after this long (0: no limit); what was measured is kept")
	fl.BoolVar(&f.noReport, "no-report", false, "do not build the report (homatb report DIR builds it later)")
	fl.BoolVar(&f.realtime, "realtime", false, "run switches and agents under SCHED_FIFO instead of nice -10 (experimental: docs/emulation.md)")
	fl.DurationVar(&f.slice, "slice", 0, "EEVDF time slice of switches and agents (100µs-100ms; experimental: docs/emulation.md; 0: the kernel's)")
	fl.StringVar(&f.binary, "binary", "", "homatb executable for the switch and agent processes (default: this one)")
	fl.StringVar(&f.registry, "registry", cleanup.DefaultRegistry, "directory where runs register for homatb clean")
	fl.StringVar(&f.heapProfile, "heap-profile", "", "write a heap profile to PREFIX-NNN.pprof every 30 s and at the end, and have the emulated agents and switches write PREFIX-agent-HOST-NNN.pprof, PREFIX-switch-ID-NNN.pprof (a debugging aid)")
	_ = fl.MarkHidden("heap-profile") // the flag exists
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file (a debugging aid)")
	_ = fl.MarkHidden("cpu-profile")
	fl.StringVar(&f.runtimeMetrics, "runtime-metrics", "", "write the Go runtime's memory classes and goroutines beside the resident size every 5 s to PREFIX-run-PID.csv, and have the emulated agents and switches write PREFIX-agent-HOST-PID.csv, PREFIX-switch-ID-PID.csv (a debugging aid)")
	_ = fl.MarkHidden("runtime-metrics")
	f.dispatch.register(cmd)
	return cmd
}

func runRun(cmd *cobra.Command, file string, f runFlags) error {
	if f.repetitions < 0 || f.repetitions > 100 {
		return usagef("--repetitions: expected 1 to 100, got %d", f.repetitions)
	}
	if f.slice != 0 && (f.slice < schedprio.MinSlice || f.slice > schedprio.MaxSlice) {
		return usagef("--slice: expected %v to %v, got %v", schedprio.MinSlice, schedprio.MaxSlice, f.slice)
	}
	opt := scenario.Options{Repetitions: f.repetitions, Simulate: f.simulate}
	if f.dispatch.executor == "local" {
		opt.CPUs = runtime.NumCPU() // the machine that will emulate it
	}
	plan, err := scenario.Load(file, opt)
	if err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	// A scenario written for the simulator runs there without the flag:
	// its rates and sizes may be beyond what this machine emulates.
	f.simulate = f.simulate || plan.Base.Simulated
	if cmd.Flags().Changed("host-nic") && !f.simulate {
		return usagef("--host-nic applies to --simulate only: an emulated run's hosts are Mininet's")
	}
	if len(f.only) > 0 {
		if err := plan.Only(f.only); err != nil {
			return usagef("%v", err)
		}
	}
	if f.simulate {
		if err := simulate.Check(plan); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	split, err := f.dispatch.split(cmd, f.simulate)
	if err != nil {
		return err
	}
	// Said before the run, not only among its fidelity notes after it.
	for _, w := range plan.Warnings() {
		fmt.Fprintf(stderr, "%s: warning: %s\n", file, w)
	}
	if f.dryRun {
		return plan.Describe(stdout)
	}
	if note := plan.WorkNote(); note != "" {
		fmt.Fprintf(stderr, "%s: %s\n", file, note)
	}
	if f.heapProfile != "" {
		defer heapProfiles(f.heapProfile, 30*time.Second, slog.Default())()
		// The run's agents and switches inherit it and profile themselves.
		if err := os.Setenv(envHeapProfile, f.heapProfile); err != nil {
			return fmt.Errorf("--heap-profile: %w", err)
		}
	}
	if f.cpuProfile != "" {
		stop, err := cpuProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if f.runtimeMetrics != "" {
		defer runtimeMetrics(fmt.Sprintf("%s-run-%d.csv", f.runtimeMetrics, os.Getpid()), 5*time.Second, slog.Default())()
		if err := os.Setenv(envRuntimeMetrics, f.runtimeMetrics); err != nil {
			return fmt.Errorf("--runtime-metrics: %w", err)
		}
	}
	if split {
		return runDispatched(cmd, plan, file, f)
	}
	if f.simulate {
		return runSimulated(cmd, plan, file, f)
	}
	bin := f.binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("find the homatb binary: %w", err)
		}
	}
	left, err := testbed.Preflight(plan, bin, f.registry)
	if err != nil {
		return err
	}
	if err := offerClean(cmd, left, f.clean); err != nil {
		return err
	}
	var progress io.Writer = os.Stderr
	if f.quiet {
		progress = nil
	}
	ctx := cmd.Context()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("run timed out after %s (--timeout)", f.timeout))
		defer cancel()
	}
	// The orchestrator of an emulated run holds little (its records go to
	// disk as they come) but ends with bursts of work (records fetched,
	// merged and compressed, the analysis): at a limit that follows its
	// live heap they are collected instead of taking new pages, as the
	// agents' are (docs/soak.md). Until the process exits.
	go memlimit.Follow(context.WithoutCancel(ctx), 100*time.Millisecond)
	res, runErr := testbed.Run(ctx, plan, testbed.Options{
		OutDir: f.out, RunDir: f.runDir, ScenarioFile: file, Binary: bin,
		Progress: progress, Registry: f.registry, NoReport: f.noReport, Realtime: f.realtime, Slice: f.slice,
	})
	if res == nil {
		return runErr
	}
	printHeadline(stdout, res.RunDir, res.Run, res.Incomplete, &res.Manifest.Manifest)
	if runErr != nil {
		fmt.Fprintf(stderr, "run stopped early; what was measured is in %s (marked incomplete)\n", res.RunDir)
		return runErr
	}
	if res.Incomplete {
		return fmt.Errorf("run %s is incomplete (see its manifest.json and fidelity warnings)", res.RunDir)
	}
	return nil
}

// runSimulated runs plan in virtual time and prints its headline.
func runSimulated(cmd *cobra.Command, plan *scenario.Plan, file string, f runFlags) error {
	ctx := cmd.Context()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("run timed out after %s (--timeout)", f.timeout))
		defer cancel()
	}
	var progress io.Writer = cmd.ErrOrStderr()
	if f.quiet {
		progress = nil
	}
	res, runErr := testbed.Run(ctx, plan, testbed.Options{OutDir: f.out, RunDir: f.runDir, ScenarioFile: file, NoReport: f.noReport,
		Registry: f.registry, Simulate: true, HostNIC: f.hostNIC, Progress: progress})
	if res == nil {
		return runErr
	}
	printHeadline(cmd.OutOrStdout(), res.RunDir, res.Run, res.Incomplete, &res.Manifest.Manifest)
	if runErr != nil {
		return runErr
	}
	if res.Incomplete {
		return fmt.Errorf("run %s is incomplete (see its manifest.json)", res.RunDir)
	}
	return nil
}

// offerClean removes leftovers of crashed runs: at once with --clean, after
// asking on a terminal, otherwise it says how.
func offerClean(cmd *cobra.Command, left []cleanup.Leftovers, force bool) error {
	if len(left) == 0 {
		return nil
	}
	w := cmd.ErrOrStderr()
	fmt.Fprintln(w, "leftovers of earlier runs found:")
	for _, l := range left {
		fmt.Fprintln(w, "  "+l.String())
	}
	if !force {
		if !term.IsTerminal(int(os.Stdin.Fd())) {
			fmt.Fprintln(w, "not removing them (no terminal to ask); run `homatb clean` or pass --clean")
			return nil
		}
		fmt.Fprint(w, "remove them now? [y/N] ")
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y") {
			return nil
		}
	}
	for _, l := range left {
		if err := cleanup.Remove(cmd.Context(), l, 2*time.Second, false); err != nil {
			return fmt.Errorf("clean %s: %w", l.Tag, err)
		}
	}
	return nil
}

// collectiveText is what the terminal's books say of a collective phase:
// its iterations' median CCT against the ideal, and how many iterations
// did not finish (a failed or unfinished step) when any did not, or none
// finished.
func collectiveText(c reports.CollectiveStats) string {
	var b strings.Builder
	if c.CCT.P50 != nil {
		fmt.Fprintf(&b, "; %s CCT P50 %s", c.Phase, reports.FormatLatency(*c.CCT.P50))
		if c.IdealCCT != nil && *c.IdealCCT > 0 {
			fmt.Fprintf(&b, " (%.2fx ideal)", *c.CCT.P50 / *c.IdealCCT)
		}
	}
	switch {
	case c.Iterations == 0 || c.Incomplete > 0:
		fmt.Fprintf(&b, "; %s %s finished, %d not", c.Phase, units.Count(c.Iterations, "iteration"), c.Incomplete)
		if n := c.NotBegun(); n > 0 {
			fmt.Fprintf(&b, ", %d not begun (the measurement ended first)", n)
		}
	case c.NotBegun() > 0:
		fmt.Fprintf(&b, " over %d of %d iterations (the measurement ended before the rest began)", c.Iterations, c.Requested)
	}
	return b.String()
}

// matrixText is a connection matrix's part of an experiment's line: its
// flows completed, the graph's completion and the slowest flow, and what
// became of the others.
func matrixText(m reports.MatrixStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "; %s %d/%d flows", m.Phase, m.Completed, m.Flows)
	if m.Completion != nil {
		fmt.Fprintf(&b, " in %s", reports.FormatLatency(*m.Completion))
	}
	if m.Slowdown.Max != nil {
		fmt.Fprintf(&b, ", slowest %.2fx its ideal", *m.Slowdown.Max)
	}
	var rest []string
	if m.Failed > 0 {
		rest = append(rest, fmt.Sprintf("%d failed", m.Failed))
	}
	if m.InFlight > 0 {
		rest = append(rest, fmt.Sprintf("%d still in flight", m.InFlight))
	}
	if m.Unstarted > 0 {
		rest = append(rest, fmt.Sprintf("%d never started, their trigger not fired by the measurement's end", m.Unstarted))
	}
	if len(rest) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(rest, ", "))
	}
	return b.String()
}

// failuresText is the reasons of an experiment's failed RPCs, as the
// terminal's books print them after the count: " (timeout 3, peer_unknown
// 1)", most frequent first; empty when none failed. The books count RPCs
// still in flight apart, so their reason (stats.Unfinished) is left out.
func failuresText(by map[string]int64) string {
	reasons := slices.DeleteFunc(slices.Collect(maps.Keys(by)), func(r string) bool { return r == stats.Unfinished })
	if len(reasons) == 0 {
		return ""
	}
	slices.SortFunc(reasons, func(a, b string) int { return cmp.Or(cmp.Compare(by[b], by[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s %d", r, by[r])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// printHeadline prints each experiment's books and, when the report was
// built, the short-message (or headline phase's) tail latency, the
// per-phase table, Homa against TCP in each configuration, and where
// report.html is.
func printHeadline(w io.Writer, runDir, run string, incomplete bool, man *rundir.Manifest) {
	fmt.Fprintf(w, "run %s: %s", run, runDir)
	if man.Mode == rundir.ModeSimulated {
		fmt.Fprint(w, " (simulated)")
	}
	if incomplete {
		fmt.Fprint(w, " (incomplete)")
	}
	fmt.Fprintln(w)
	sum := readSummary(filepath.Join(runDir, "summary.json"))
	short := map[string]float64{}
	colls := map[string][]reports.CollectiveStats{}
	mats := map[string][]reports.MatrixStats{}
	failures := map[string]map[string]int64{}
	for _, e := range sum.Experiments {
		if e.Short.P99us != nil {
			short[e.Name] = *e.Short.P99us
		}
		failures[e.Name] = e.RPCs.Failures
		colls[e.Name] = e.Collectives
		mats[e.Name] = e.Flows
	}
	for _, e := range man.Experiments {
		fmt.Fprintf(w, "  %-36s issued %d, completed %d, failed %d%s, in flight %d", e.Name, e.RPCs.Issued, e.RPCs.Completed, e.RPCs.Failed,
			failuresText(failures[e.Name]), e.RPCs.InFlight)
		if p, ok := short[e.Name]; ok {
			fmt.Fprintf(w, "; %s P99 %s", sum.ShortLabel(), reports.FormatLatency(p))
		}
		for _, tr := range e.Transports { // a shared experiment's, each on its own
			if p, ok := short[stats.PartName(e.Name, tr)]; ok {
				fmt.Fprintf(w, "; %s %s P99 %s", tr, sum.ShortLabel(), reports.FormatLatency(p))
			}
		}
		for _, c := range colls[e.Name] {
			fmt.Fprint(w, collectiveText(c))
		}
		for _, m := range mats[e.Name] {
			fmt.Fprint(w, matrixText(m))
		}
		fmt.Fprintln(w)
		for _, n := range sum.Notes(e.Name) {
			fmt.Fprintf(w, "    %s\n", n)
		}
		for _, tr := range e.Transports {
			for _, n := range sum.Notes(stats.PartName(e.Name, tr)) {
				fmt.Fprintf(w, "    %s: %s\n", tr, n)
			}
		}
		for _, fw := range e.Fidelity {
			fmt.Fprintf(w, "    fidelity: %s\n", fw)
		}
	}
	for _, fw := range man.Fidelity {
		fmt.Fprintf(w, "  fidelity: %s\n", fw)
	}
	for _, l := range phaseLines(sum) {
		fmt.Fprintln(w, l)
	}
	if lines := repetitionLines(sum); len(lines) > 0 {
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	} else {
		for _, v := range sum.Versus() {
			if line := versusLine(v); line != "" {
				fmt.Fprintln(w, line)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(runDir, "report.html")); err == nil {
		fmt.Fprintf(w, "report: %s\n", filepath.Join(runDir, "report.html"))
	}
}

// versusLine is the headline of one configuration against the baseline:
// short-message P99 (and P50) of both and how many times lower the
// faster one's is; "" without both P99s.
func versusLine(v reports.Versus) string {
	b, o := v.Base, v.Other
	if b.ShortP99us == nil || o.ShortP99us == nil || v.RatioP99 == nil {
		return ""
	}
	lat := reports.FormatLatency
	label := v.Label
	if label == "" {
		label = "short-message"
	}
	line := fmt.Sprintf("headline%s: %s P99 %s %s, %s %s: %s",
		paramsSuffix(v.Params), label, v.Baseline, lat(*b.ShortP99us), v.Config, lat(*o.ShortP99us), timesLower(*v.RatioP99, v.Baseline, v.Config))
	if b.ShortP50us != nil && o.ShortP50us != nil && v.RatioP50 != nil {
		line += fmt.Sprintf("; P50 %s vs %s (%s)", lat(*b.ShortP50us), lat(*o.ShortP50us), timesLower(*v.RatioP50, v.Baseline, v.Config))
	}
	return line
}

// timesLower says which of two configurations was faster by how much,
// given the other's value over the baseline's.
func timesLower(r float64, baseline, other string) string {
	if r >= 1 || r <= 0 {
		return fmt.Sprintf("%.1fx lower with %s", r, baseline)
	}
	return fmt.Sprintf("%.1fx lower with %s", 1/r, other)
}

// paramsSuffix is " (params)" for a named group of params, "" for none.
func paramsSuffix(p string) string {
	if p == "" {
		return ""
	}
	return " (" + p + ")"
}

// repetitionLines is the headline of a run with repetitions: per group of
// params and configuration other than the baseline, the median
// short-message P99 and P50 of both over the repetitions with their range,
// and the median ratio with its range; none when nothing was repeated.
func repetitionLines(sum *reports.Summary) []string {
	var lines []string
	for _, r := range sum.Ratios {
		if r.Repetitions < 2 || r.P99 == nil {
			continue
		}
		base, other := r.Rows(sum.Headline)
		if base == nil || other == nil || base.ShortP99us == nil || other.ShortP99us == nil {
			continue
		}
		lat := func(s *reports.Spread) string {
			return fmt.Sprintf("%s (%s–%s)", reports.FormatLatency(s.Median), reports.FormatLatency(s.Min), reports.FormatLatency(s.Max))
		}
		line := fmt.Sprintf("headline%s, median of %d repetitions (range): %s P99 %s %s, %s %s; %s/%s %.1f (%.1f–%.1f)x",
			paramsString(r.Params), r.Repetitions, sum.ShortLabel(), r.Baseline, lat(base.ShortP99us), r.Config, lat(other.ShortP99us),
			r.Config, r.Baseline, r.P99.Median, r.P99.Min, r.P99.Max)
		if base.ShortP50us != nil && other.ShortP50us != nil {
			line += fmt.Sprintf("; P50 %s %s, %s %s", r.Baseline, lat(base.ShortP50us), r.Config, lat(other.ShortP50us))
		}
		lines = append(lines, line)
	}
	return lines
}

// paramsString formats a configuration's params as " (k=v, ...)", "" for
// none.
func paramsString(p map[string]any) string {
	if len(p) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, p[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// readSummary reads summary.json; an unreadable one reads as empty (the
// run's own books are printed from the manifest either way).
func readSummary(path string) *reports.Summary {
	var s reports.Summary
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &s)
	}
	return &s
}
