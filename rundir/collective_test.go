package rundir

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/homatb/homatb/workloads"
)

func TestCheckCollectiveOrder(t *testing.T) {
	// h1 sends step 0 to h2 (sent 100, answered 200); h2's step 1 to h3
	// depends on it.
	in := RPC{Collective: "c", Client: "h1", ServerHost: "h2", Step: 0, IntendedNs: 90, SentNs: 100, DoneNs: 200, Status: StatusCompleted}
	ok := RPC{Collective: "c", Client: "h2", ServerHost: "h3", Step: 1, InputNs: 150, IntendedNs: 150, SentNs: 151, DoneNs: 300, Status: StatusCompleted}
	tests := []struct {
		name string
		edit func(r *RPC)
		want string // "" for no violation
	}{
		{"in order", func(*RPC) {}, ""},
		{"sent before intended", func(r *RPC) { r.SentNs = 149 }, "want input <= intended <= sent"},
		{"intended before the input", func(r *RPC) { r.IntendedNs = 140 }, "want input <= intended <= sent"},
		{"input before it was sent", func(r *RPC) { r.InputNs, r.IntendedNs, r.SentNs = 99, 99, 99 }, "outside the last input's send 100 .. answer 200"},
		{"input after its answer", func(r *RPC) { r.InputNs, r.IntendedNs, r.SentNs = 201, 201, 201 }, "outside the last input's send 100 .. answer 200"},
		{"no input at all", func(r *RPC) { r.Iteration = 1 }, "no step 0 message to h2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.edit(&r)
			n, err := CheckCollectiveOrder([]RPC{in, r, {Experiment: "other RPC"}}, func(string) string { return workloads.KindRingAllReduce })
			switch {
			case tc.want == "" && (err != nil || n != 1):
				t.Errorf("checked %d, error %v: want 1 step checked, no error", n, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestCheckTreeOrder: in a tree all-reduce a member's up chunk (step 2c)
// waits for its children's chunk c, a leaf's for nothing, and a down chunk
// (2c+1) for its parent's, or at the root for the children's up chunk c.
func TestCheckTreeOrder(t *testing.T) {
	tree := func(string) string { return workloads.KindTreeAllReduce }
	leafUp := RPC{Collective: "c", Client: "h2", ServerHost: "h1", Step: 2, IntendedNs: 10, SentNs: 10, DoneNs: 100, Status: StatusCompleted}
	rootDown := RPC{Collective: "c", Client: "h1", ServerHost: "h2", Step: 3, InputNs: 50, IntendedNs: 50, SentNs: 50, DoneNs: 150, Status: StatusCompleted}
	rows := []RPC{leafUp, rootDown}
	if n, err := CheckCollectiveOrder(rows, tree); err != nil || n != 1 {
		t.Fatalf("checked %d, error %v: want the root's down chunk checked against the leaf's up chunk", n, err)
	}
	// Read as a ring, the leaf's step 2 would want a step 1 input.
	if _, err := CheckCollectiveOrder(rows, func(string) string { return workloads.KindRingAllReduce }); err == nil || !strings.Contains(err.Error(), "no step 1 message to h2") {
		t.Fatalf("as a ring: error %v, want the missing step 1", err)
	}
	early := rootDown
	early.InputNs, early.IntendedNs, early.SentNs = 5, 5, 5
	if _, err := CheckCollectiveOrder([]RPC{leafUp, early}, tree); err == nil || !strings.Contains(err.Error(), "outside the last input's send 10 .. answer 100") {
		t.Fatalf("down chunk before its input: error %v", err)
	}
}

// ringRow is step k of rank r's message in one iteration of a ring
// all-reduce among n ranks, every step 1 µs, as rpcs.csv records it.
func ringRow(n, r, k int, row *RPC) {
	sent := int64(1e12) + int64(k)*1000
	*row = RPC{Experiment: "ring", Collective: "c", Client: fmt.Sprintf("h%d", r+1), ServerHost: fmt.Sprintf("h%d", (r+1)%n+1),
		Step: int64(k), ReqBytes: 1000, IntendedNs: sent, SentNs: sent, DoneNs: sent + 1000, Status: StatusCompleted}
	if k > 0 {
		row.InputNs = sent
	}
}

// TestCheckRingOrder checks a whole ring's steps, read in the order a run
// writes them (by time) and reversed, and finds a step sent before its input.
func TestCheckRingOrder(t *testing.T) {
	const n = 16
	var rows []RPC
	for k := range 2 * (n - 1) {
		for r := range n {
			var row RPC
			ringRow(n, r, k, &row)
			rows = append(rows, row)
		}
	}
	ring := func(string) string { return workloads.KindRingAllReduce }
	want := (2*(n-1) - 1) * n
	if got, err := CheckCollectiveOrder(rows, ring); err != nil || got != want {
		t.Fatalf("checked %d, error %v: want %d steps", got, err, want)
	}
	slices.Reverse(rows)
	if got, err := CheckCollectiveOrder(rows, ring); err != nil || got != want {
		t.Fatalf("reversed: checked %d, error %v: want %d steps", got, err, want)
	}
	rows[7].InputNs, rows[7].IntendedNs, rows[7].SentNs = rows[7].InputNs-1500, rows[7].IntendedNs-1500, rows[7].SentNs-1500
	if _, err := CheckCollectiveOrder(rows, ring); err == nil || !strings.Contains(err.Error(), "outside the last input's send") {
		t.Fatalf("a step sent before its input: error %v", err)
	}
}

// BenchmarkCollectiveSteps keeps, sorts and checks the 2.1 million step
// messages of a 1,024-rank ring all-reduce, and reports the memory a step
// holds (step-B) against the row it is read from (row-B).
func BenchmarkCollectiveSteps(b *testing.B) {
	const n = 1024
	ring := func(string) string { return workloads.KindRingAllReduce }
	var row RPC
	for range b.N {
		var s Steps
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for k := range 2 * (n - 1) {
			for r := range n {
				ringRow(n, r, k, &row)
				if err := s.Add(&row); err != nil {
					b.Fatal(err)
				}
			}
		}
		s.Sort()
		if _, err := s.CheckOrder(ring); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(s.All)), "step-B")
		runtime.KeepAlive(s.All)
	}
	b.ReportMetric(float64(unsafe.Sizeof(row)), "row-B")
}
