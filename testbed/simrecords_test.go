package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// TestSimRecordsOrder: the writer goroutine writes an experiment's rows
// in the order handed over, batches and all, by Close; a second
// experiment appends after the first.
func TestSimRecordsOrder(t *testing.T) {
	dir := t.TempDir()
	rf, err := createRecords(filepath.Join(dir, rundir.RPCs().File), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &simRecords{records: rf, servedPath: filepath.Join(dir, rundir.ServedRPCs().File)}
	const n = 3*batchRows + 7
	for exp := range 2 {
		for i := range n {
			name := fmt.Sprintf("e%d", exp)
			if err := s.RPC(&rundir.RPC{Experiment: name, Transport: "homa", Phase: "measure", RPCID: uint64(i), Status: rundir.StatusCompleted}); err != nil {
				t.Fatal(err)
			}
			if err := s.Served(&rundir.Served{Experiment: name, Transport: "homa", RPCID: uint64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rf.close(); err != nil {
		t.Fatal(err)
	}
	rpcs := readRPCs(t, filepath.Join(dir, rundir.RPCs().File), "")
	if len(rpcs) != 2*n {
		t.Fatalf("%d rpcs.csv rows, want %d", len(rpcs), 2*n)
	}
	for i, r := range rpcs {
		if want := fmt.Sprintf("e%d", i/n); r.Experiment != want || r.RPCID != uint64(i%n) {
			t.Fatalf("rpcs.csv row %d: %s %d, want %s %d", i, r.Experiment, r.RPCID, want, i%n)
		}
	}
	f, err := os.Open(s.servedPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := rundir.ServedRPCs().NewReader(f, "served.csv")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 * n {
		var row rundir.Served
		if err := rd.Read(&row); err != nil {
			t.Fatalf("served.csv row %d: %v", i, err)
		}
		if want := fmt.Sprintf("e%d", i/n); row.Experiment != want || row.RPCID != uint64(i%n) {
			t.Fatalf("served.csv row %d: %s %d, want %s %d", i, row.Experiment, row.RPCID, want, i%n)
		}
	}
}

// TestSimRecordsError: a write error reaches the experiment (from a later
// row or Close), and the next experiment writes afresh.
func TestSimRecordsError(t *testing.T) {
	dir := t.TempDir()
	rf, err := createRecords(filepath.Join(dir, rundir.RPCs().File), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.close()
	bad := filepath.Join(dir, "missing", rundir.ServedRPCs().File)
	s := &simRecords{records: rf, servedPath: bad}
	var got error
	for i := 0; i < 4*batchRows && got == nil; i++ {
		got = s.Served(&rundir.Served{RPCID: uint64(i)})
	}
	if err := s.Close(); got == nil {
		got = err
	}
	if got == nil {
		t.Fatal("no error for an unwritable served.csv")
	}
	s.servedPath = filepath.Join(dir, rundir.ServedRPCs().File)
	if err := s.Served(&rundir.Served{RPCID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("the next experiment: %v", err)
	}
}
