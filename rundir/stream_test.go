package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCSVStream: rows written are in the file after Flush, while the
// stream stays open, and all of them with one header after Close.
func TestCSVStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rpcs.csv")
	w, err := NewCSVStream(path, RPCs())
	if err != nil {
		t.Fatal(err)
	}
	lines := func() []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	for i := range 3 {
		w.Write(RPC{Experiment: "x", Client: "h1", SentNs: int64(i), Status: StatusCompleted})
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := lines(); len(got) != 4 {
		t.Fatalf("after Flush: %d lines, want a header and 3 rows: %q", len(got), got)
	}
	w.Write(RPC{Experiment: "x", Client: "h1", SentNs: 3, Status: StatusFailed})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Errorf("Flush after Close: %v", err)
	}
	got := lines()
	if len(got) != 5 || !strings.HasPrefix(got[0], "experiment,") || strings.Count(strings.Join(got, "\n"), "experiment,") != 1 {
		t.Errorf("after Close: %q", got)
	}
}
