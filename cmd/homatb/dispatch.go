package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/executor/slurm"
	"github.com/homatb/homatb/internal/memlimit"
	"github.com/homatb/homatb/reports"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed"
	"github.com/homatb/homatb/testbed/cleanup"
	"github.com/homatb/homatb/testbed/dispatch"
	"github.com/homatb/homatb/testbed/scenario"
)

// dispatchFlags are `homatb run`'s settings for running experiments as
// separate tasks.
type dispatchFlags struct {
	executor  string
	jobs      int
	detach    bool
	partition string
	time      string
	mem       string
	sbatch    []string
	poll      time.Duration
}

func (d *dispatchFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&d.executor, "executor", "local", `where experiments run: "local" (this process, or --jobs processes of this machine) or "slurm" (one Slurm job array, a task per experiment; docs/multi-machine.md)`)
	fl.IntVar(&d.jobs, "jobs", 1, "run this many experiments at once, in as many worker processes, results byte-identical to one at a time (--simulate only: emulated experiments share this machine's CPUs and would distort each other)")
	fl.BoolVar(&d.detach, "detach", false, "with --executor slurm: submit and return; homatb report RUN_DIR merges what has finished")
	fl.StringVar(&d.partition, "slurm-partition", "", "with --executor slurm: sbatch --partition")
	fl.StringVar(&d.time, "slurm-time", "", "with --executor slurm: sbatch --time per task (e.g. 30:00)")
	fl.StringVar(&d.mem, "slurm-mem", "", "with --executor slurm: sbatch --mem per task (e.g. 4G)")
	fl.StringArrayVar(&d.sbatch, "sbatch-arg", nil, "with --executor slurm: a further sbatch argument (repeatable)")
	fl.DurationVar(&d.poll, "slurm-poll", 5*time.Second, "with --executor slurm: how often to read the job's state")
}

// split reports whether the run's experiments go to separate tasks, or a
// usage error when the flags do not fit.
func (d *dispatchFlags) split(cmd *cobra.Command, simulate bool) (bool, error) {
	switch d.executor {
	case "local", "slurm":
	default:
		return false, usagef("--executor: expected local or slurm, got %q", d.executor)
	}
	if d.jobs < 1 || d.jobs > 64 {
		return false, usagef("--jobs: expected 1 to 64, got %d", d.jobs)
	}
	if d.jobs > 1 && !simulate {
		return false, usagef("--jobs %d: emulated experiments share this machine's CPUs and would distort each other; run them one at a time, or on a Slurm cluster (--executor slurm, one experiment per node)", d.jobs)
	}
	if d.jobs > 1 && d.executor == "slurm" {
		return false, usagef("--jobs applies to --executor local: Slurm decides how many tasks run at once")
	}
	if d.executor != "slurm" {
		for _, f := range []string{"detach", "slurm-partition", "slurm-time", "slurm-mem", "sbatch-arg", "slurm-poll"} {
			if cmd.Flags().Changed(f) {
				return false, usagef("--%s applies to --executor slurm only", f)
			}
		}
	}
	return d.executor == "slurm" || d.jobs > 1, nil
}

// runDispatched runs plan's experiments as tasks, merges their records
// and builds the report.
func runDispatched(cmd *cobra.Command, plan *scenario.Plan, file string, f runFlags) error {
	d, err := newDispatch(plan, file, f.repetitions, f.only, f.simulate, f.hostNIC, f.dispatch.executor)
	if err != nil {
		return err
	}
	bin := f.binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("find the homatb binary: %w", err)
		}
	}
	dir := f.runDir
	if dir == "" {
		dir = testbed.DefaultRunDir(f.out, plan, f.simulate, time.Now())
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("run directory %s is not empty: choose another --run-dir or remove it", dir)
	}
	if err := dispatch.Prepare(dir, d); err != nil {
		return err
	}
	ctx := cmd.Context()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("run timed out after %s (--timeout)", f.timeout))
		defer cancel()
	}
	stderr := cmd.ErrOrStderr()
	progress := func(line string) {
		if !f.quiet {
			fmt.Fprintln(stderr, line)
		}
	}
	order, err := longestFirst(plan)
	if err != nil {
		return err
	}
	var ex dispatch.Executor = dispatch.Local{Binary: bin, Jobs: f.dispatch.jobs, Order: order}
	if f.dispatch.executor == "slurm" {
		sl := dispatch.Slurm{Binary: bin, Client: slurmClient(f.dispatch, f.simulate), Poll: f.dispatch.poll}
		if f.dispatch.detach {
			if err := sl.Submit(ctx, dir, d); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "submitted Slurm job array %s (%d tasks) for %s; `homatb report %s` merges what has finished\n", d.JobID, len(d.Experiments), dir, dir)
			return nil
		}
		ex = sl
	}
	outcomes, runErr := ex.Run(ctx, dir, d, progress)
	return mergeAndReport(cmd, dir, d, outcomes, runErr, f.noReport, f.dispatch.jobs)
}

