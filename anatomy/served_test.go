package anatomy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// writeServed writes served.csv in dir with one row per experiment name
// given, in that order (its rpc_id the row's place, to tell rows apart).
func writeServed(t *testing.T, dir string, exps []string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, rundir.ServedRPCs().File))
	if err != nil {
		t.Fatal(err)
	}
	w, err := rundir.ServedRPCs().NewWriter(f, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range exps {
		row := rundir.Served{Experiment: e, Transport: "homa", ServerHost: "h1", Server: "10.0.0.1:4000",
			Client: "10.0.0.2:5000", RPCID: uint64(i + 1), ReqNs: 1, ReplyNs: 2}
		if err := w.Write(&row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestServedGroups: served.csv is read one experiment at a time in the
// run's order, passing over experiments not asked for, and a file whose
// rows are not in that order is refused with rundir.ErrNotGrouped.
func TestServedGroups(t *testing.T) {
	order := []string{"a", "b", "c", "d"}
	tests := []struct {
		name string
		file []string // the experiment of each row, in file order
		ask  []string
		want [][]uint64 // the rpc_ids For returns, per ask
		bad  int        // index of the ask that fails with ErrNotGrouped; -1 for none
	}{
		{"grouped", []string{"a", "a", "b", "c", "c", "d"}, []string{"a", "b", "c", "d"},
			[][]uint64{{1, 2}, {3}, {4, 5}, {6}}, -1},
		{"experiments skipped", []string{"a", "b", "b", "c", "d"}, []string{"b", "d"},
			[][]uint64{{2, 3}, {5}}, -1},
		{"an experiment without rows", []string{"a", "c"}, []string{"a", "b", "c", "d"},
			[][]uint64{{1}, nil, {2}, nil}, -1},
		{"rows of an experiment apart", []string{"a", "b", "a"}, []string{"a", "b", "c"},
			[][]uint64{{1}}, 1},
		{"asked out of order", []string{"a", "b"}, []string{"b", "a"},
			[][]uint64{{2}}, 1},
		{"an experiment not the run's", []string{"a", "x", "b"}, []string{"a", "b"},
			nil, 0},
		{"no file", nil, []string{"a", "b"}, [][]uint64{nil, nil}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != nil {
				writeServed(t, dir, tc.file)
			}
			g, err := OpenServedGroups(dir, order)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			for i, exp := range tc.ask {
				rows, err := g.For(exp)
				if i == tc.bad {
					if !errors.Is(err, rundir.ErrNotGrouped) {
						t.Fatalf("For(%s) = %v, %v; want ErrNotGrouped", exp, rows, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("For(%s): %v", exp, err)
				}
				var ids []uint64
				for _, r := range rows {
					if r.Experiment != exp {
						t.Errorf("For(%s) gave a row of %s", exp, r.Experiment)
					}
					ids = append(ids, r.RPCID)
				}
				if !slices.Equal(ids, tc.want[i]) {
					t.Errorf("For(%s) = rows %v, want %v", exp, ids, tc.want[i])
				}
			}
			if tc.bad >= 0 {
				t.Errorf("no ErrNotGrouped at ask %d", tc.bad)
			}
		})
	}
}
