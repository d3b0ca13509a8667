package rundir

import (
	"strings"
	"testing"
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
			n, err := CheckCollectiveOrder([]RPC{in, r, {Experiment: "other RPC"}})
			switch {
			case tc.want == "" && (err != nil || n != 1):
				t.Errorf("checked %d, error %v: want 1 step checked, no error", n, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