// newDispatch describes plan's run (from scenario file, with the run's
// options) as tasks: the scenario by absolute path and hash, so that every
// task runs the same file, and the experiments by name.
func newDispatch(plan *scenario.Plan, file string, reps int, only []string, simulate bool, hostNIC, executor string) (*rundir.Dispatch, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	hash, err := dispatch.ScenarioHash(abs)
	if err != nil {
		return nil, err
	}
	d := &rundir.Dispatch{Scenario: abs, ScenarioSHA256: hash, Repetitions: reps, Only: only,
		Simulate: simulate, HostNIC: hostNIC, Executor: executor}
	for _, e := range plan.Experiments {
		d.Experiments = append(d.Experiments, e.Name)
	}
	return d, nil
}

// longestFirst orders plan's experiments for local tasks by what each
// offers, RPCs and their packets (a simulation's events grow with both),
// the most first: the jobs then end close together.
func longestFirst(plan *scenario.Plan) ([]int, error) {
	work := make([]float64, len(plan.Experiments))
	for i, e := range plan.Experiments {
		rpcs, pkts, err := e.Scenario.Offered()
		if err != nil {
			return nil, fmt.Errorf("experiment %s: %w", e.Name, err)
		}
		work[i] = rpcs + pkts
	}
	return dispatch.LongestFirst(work), nil
}

// slurmClient is the Slurm client of the flags. An emulated task builds a
// whole network on its node: it gets the node to itself.
func slurmClient(d dispatchFlags, simulate bool) *slurm.Client {
	opt := slurm.Options{Partition: d.partition, Time: d.time, Mem: d.mem, Extra: d.sbatch}
	if !simulate {
		opt.Extra = append([]string{"--exclusive"}, opt.Extra...)
	}
	return slurm.New(opt)
}

// mergeAndReport merges a dispatched run's tasks, builds its report
// (analysing jobs experiments at once) and prints its headline.
func mergeAndReport(cmd *cobra.Command, dir string, d *rundir.Dispatch, outcomes map[int]dispatch.Outcome, runErr error, noReport bool, jobs int) error {
	merged, err := mergeTasks(cmd.Context(), dir, d, outcomes, noReport, jobs)
	if err != nil {
		return errors.Join(runErr, err)
	}
	printHeadline(cmd.OutOrStdout(), dir, merged.Manifest.Run, merged.Manifest.Incomplete, merged.Manifest)
	if runErr != nil {
		return runErr
	}
	if merged.Manifest.Incomplete {
		return fmt.Errorf("run %s is incomplete: %d of %d experiments not measured (see its manifest.json's fidelity)", dir, len(merged.Missing), len(d.Experiments))
	}
	return nil
}

// mergeTasks merges a dispatched run's tasks into dir, builds its report
// (analysing jobs experiments at once) unless noReport, and compresses the
// large records as a run in one process leaves them.
func mergeTasks(ctx context.Context, dir string, d *rundir.Dispatch, outcomes map[int]dispatch.Outcome, noReport bool, jobs int) (*dispatch.Merged, error) {
	merged, err := dispatch.Merge(dir, d, outcomes)
	if err != nil {
		return nil, err
	}
	if !noReport {
		// The report holds an experiment's records at a time, or a few
		// (jobs): near the machine's memory, collected more often
		// instead of doubling past it.
		memlimit.Machine()
		if _, err := reports.Build(context.WithoutCancel(ctx), dir, reports.WithJobs(jobs)); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
	}
	// The merged records and the report's anatomy.csv, once read.
	if _, err := rundir.CompressLarge(dir, rundir.CompressAbove); err != nil {
		return nil, err
	}
	return merged, nil
}

// newRunExperimentCmd is what each task of a dispatched run executes.
func newRunExperimentCmd() *cobra.Command {
	var worker bool
	cmd := &cobra.Command{
		Use:    "run-experiment RUN_DIR [NAME]",
		Short:  "Run one experiment of a dispatched run into RUN_DIR/tasks/NAME (a task of --jobs or --executor slurm)",
		Hidden: true,
		Args:   cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if worker {
				if len(args) != 1 {
					return usagef("run-experiment --worker takes RUN_DIR only: the names come on its standard input")
				}
				return runExperimentWorker(cmd, args[0])
			}
			return runExperimentTask(cmd, args)
		},
	}
	cmd.Flags().BoolVar(&worker, "worker", false, "run the experiments named on standard input one after another, answering each on file descriptor 3 (a worker of --jobs)")
	return cmd
}

