package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/homatb/homatb/internal/memlimit"
	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
	"github.com/spf13/cobra"
)

// newReportCmd is `homatb report DIR`: rebuild every statistic, export and
// report.html of a run directory from its raw records.
func newReportCmd() *cobra.Command {
	var (
		parent   string
		exact    string
		maxExact int
		minBin   int
		shortMax int64
		jobs     int
		quiet    bool
		profile  string
		heap     string
	)
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Rebuild summary.json, by_size.csv, cperf .data files and report.html from a run directory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Quiet keeps warnings: they say the report may mislead.
			level := slog.LevelInfo
			if quiet {
				level = slog.LevelWarn
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			opts := []reports.Option{
				reports.WithLogger(logger),
				reports.WithMaxExactLengths(maxExact),
				reports.WithMinBinSamples(minBin),
				reports.WithShortMaxLength(shortMax),
			}
			if jobs < 1 || jobs > 64 {
				return usagef("--jobs: expected 1 to 64, got %d", jobs)
			}
			opts = append(opts, reports.WithJobs(jobs))
			if profile != "" {
				stop, err := cpuProfile(profile)
				if err != nil {
					return err
				}
				defer stop()
			}
			if heap != "" {
				defer heapProfiles(heap, 10*time.Second, logger)()
			}
			memlimit.Machine()
			if err := mergeDetached(cmd, args[0]); err != nil {
				return err
			}
			out, err := outDir(parent, exact, filepath.Base(filepath.Clean(args[0])))
			if err != nil {
				return err
			}
			if out != "" {
				opts = append(opts, reports.WithOutputDir(out))
			}
			sum, err := reports.Build(cmd.Context(), args[0], opts...)
			if err != nil {
				return err
			}
			if quiet {
				return nil
			}
			dir := out
			if dir == "" {
				dir = args[0]
			}
			w := cmd.OutOrStdout()
			for _, e := range sum.Experiments {
				fmt.Fprintf(w, "%-28s %-5s completed %d/%d%s  %s P50 %s  P99 %s  goodput %.1f Mbit/s\n",
					e.Name, e.Transport, e.RPCs.Completed, e.RPCs.Issued, unfinishedText(e.RPCs), sum.ShortLabel(), optUs(e.Short.P50us), optUs(e.Short.P99us), e.GoodputGbps*1e3)
			}
			for _, l := range phaseLines(sum) {
				fmt.Fprintln(w, l)
			}
			fmt.Fprintln(w, filepath.Join(dir, "report.html"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&parent, "out", "", "write the outputs under this parent directory, in a directory named as DIR, instead of into DIR")
	f.StringVar(&exact, "run-dir", "", "write the outputs into exactly this directory instead of into DIR")
	f.IntVar(&maxExact, "max-exact-lengths", 100, "bin by exact request length when there are at most this many distinct lengths, else log-spaced bins")
	f.IntVar(&minBin, "min-bin-samples", 1000, "fewest samples in a log-spaced size bin")
	f.Int64Var(&shortMax, "short-max", rundir.ShortMaxBytes, "largest request and response (bytes) of a short message: an RPC is short when both are at most this")
	f.IntVar(&jobs, "jobs", 1, "analyse this many experiments at once (a core each; the outputs are the same)")
	f.BoolVarP(&quiet, "quiet", "q", false, "print nothing on success")
	f.StringVar(&profile, "cpu-profile", "", "write a CPU profile of the report to this file (a debugging aid)")
	_ = f.MarkHidden("cpu-profile")
	f.StringVar(&heap, "heap-profile", "", "write a heap profile to PREFIX-NNN.pprof every 10 s and at the end (a debugging aid)")
	_ = f.MarkHidden("heap-profile")
	return cmd
}

// unfinishedText is what became of the RPCs that did not complete, with
// the failures' reasons: "" when every RPC completed.
func unfinishedText(c stats.RPCCounts) string {
	var s string
	if c.Failed > 0 {
		s += fmt.Sprintf(", failed %d%s", c.Failed, failuresText(c.Failures))
	}
	if c.InFlight > 0 {
		s += fmt.Sprintf(", in flight %d", c.InFlight)
	}
	return s
}

// optUs writes a latency in µs with its unit, "-" for none.
func optUs(v *float64) string {
	if v == nil {
		return "-"
	}
	return reports.FormatLatency(*v)
}
