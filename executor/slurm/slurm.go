// Package slurm hands work to a Slurm cluster through its own commands
// (sbatch, squeue, scontrol, scancel, sacct): one job array per run, one
// task per experiment, and the state of every task until each has ended.
// It knows nothing of homatb's runs; the run lifecycle decides what a task
// executes and what its end means.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options are the sbatch settings a user gives (flags or the scenario's
// executor block).
type Options struct {
	// Partition is sbatch's --partition; empty: the cluster's default.
	Partition string
	// Time is sbatch's --time (e.g. "30:00"); empty: the partition's limit.
	Time string
	// Mem is sbatch's --mem per task (e.g. "4G"); empty: the default.
	Mem string
	// Extra are further sbatch arguments, passed as they are.
	Extra []string
	// Env is added to the environment of every Slurm command (SLURM_CONF
	// for a cluster configured outside /etc/slurm).
	Env []string
}

// Array is one job array: Tasks tasks, numbered from 0, each running
// Command with SLURM_ARRAY_TASK_ID set to its number.
type Array struct {
	// Name is the job's name in squeue.
	Name string
	// Tasks is how many tasks the array has.
	Tasks int
	// Command is the command every task runs (argv; the task reads its
	// number from SLURM_ARRAY_TASK_ID).
	Command []string
	// Dir is the tasks' working directory, on a filesystem every node sees.
	Dir string
	// LogDir is where each task's standard output and error go, as
	// LogPath names them.
	LogDir string
}

// LogPath is the log file of task i of an array written to dir.
func LogPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("task-%d.log", i))
}

// Client runs Slurm's commands with the user's options.
type Client struct {
	opt Options
}

// New returns a client using opt.
func New(opt Options) *Client { return &Client{opt: opt} }

func (c *Client) command(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(cmd.Environ(), c.opt.Env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Submit submits the array and returns its job id.
func (c *Client) Submit(ctx context.Context, a Array) (string, error) {
	if a.Tasks < 1 {
		return "", fmt.Errorf("submit %s: an array needs at least one task, got %d", a.Name, a.Tasks)
	}
	if len(a.Command) == 0 {
		return "", fmt.Errorf("submit %s: no command", a.Name)
	}
	args := []string{"--parsable", "--job-name=" + a.Name, fmt.Sprintf("--array=0-%d", a.Tasks-1),
		"--chdir=" + a.Dir, "--output=" + filepath.Join(a.LogDir, "task-%a.log")}
	if c.opt.Partition != "" {
		args = append(args, "--partition="+c.opt.Partition)
	}
	if c.opt.Time != "" {
		args = append(args, "--time="+c.opt.Time)
	}
	if c.opt.Mem != "" {
		args = append(args, "--mem="+c.opt.Mem)
	}
	args = append(args, c.opt.Extra...)
	out, err := c.command(ctx, []byte(batchScript(a.Command)), "sbatch", args...)
	if err != nil {
		return "", fmt.Errorf("submit %s: %w", a.Name, err)
	}
	// --parsable prints "id" or "id;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("submit %s: sbatch printed %q, expected a job id", a.Name, out)
	}
	return id, nil
}

// batchScript is the script sbatch runs for every task: the command, each
// argument quoted for the shell.
func batchScript(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return "#!/bin/sh\nexec " + strings.Join(q, " ") + "\n"
}

// Cancel cancels task i of job id.
func (c *Client) Cancel(ctx context.Context, id string, i int) error {
	_, err := c.command(ctx, nil, "scancel", fmt.Sprintf("%s_%d", id, i))
	return err
}

// TaskState is what Slurm says of one task.
type TaskState struct {
	// State is Slurm's job state: PENDING, RUNNING, COMPLETED, FAILED,
	// CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, …; UNKNOWN when the
	// cluster no longer knows the task.
	State string
	// ExitCode is Slurm's "code:signal".
	ExitCode string
	// Reason is why a pending task waits, or why a task ended.
	Reason string
}

// Ended reports whether the task will not run any further.
func (s TaskState) Ended() bool {
	switch s.State {
	case "", "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED":
		return false
	}
	return true
}

// OK reports whether the task ended well.
func (s TaskState) OK() bool {
	return s.State == "COMPLETED" && (s.ExitCode == "" || s.ExitCode == "0:0")
}

func (s TaskState) String() string {
	r := s.State
	if s.ExitCode != "" && s.ExitCode != "0:0" {
		r += " (exit " + s.ExitCode + ")"
	}
	if s.Reason != "" && s.Reason != "None" {
		r += ": " + s.Reason
	}
	return r
}

// States returns the state of each task of job id the cluster knows:
// scontrol for tasks queued, running or recently ended, sacct (where the
// cluster keeps accounting) for those scontrol has forgotten.
func (c *Client) States(ctx context.Context, id string, tasks int) (map[int]TaskState, error) {
	out, err := c.command(ctx, nil, "scontrol", "show", "job", "-o", id)
	if err != nil {
		// An array purged from the controller is "Invalid job id"; sacct
		// may still know it.
		if !strings.Contains(err.Error(), "Invalid job id") {
			return nil, fmt.Errorf("states of job %s: %w", id, err)
		}
		out = nil
	}
	st, err := parseScontrol(out)
	if err != nil {
		return nil, fmt.Errorf("states of job %s: %w", id, err)
	}
	if len(st) < tasks {
		if out, err := c.command(ctx, nil, "sacct", "-n", "-P", "-X", "-j", id, "-o", "JobID,State,ExitCode"); err == nil {
			for i, s := range parseSacct(id, out) {
				if _, ok := st[i]; !ok {
					st[i] = s
				}
			}
		}
	}
	inferCancelled(st, tasks)
	return st, nil
}

// inferCancelled fills in the tasks of an array the controller still
// knows but that have no record: Slurm drops a pending task cancelled with
// scancel from the array's record without a trace (only accounting, where
// a cluster keeps it, remembers it), and nothing else removes one.
func inferCancelled(st map[int]TaskState, tasks int) {
	if len(st) == 0 {
		return
	}
	for i := range tasks {
		if _, ok := st[i]; !ok {
			st[i] = TaskState{State: "CANCELLED", Reason: "removed from the queue while pending (the cluster keeps no accounting record)"}
		}
	}
}

// parseScontrol reads `scontrol show job -o` of an array: one line a task
// (or a range of pending tasks).
func parseScontrol(out []byte) (map[int]TaskState, error) {
	st := map[int]TaskState{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		kv := map[string]string{}
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			if _, seen := kv[k]; !seen {
				kv[k] = v
			}
		}
		ids, ok := kv["ArrayTaskId"]
		if !ok {
			continue
		}
		tasks, err := parseTaskRange(ids)
		if err != nil {
			return nil, err
		}
		s := TaskState{State: kv["JobState"], ExitCode: kv["ExitCode"], Reason: kv["Reason"]}
		for _, i := range tasks {
			st[i] = s
		}
	}
	return st, nil
}