// runExperimentWorker runs the experiments of dir's run named on its
// standard input, one after another in this process (dispatch.Local's
// worker), each with its output in its own task log, and answers each on
// file descriptor 3 with "ok" or "error\t<reason>".
func runExperimentWorker(cmd *cobra.Command, dir string) error {
	answers := os.NewFile(3, "answers")
	if answers == nil {
		return errors.New("run-experiment --worker: no file descriptor 3 to answer on")
	}
	defer answers.Close()
	// Each experiment's output goes to its task log: the worker's own
	// standard output and error are put back after it.
	var saved [2]int
	for i := range saved {
		var err error
		if saved[i], err = unix.Dup(i + 1); err != nil {
			return fmt.Errorf("run-experiment --worker: %w", err)
		}
		defer unix.Close(saved[i])
	}
	// point makes file descriptors 1 and 2 those given.
	point := func(out, errOut int) error {
		return errors.Join(unix.Dup3(out, 1, 0), unix.Dup3(errOut, 2, 0))
	}
	in := bufio.NewScanner(cmd.InOrStdin())
	for in.Scan() {
		name := strings.TrimSpace(in.Text())
		if name == "" {
			continue
		}
		err := func() error {
			log, err := os.Create(rundir.TaskLog(dir, name))
			if err != nil {
				return err
			}
			defer log.Close()
			if err := point(int(log.Fd()), int(log.Fd())); err != nil {
				return err
			}
			err = runExperimentTask(cmd, []string{dir, name})
			if err != nil {
				fmt.Fprintln(os.Stderr, "Error:", err)
			}
			// Back to the worker's own output before the log closes.
			return errors.Join(err, point(saved[0], saved[1]))
		}()
		answer := "ok\n"
		if err != nil {
			answer = "error\t" + strings.Join(strings.Fields(err.Error()), " ") + "\n"
		}
		if _, werr := io.WriteString(answers, answer); werr != nil {
			return fmt.Errorf("run-experiment --worker: answer for %s: %w", name, werr)
		}
		if cmd.Context().Err() != nil {
			return context.Cause(cmd.Context())
		}
	}
	return in.Err()
}

func runExperimentTask(cmd *cobra.Command, args []string) error {
	dir := args[0]
	d, err := rundir.ReadDispatch(dir)
	if err != nil {
		return fmt.Errorf("run-experiment: %w", err)
	}
	var name string
	if len(args) == 2 {
		name = args[1]
	} else {
		// A task of a Slurm job array knows its number only.
		id := os.Getenv("SLURM_ARRAY_TASK_ID")
		i, err := strconv.Atoi(id)
		if err != nil || i < 0 || i >= len(d.Experiments) {
			return fmt.Errorf("run-experiment %s: no NAME given and SLURM_ARRAY_TASK_ID is %q, expected 0 to %d", dir, id, len(d.Experiments)-1)
		}
		name = d.Experiments[i]
	}
	hash, err := dispatch.ScenarioHash(d.Scenario)
	if err != nil {
		return fmt.Errorf("run-experiment: the run's scenario: %w", err)
	}
	if hash != d.ScenarioSHA256 {
		return fmt.Errorf("run-experiment: %s changed since the run was submitted (SHA-256 %s, submitted %s): its experiments would not be one run's", d.Scenario, hash, d.ScenarioSHA256)
	}
	plan, err := scenario.Load(d.Scenario, scenario.Options{Repetitions: d.Repetitions, Simulate: d.Simulate})
	if err != nil {
		return err
	}
	if len(d.Only) > 0 {
		if err := plan.Only(d.Only); err != nil {
			return err
		}
	}
	task := rundir.TaskDir(dir, name)
	if _, err := os.Stat(filepath.Join(task, rundir.ManifestFile)); err == nil {
		// A requeued task starts afresh.
		if err := os.RemoveAll(task); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	opt := testbed.Options{RunDir: task, ScenarioFile: d.Scenario, NoReport: true, Plain: true, Experiments: []string{name},
		Simulate: d.Simulate, HostNIC: d.HostNIC, Registry: cleanup.DefaultRegistry}
	if !d.Simulate {
		bin, err := os.Executable()
		if err != nil {
			return err
		}
		opt.Binary = bin
		// Each node checks that it can build the network: root, Mininet.
		if _, err := testbed.Preflight(plan, bin, opt.Registry); err != nil {
			return fmt.Errorf("run-experiment %s on %s: %w", name, hostname(), err)
		}
	}
	res, err := testbed.Run(cmd.Context(), plan, opt)
	// What the task wrote goes to the merge in frames, also when it
	// stopped early.
	if cerr := dispatch.CompressTask(task); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return err
	}
	if res.Incomplete {
		return fmt.Errorf("experiment %s is incomplete (see %s)", name, task)
	}
	return nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// mergeDetached merges the finished tasks of a dispatched run that has
// not been merged yet (homatb run --executor slurm --detach), saying which
// tasks are still to come; a run in one process is left as it is.
func mergeDetached(cmd *cobra.Command, dir string) error {
	d, err := rundir.ReadDispatch(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || d.Merged {
		return err
	}
	var outcomes map[int]dispatch.Outcome
	if d.JobID != "" {
		sl := dispatch.Slurm{Client: slurm.New(slurm.Options{})}
		if outcomes, err = sl.States(cmd.Context(), d); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "reading the Slurm job's states: %v; merging what the tasks wrote\n", err)
		}
	}
	merged, err := dispatch.Merge(dir, d, outcomes)
	if err != nil {
		return err
	}
	for _, m := range merged.Missing {
		fmt.Fprintln(cmd.ErrOrStderr(), m)
	}
	if len(merged.Missing) > 0 {
		// Merge again when the rest has finished.
		d.Merged = false
		return rundir.WriteDispatch(dir, d)
	}
	_, err = rundir.CompressLarge(dir, rundir.CompressAbove)
	return err
}
