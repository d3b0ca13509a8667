// Package dispatch runs a run's experiments as separate tasks — processes
// on this machine (homatb run --jobs N) or the tasks of a Slurm job array
// (--executor slurm) — each `homatb run-experiment RUN_DIR NAME` writing a
// run directory of its own under RUN_DIR/tasks, and merges those into one
// run directory, as if the run had run in one process: the same rpcs.csv,
// in the same order, the same summary.json and report for the same seeds.
package dispatch

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/homatb/homatb/executor/slurm"
	"github.com/homatb/homatb/rundir"
)

// Outcome is how one task ended, as its executor saw it.
type Outcome struct {
	// State is Slurm's job state, or for a local task COMPLETED, FAILED or
	// CANCELLED.
	State string
	// Detail says more: the exit code, Slurm's reason.
	Detail string
}

func (o Outcome) String() string {
	if o.Detail == "" {
		return o.State
	}
	return o.State + " (" + o.Detail + ")"
}

// Executor runs every task of a dispatched run to its end.
type Executor interface {
	// Run runs the tasks of d (task i runs d.Experiments[i]) and returns
	// each task's outcome by index. progress, if not nil, gets a line when
	// something changed.
	Run(ctx context.Context, dir string, d *rundir.Dispatch, progress func(string)) (map[int]Outcome, error)
}

// ScenarioHash is the SHA-256 of the scenario file's bytes, which a task
// checks against the dispatch's.
func ScenarioHash(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// Prepare creates the run directory's tasks/ and writes dispatch.json.
func Prepare(dir string, d *rundir.Dispatch) error {
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o755); err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	d.Submitted = time.Now().UnixNano()
	return rundir.WriteDispatch(dir, d)
}

// Local runs the tasks as child processes of this machine, Jobs at once.
type Local struct {
	// Binary is the homatb executable the tasks run.
	Binary string
	// Jobs is how many tasks run at once (at least 1).
	Jobs int
	// Order is the order the tasks start in, as indices of d.Experiments
	// (LongestFirst); nil starts them in the plan's order. Either way the
	// merged run is the same: only when each task ends changes.
	Order []int
}

// LongestFirst orders tasks by their expected work, the most first, ties
// in the plan's order: with a task per experiment and Jobs at once, the
// last to start are the shortest, so the jobs end close together.
func LongestFirst(work []float64) []int {
	order := make([]int, len(work))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(work[b], work[a]) })
	return order
}

// Run implements Executor: Jobs worker processes (homatb run-experiment
// --worker) each take the next experiment in Order when they finish one,
// so an experiment does not pay for a process of its own: one starting
// afresh grows its heap from nothing, which cost a split run about a
// tenth more CPU (docs/simulation.md, "Where --jobs 2's extra CPU goes").
// A worker that dies fails its experiment and is replaced for the rest.
func (l Local) Run(ctx context.Context, dir string, d *rundir.Dispatch, progress func(string)) (map[int]Outcome, error) {
	jobs := max(l.Jobs, 1)
	out := make(map[int]Outcome, len(d.Experiments))
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for n := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w *worker
			defer func() { w.close() }()
			for i := range next {
				name := d.Experiments[i]
				var o Outcome
				if w == nil {
					var err error
					if w, err = l.startWorker(ctx, dir, n); err != nil {
						o = Outcome{State: "FAILED", Detail: err.Error()}
					}
				}
				if w != nil {
					o = w.run(ctx, dir, name)
					if w.cmd == nil { // it stopped: another takes the rest
						w = nil
					}
				}
				mu.Lock()
				out[i] = o
				done := len(out)
				mu.Unlock()
				if progress != nil {
					progress(fmt.Sprintf("task %d/%d %s: %s", done, len(d.Experiments), name, o))
				}
			}
		}()
	}
	order := l.Order
	if len(order) != len(d.Experiments) {
		order = LongestFirst(make([]float64, len(d.Experiments)))
	}
feed:
	for _, i := range order {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for i := range d.Experiments {
		if _, ok := out[i]; !ok {
			out[i] = Outcome{State: "CANCELLED", Detail: "the run stopped before the task started"}
		}
	}
	return out, ctx.Err()
}

// WorkerLog is where worker n of a local run writes what it prints
// between experiments (each experiment's own output goes to its TaskLog).
func WorkerLog(dir string, n int) string {
	return filepath.Join(dir, "tasks", fmt.Sprintf("worker-%d.log", n))
}

// worker is one `homatb run-experiment --worker DIR` process: it reads
// experiment names on its standard input and answers each on its fourth
// file descriptor (a pipe of its own, so nothing the experiment prints can
// be taken for an answer) with "ok" or "error\t<reason>".
type worker struct {
	cmd     *exec.Cmd
	names   io.WriteCloser
	answers *bufio.Reader
	pipe    *os.File
	log     *os.File
}

