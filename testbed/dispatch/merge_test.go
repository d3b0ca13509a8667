package dispatch

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// writeTask writes a task directory that measured experiment name, with
// n rows of rpcs.csv after one calibration row, compressed when zst.
func writeTask(t *testing.T, dir, name string, n int, zst bool) {
	t.Helper()
	td := rundir.TaskDir(dir, name)
	if err := os.MkdirAll(td, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteManifest(td, &rundir.Manifest{Experiments: []rundir.Experiment{{Name: name}}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(td, rundir.RPCs().File))
	if err != nil {
		t.Fatal(err)
	}
	w, err := rundir.RPCs().NewWriter(f, true)
	if err != nil {
		t.Fatal(err)
	}
	rows := []rundir.RPC{{Experiment: rundir.CalibrationExperiment("")}}
	for i := range n {
		rows = append(rows, rundir.RPC{Experiment: name, RPCID: uint64(i + 1)})
	}
	for i := range rows {
		if err := w.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	if zst {
		if _, err := rundir.CompressLarge(td, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMergeDropsTaskRecords: tasks' per-RPC files, plain or compressed,
// merge into one file with the calibration once, and go once every
// experiment is in; while one is missing they stay for the next merge.
func TestMergeDropsTaskRecords(t *testing.T) {
	dir := t.TempDir()
	d := &rundir.Dispatch{Experiments: []string{"a", "b", "c"}, Executor: "local"}
	writeTask(t, dir, "a", 3, false)
	writeTask(t, dir, "b", 2, true)
	m, err := Merge(dir, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Missing) != 1 || !strings.Contains(m.Missing[0], "experiment c") {
		t.Fatalf("missing %v, want experiment c", m.Missing)
	}
	if _, err := os.Stat(filepath.Join(rundir.TaskDir(dir, "b"), "rpcs.csv.zst")); err != nil {
		t.Fatalf("an incomplete merge dropped a task's records: %v", err)
	}
	writeTask(t, dir, "c", 1, false)
	if m, err = Merge(dir, d, nil); err != nil || len(m.Missing) != 0 {
		t.Fatalf("second merge: %v, missing %v", err, m.Missing)
	}
	var exps []string
	for _, line := range strings.Split(strings.TrimSpace(readRPCs(t, dir)), "\n")[1:] {
		exps = append(exps, line[:strings.IndexByte(line, ',')])
	}
	want := rundir.CalibrationExperiment("") + " a a a b b c"
	if got := strings.Join(exps, " "); got != want {
		t.Errorf("merged rows' experiments %q, want %q", got, want)
	}
	for _, name := range d.Experiments {
		for _, f := range perRPCFiles {
			if _, err := os.Stat(filepath.Join(rundir.TaskDir(dir, name), f)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("task %s still holds %s (%v)", name, f, err)
			}
		}
	}
}

// readRPCs is dir's rpcs.csv, decompressed.
func readRPCs(t *testing.T, dir string) string {
	t.Helper()
	rc, _, err := rundir.OpenRunFile(dir, rundir.RPCs().File)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