// parseTaskRange reads an array's task list: "3", "2-5", "1,3-4", with an
// optional "%limit" suffix.
func parseTaskRange(s string) ([]int, error) {
	s, _, _ = strings.Cut(s, "%")
	var r []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("array task id %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("array task id %q: bad range %q", s, part)
			}
		}
		for i := a; i <= b; i++ {
			r = append(r, i)
		}
	}
	return r, nil
}

// parseSacct reads `sacct -n -P -X -o JobID,State,ExitCode` of array id.
func parseSacct(id string, out []byte) map[int]TaskState {
	st := map[int]TaskState{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 3 {
			continue
		}
		task, ok := strings.CutPrefix(f[0], id+"_")
		if !ok {
			continue
		}
		ids, err := parseTaskRange(strings.Trim(task, "[]"))
		if err != nil {
			continue
		}
		// sacct says "CANCELLED by 0".
		state, _, _ := strings.Cut(f[1], " ")
		for _, i := range ids {
			st[i] = TaskState{State: state, ExitCode: f[2]}
		}
	}
	return st
}

// Wait polls the states of job id's tasks every poll until each has ended,
// calling progress (if not nil) after each poll that changed something.
// A task the cluster no longer knows is UNKNOWN after it has been missing
// for two polls in a row.
func (c *Client) Wait(ctx context.Context, id string, tasks int, poll time.Duration, progress func(map[int]TaskState)) (map[int]TaskState, error) {
	last := map[int]TaskState{}
	missing := map[int]int{}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		st, err := c.States(ctx, id, tasks)
		if err != nil {
			return last, err
		}
		cur := map[int]TaskState{}
		ended := 0
		for i := range tasks {
			s, ok := st[i]
			switch {
			case ok:
				missing[i] = 0
			case last[i].Ended():
				s = last[i]
			default:
				missing[i]++
				s = TaskState{State: "PENDING"}
				if missing[i] >= 2 {
					s = TaskState{State: "UNKNOWN", Reason: "the cluster no longer knows the task"}
				}
			}
			cur[i] = s
			if s.Ended() {
				ended++
			}
		}
		if progress != nil && !mapsEqual(cur, last) {
			progress(cur)
		}
		last = cur
		if ended == tasks {
			return cur, nil
		}
		select {
		case <-ctx.Done():
			return cur, fmt.Errorf("waiting for job %s: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}

func mapsEqual(a, b map[int]TaskState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Summary counts tasks by state, in a stable order: "3 COMPLETED, 1 RUNNING".
func Summary(st map[int]TaskState) string {
	n := map[string]int{}
	for _, s := range st {
		n[s.State]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
	}
	return strings.Join(parts, ", ")
}

// ErrMissing is returned by Available when Slurm's commands are not on PATH.
var ErrMissing = errors.New("slurm: sbatch, squeue, scontrol or scancel not on PATH (Debian: apt-get install slurm-client)")

// Available reports whether the commands this package runs are on PATH.
func Available() error {
	for _, c := range []string{"sbatch", "squeue", "scontrol", "scancel"} {
		if _, err := exec.LookPath(c); err != nil {
			return ErrMissing
		}
	}
	return nil
}