// startWorker starts worker n of dir's run.
func (l Local) startWorker(ctx context.Context, dir string, n int) (*worker, error) {
	log, err := os.Create(WorkerLog(dir, n))
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	r, wr, err := os.Pipe()
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	cmd := exec.CommandContext(ctx, l.Binary, "run-experiment", "--worker", dir)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{wr}
	// On cancellation the worker gets an interrupt, as a user's ^C, so
	// its experiment keeps what it measured.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 15 * time.Second
	names, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	wr.Close() // the worker holds its own copy
	if err != nil {
		r.Close()
		log.Close()
		return nil, fmt.Errorf("dispatch: start a worker: %w", err)
	}
	return &worker{cmd: cmd, names: names, answers: bufio.NewReader(r), pipe: r, log: log}, nil
}

// run has the worker run experiment name and waits for its answer.
func (w *worker) run(ctx context.Context, dir, name string) Outcome {
	taskLog := rundir.TaskLog(dir, name)
	if _, err := io.WriteString(w.names, name+"\n"); err != nil {
		return w.lost(ctx, name, err)
	}
	line, err := w.answers.ReadString('\n')
	if err != nil {
		return w.lost(ctx, name, err)
	}
	line = strings.TrimSuffix(line, "\n")
	switch {
	case line == "ok":
		return Outcome{State: "COMPLETED"}
	case ctx.Err() != nil:
		return Outcome{State: "CANCELLED", Detail: context.Cause(ctx).Error()}
	}
	reason, _ := strings.CutPrefix(line, "error\t")
	return Outcome{State: "FAILED", Detail: fmt.Sprintf("%s; log %s", reason, taskLog)}
}

// lost is the outcome of an experiment whose worker stopped answering.
func (w *worker) lost(ctx context.Context, name string, err error) Outcome {
	if werr := w.wait(); werr != nil {
		err = werr
	}
	if ctx.Err() != nil {
		return Outcome{State: "CANCELLED", Detail: context.Cause(ctx).Error()}
	}
	return Outcome{State: "FAILED", Detail: fmt.Sprintf("its worker stopped during %s: %v; log %s", name, err, w.log.Name())}
}

// wait ends the worker: its input closed, it exits when its experiment
// (if any) has; cmd is nil from then on.
func (w *worker) wait() error {
	if w.cmd == nil {
		return nil
	}
	w.names.Close()
	err := w.cmd.Wait()
	w.cmd = nil
	w.pipe.Close()
	w.log.Close()
	return err
}

// close ends a worker that may be nil.
func (w *worker) close() {
	if w != nil {
		w.wait()
	}
}

// Slurm runs the tasks as one Slurm job array.
type Slurm struct {
	// Binary is the homatb executable, on a path every node sees.
	Binary string
	Client *slurm.Client
	// Poll is how often the job's state is read (default 5 s).
	Poll time.Duration
}

// Submit submits the array and records its id in dispatch.json.
func (s Slurm) Submit(ctx context.Context, dir string, d *rundir.Dispatch) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	id, err := s.Client.Submit(ctx, slurm.Array{Name: "homatb-" + filepath.Base(abs), Tasks: len(d.Experiments),
		Command: []string{s.Binary, "run-experiment", abs}, Dir: abs, LogDir: filepath.Join(abs, "tasks")})
	if err != nil {
		return err
	}
	d.JobID = id
	return rundir.WriteDispatch(dir, d)
}

// Run implements Executor: it submits the array unless dispatch.json
// already names one, then waits for every task.
func (s Slurm) Run(ctx context.Context, dir string, d *rundir.Dispatch, progress func(string)) (map[int]Outcome, error) {
	if d.JobID == "" {
		if err := s.Submit(ctx, dir, d); err != nil {
			return nil, err
		}
		if progress != nil {
			progress(fmt.Sprintf("submitted Slurm job array %s: %d tasks", d.JobID, len(d.Experiments)))
		}
	}
	poll := s.Poll
	if poll == 0 {
		poll = 5 * time.Second
	}
	st, err := s.Client.Wait(ctx, d.JobID, len(d.Experiments), poll, func(st map[int]slurm.TaskState) {
		if progress != nil {
			progress(fmt.Sprintf("job %s: %s", d.JobID, slurm.Summary(st)))
		}
	})
	return outcomes(d, st), err
}

// States reads what Slurm says of each task now, for merging a detached
// run's finished tasks.
func (s Slurm) States(ctx context.Context, d *rundir.Dispatch) (map[int]Outcome, error) {
	st, err := s.Client.States(ctx, d.JobID, len(d.Experiments))
	if err != nil {
		return nil, err
	}
	return outcomes(d, st), nil
}

func outcomes(d *rundir.Dispatch, st map[int]slurm.TaskState) map[int]Outcome {
	out := map[int]Outcome{}
	for i := range d.Experiments {
		s, ok := st[i]
		if !ok {
			continue
		}
		var detail []string
		if s.ExitCode != "" && s.ExitCode != "0:0" {
			detail = append(detail, "exit "+s.ExitCode)
		}
		if s.Reason != "" && s.Reason != "None" {
			detail = append(detail, s.Reason)
		}
		detail = append(detail, "log "+slurm.LogPath(filepath.Join("tasks"), i))
		out[i] = Outcome{State: s.State, Detail: strings.Join(detail, "; ")}
	}
	return out
}
