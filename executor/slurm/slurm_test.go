package slurm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/executor/slurm"
	"github.com/homatb/homatb/executor/slurm/slurmtest"
)

// TestArrayOnRealCluster submits a three-task array to a one-node cluster,
// cancels the task that would run for a minute, and checks what Wait says
// of each task and what the finished ones wrote.
func TestArrayOnRealCluster(t *testing.T) {
	c := slurmtest.Start(t)
	dir := t.TempDir()
	cl := slurm.New(slurm.Options{Env: c.Env, Time: "5:00"})
	// Task 0 and 1 write a file; task 2 sleeps until cancelled.
	script := filepath.Join(dir, "task.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nif [ \"$SLURM_ARRAY_TASK_ID\" = 2 ]; then sleep 60; fi\necho \"task $SLURM_ARRAY_TASK_ID\" > out-$SLURM_ARRAY_TASK_ID\necho done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	id, err := cl.Submit(ctx, slurm.Array{Name: "homatb-test", Tasks: 3, Command: []string{script}, Dir: dir, LogDir: dir})
	if err != nil {
		t.Fatalf("%v\nslurmctld: %s", err, c.Log("slurmctld.log"))
	}
	// Cancel task 2 once it runs (or while it still waits).
	cancelled := false
	st, err := cl.Wait(ctx, id, 3, 200*time.Millisecond, func(st map[int]slurm.TaskState) {
		if !cancelled && st[0].Ended() && st[1].Ended() {
			cancelled = true
			if err := cl.Cancel(ctx, id, 2); err != nil {
				t.Errorf("cancel: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatalf("wait: %v\nslurmd: %s", err, c.Log("slurmd.log"))
	}
	for i, want := range []string{"COMPLETED", "COMPLETED", "CANCELLED"} {
		if st[i].State != want {
			t.Errorf("task %d: %v, want %s", i, st[i], want)
		}
	}
	if !st[0].OK() || st[2].OK() {
		t.Errorf("OK: task 0 %v, task 2 %v", st[0].OK(), st[2].OK())
	}
	for i := range 2 {
		b, err := os.ReadFile(filepath.Join(dir, "out-"+string(rune('0'+i))))
		if err != nil || strings.TrimSpace(string(b)) != "task "+string(rune('0'+i)) {
			t.Errorf("task %d wrote %q, %v", i, b, err)
		}
		if b, err := os.ReadFile(slurm.LogPath(dir, i)); err != nil || !strings.Contains(string(b), "done") {
			t.Errorf("task %d's log %q, %v", i, b, err)
		}
	}
	if got := slurm.Summary(st); got != "2 COMPLETED, 1 CANCELLED" && got != "1 CANCELLED, 2 COMPLETED" {
		t.Errorf("summary %q", got)
	}
}
