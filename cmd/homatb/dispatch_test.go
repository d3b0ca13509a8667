package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/executor/slurm/slurmtest"
	"github.com/homatb/homatb/rundir"
)

const sweep8 = "testdata/sweep8-sim.yaml"

// buildBinary compiles this homatb, which the tasks of a dispatched run
// execute.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "homatb")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func homatb(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("homatb %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// sameRecords fails unless the two run directories hold the same records
// and statistics, byte for byte: every file but the logs, the tasks' own
// files, the manifest (whose times and model notes differ) and report.html
// (which says when it was built).
func sameRecords(t *testing.T, a, b string) {
	t.Helper()
	fa, fb := recordFiles(t, a), recordFiles(t, b)
	for _, f := range []string{"rpcs.csv", "served.csv", "summary.json", "by_size.csv", "anatomy.csv"} {
		if _, ok := fa[f]; !ok {
			t.Errorf("%s has no %s", a, f)
		}
	}
	for f, x := range fa {
		y, ok := fb[f]
		switch {
		case !ok:
			t.Errorf("%s is in %s, not in %s", f, a, b)
		case !bytes.Equal(x, y):
			t.Errorf("%s differs between %s (%d bytes) and %s (%d bytes)", f, a, len(x), b, len(y))
		}
	}
	for f := range fb {
		if _, ok := fa[f]; !ok {
			t.Errorf("%s is in %s, not in %s", f, b, a)
		}
	}
	ea, eb := experimentNames(t, a), experimentNames(t, b)
	if strings.Join(ea, ",") != strings.Join(eb, ",") {
		t.Errorf("manifest experiments %v, want %v", eb, ea)
	}
}

// recordFiles reads a run directory's files by their paths in it, but
// those sameRecords leaves out.
func recordFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		switch rel {
		case "logs", "tasks":
			return filepath.SkipDir
		case rundir.ManifestFile, rundir.DispatchFile, "report.html":
			return nil
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func experimentNames(t *testing.T, dir string) []string {
	t.Helper()
	m, _, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range m.Experiments {
		n = append(n, e.Name)
	}
	return n
}

// TestJobsMatchOneProcess runs the sweep in one process and as two local
// jobs at a time: the records must not tell them apart.
func TestJobsMatchOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds homatb and runs 16 simulated experiments")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	one, two := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	homatb(t, bin, nil, "run", "--simulate", "-q", "--run-dir", one, sweep8)
	homatb(t, bin, nil, "run", "--simulate", "-q", "--jobs", "2", "--run-dir", two, sweep8)
	sameRecords(t, one, two)
	if len(experimentNames(t, one)) != 8 {
		t.Fatalf("the sweep ran %d experiments, want 8", len(experimentNames(t, one)))
	}
}

// TestSlurmExecutor runs the sweep on a real one-node Slurm cluster: once
// waiting for the job array, compared with the run in one process; once
// detached with one task cancelled, which the merged run must name with
// its Slurm state while the report of the rest still renders.
func TestSlurmExecutor(t *testing.T) {
	c := slurmtest.Start(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	local, onSlurm := filepath.Join(dir, "local"), filepath.Join(dir, "slurm")
	homatb(t, bin, nil, "run", "--simulate", "-q", "--run-dir", local, sweep8)
	homatb(t, bin, c.Env, "run", "--simulate", "-q", "--executor", "slurm", "--slurm-poll", "200ms", "--run-dir", onSlurm, sweep8)
	sameRecords(t, local, onSlurm)

	// Detached: submit, cancel the last task while it waits, then let
	// `homatb report` merge the rest.
	cut := filepath.Join(dir, "cut")
	out := homatb(t, bin, c.Env, "run", "--simulate", "--executor", "slurm", "--detach", "--run-dir", cut, sweep8)
	d, err := rundir.ReadDispatch(cut)
	if err != nil || d.JobID == "" {
		t.Fatalf("dispatch.json: %+v, %v (run said %s)", d, err, out)
	}
	last := len(d.Experiments) - 1
	if err := c.Command(t.Context(), "scancel", d.JobID+"_"+strconv.Itoa(last)).Run(); err != nil {
		t.Fatalf("scancel: %v", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		q, err := c.Command(t.Context(), "squeue", "-h", "-j", d.JobID).Output()
		if err != nil {
			t.Fatalf("squeue: %v", err)
		}
		if strings.TrimSpace(string(q)) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still queued after 2 minutes: %s", d.JobID, q)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cmd := exec.Command(bin, "report", cut)
	cmd.Env = append(os.Environ(), c.Env...)
	rep, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("report of the cut run: %v\n%s", err, rep)
	}
	want := "experiment " + d.Experiments[last] + " not measured: task CANCELLED"
	if !strings.Contains(string(rep), want) {
		t.Errorf("report said\n%s\nwant a line %q", rep, want)
	}
	m, _, err := rundir.ReadManifest(cut)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Incomplete || len(m.Experiments) != last || !strings.Contains(strings.Join(m.Fidelity, "\n"), want) {
		t.Errorf("merged manifest: incomplete %v, %d experiments, fidelity %q", m.Incomplete, len(m.Experiments), m.Fidelity)
	}
	if _, err := os.Stat(filepath.Join(cut, "report.html")); err != nil {
		t.Errorf("no report of the rest: %v", err)
	}
	var sum struct {
		Experiments []json.RawMessage `json:"experiments"`
	}
	b, _ := os.ReadFile(filepath.Join(cut, "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil || len(sum.Experiments) != last {
		t.Errorf("summary.json of the cut run: %d experiments, %v", len(sum.Experiments), err)
	}
}
