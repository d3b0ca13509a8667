package faults

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// TestSalvageRecords keeps the whole rows of a records file cut mid-row.
func TestSalvageRecords(t *testing.T) {
	head := strings.Join(rundir.RPCs().Header(), ",")
	row := func(status string) string {
		fields := strings.Split("e,homa,measure,h2,10.0.0.1:4000,100,100,1,2,3,2,"+status+",,0,0,0,0,0,h1,7,10.0.0.2:32768,0,0", ",")
		// Columns added since are empty.
		fields = append(fields, make([]string, len(rundir.RPCs().Header())-len(fields))...)
		return strings.Join(fields, ",") + "\n"
	}
	tests := []struct {
		name              string
		data              string
		completed, failed uint64
	}{
		{"empty", "", 0, 0},
		{"header only", head + "\n", 0, 0},
		{"whole rows", head + "\n" + row("completed") + row("failed"), 1, 1},
		{"cut last row", head + "\n" + row("completed") + row("completed") + "e,homa,meas", 2, 0},
		{"cut header", head[:10], 0, 0},
		{"many rows, cut", head + "\n" + strings.Repeat(row("completed"), 200) + row("failed") + "e,ho", 200, 1},
		{"many rows, a long cut row", head + "\n" + strings.Repeat(row("failed"), 100) + strings.Repeat("x", 9000), 0, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, c, f := salvageRecords(strings.NewReader(tc.data), int64(len(tc.data)), "x.csv")
			if c != tc.completed || f != tc.failed {
				t.Errorf("completed %d failed %d, want %d %d", c, f, tc.completed, tc.failed)
			}
			if lines := strings.Count(tc.data[:n], "\n"); c+f > 0 && lines != int(c+f)+1 {
				t.Errorf("kept %d lines for %d rows", lines, c+f)
			}
		})
	}
}

// TestKeepRecords: a killed agent's records file is counted and moved
// aside at the kill (a restarted agent may write the path anew), and its
// whole rows are read back from there when the records are collected.
func TestKeepRecords(t *testing.T) {
	head := strings.Join(rundir.RPCs().Header(), ",")
	fields := strings.Split("e,homa,measure,h2,10.0.0.1:4000,100,100,1,2,3,2,completed,,0", ",")
	row := strings.Join(append(fields, make([]string, len(rundir.RPCs().Header())-len(fields))...), ",") + "\n"
	whole := head + "\n" + strings.Repeat(row, 3)
	path := filepath.Join(t.TempDir(), rundir.AgentFile("e", "h2", rundir.RPCs()))
	if err := os.WriteFile(path, []byte(whole+"e,homa,mea"), 0o644); err != nil {
		t.Fatal(err)
	}
	kept, n, c, f, err := keepRecords(path)
	if err != nil || c != 3 || f != 0 || n != int64(len(whole)) {
		t.Fatalf("keepRecords: %d bytes, %d completed, %d failed, %v; want %d, 3, 0", n, c, f, err, len(whole))
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there after the kill (%v)", path, err)
	}
	if err := os.WriteFile(path, []byte(head+"\n"), 0o644); err != nil { // the restarted agent's
		t.Fatal(err)
	}
	k := &killedAgent{records: kept, recordsLen: n}
	var got []byte
	err = k.appendRecords(func(r io.Reader) error {
		var err error
		got, err = io.ReadAll(r)
		return err
	})
	if err != nil || string(got) != whole {
		t.Errorf("read back %q, %v; want %q", got, err, whole)
	}
	if kept, n, c, f, err := keepRecords(filepath.Join(t.TempDir(), "none.csv")); kept != "" || n != 0 || c+f != 0 || err != nil {
		t.Errorf("no file: %q %d %d %d %v, want nothing", kept, n, c, f, err)
	}
}
