package driver

import (
	"slices"
	"testing"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/simnet"
)

// TestBooksIssueOrder: rows go out in the order issued, each once every
// row issued before it is final, whatever order they end in; closing
// hands out what is still held; the host's counts add up.
func TestBooksIssueOrder(t *testing.T) {
	var out []int64
	var q simnet.Clock
	r := NewRun(OnQueue(&q, 0), false, func(row *rundir.RPC) { out = append(out, row.SentNs) })
	tl := newTally(false)
	b := hostBooks{r, tl}
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
	if c := r.Counters("h1"); c.GetIssued() != 0 {
		t.Errorf("counters of a host not in the run: %v", c)
	}
	r.tallies["h1"] = tl
	// The open row counts as in flight until the books close.
	if c := r.Counters("h1"); c.Issued != 4 || c.Completed != 1 || c.Failed != 1 || c.InFlight != 2 || c.Failures["timeout"] != 1 {
		t.Errorf("counters %v, want 4 issued, 1 completed, 1 failed (timeout), 2 in flight", c)
	}
	r.Stop(0)
	if !slices.Equal(out, []int64{0, 1, 2, 3}) {
		t.Errorf("after Stop: out %v", out)
	}
}
