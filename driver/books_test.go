package driver

import (
	"slices"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// TestBooksIssueOrder: rows go out in the order issued, each once every
// row issued before it is final, whatever order they end in; Close hands
// out what is still held; the counts add up.
func TestBooksIssueOrder(t *testing.T) {
	var out []int64
	b := NewBooks(func(row *rundir.RPC) { out = append(out, row.SentNs) })
	rows := make([]*rundir.RPC, 4)
	for i := range rows {
		rows[i] = &rundir.RPC{SentNs: int64(i)}
		b.Issued(rows[i])
	}
	end := func(i int, status, reason string) {
		rows[i].Status, rows[i].Reason = status, reason
		if status == rundir.StatusInflight {
			b.InFlight(rows[i])
		} else {
			b.Ended(rows[i])
		}
	}
	steps := []struct {
		row            int
		status, reason string
		want           []int64
	}{
		{2, rundir.StatusCompleted, "", nil},
		{0, rundir.StatusFailed, "timeout", []int64{0}},
		{1, rundir.StatusInflight, "", []int64{0, 1, 2}},
	}
	for _, s := range steps {
		end(s.row, s.status, s.reason)
		if !slices.Equal(out, s.want) {
			t.Fatalf("after row %d %s: out %v, want %v", s.row, s.status, out, s.want)
		}
	}
	if b.Open() != 1 {
		t.Errorf("open %d, want 1", b.Open())
	}
	b.Close()
	if !slices.Equal(out, []int64{0, 1, 2, 3}) {
		t.Errorf("after Close: out %v", out)
	}
	want := rundir.Books{Issued: 4, Completed: 1, Failed: 1, InFlight: 1}
	if b.Count != want || b.Failures["timeout"] != 1 {
		t.Errorf("books %+v failures %v, want %+v and one timeout", b.Count, b.Failures, want)
	}
}
