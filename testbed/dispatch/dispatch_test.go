package dispatch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
)

func TestLongestFirst(t *testing.T) {
	cases := []struct {
		work []float64
		want []int
	}{
		{nil, []int{}},
		{[]float64{1}, []int{0}},
		{[]float64{1, 3, 2}, []int{1, 2, 0}},
		// Ties keep the plan's order: the same order every run.
		{[]float64{5, 7, 5, 7, 0}, []int{1, 3, 0, 2, 4}},
	}
	for _, c := range cases {
		if got := LongestFirst(c.work); !slices.Equal(got, c.want) {
			t.Errorf("LongestFirst(%v) = %v, want %v", c.work, got, c.want)
		}
	}
}

// TestLocalWorkers runs Local's workers on a stand-in for homatb's
// run-experiment --worker (a shell script speaking its protocol): a failed
// experiment is reported with its reason, a worker that dies fails the
// experiment it had and is replaced for the rest, and every experiment
// gets an outcome.
func TestLocalWorkers(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to stand in for a worker")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	// $1 is "run-experiment", $2 "--worker", $3 the run directory.
	bin := filepath.Join(dir, "worker.sh")
	script := `#!` + sh + `
while read name; do
	case $name in
	bad*) echo "error	$name went wrong" >&3 ;;
	die*) exit 3 ;;
	*) echo "$name ran in $$" >"$3/tasks/$name.out"; echo ok >&3 ;;
	esac
done
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &rundir.Dispatch{Experiments: []string{"a", "bad1", "b", "die1", "c", "d", "e"}}
	for _, jobs := range []int{1, 2} {
		t.Run(fmt.Sprint("jobs", jobs), func(t *testing.T) {
			out, err := Local{Binary: bin, Jobs: jobs}.Run(context.Background(), dir, d, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(d.Experiments) {
				t.Fatalf("%d outcomes for %d experiments: %v", len(out), len(d.Experiments), out)
			}
			pids := map[string]bool{}
			for i, name := range d.Experiments {
				o := out[i]
				switch {
				case strings.HasPrefix(name, "bad"):
					if o.State != "FAILED" || !strings.Contains(o.Detail, name+" went wrong") {
						t.Errorf("%s: %v, want FAILED with the worker's reason", name, o)
					}
				case strings.HasPrefix(name, "die"):
					if o.State != "FAILED" || !strings.Contains(o.Detail, "worker stopped during "+name) {
						t.Errorf("%s: %v, want FAILED naming the worker's end", name, o)
					}
				default:
					if o.State != "COMPLETED" {
						t.Errorf("%s: %v, want COMPLETED", name, o)
					}
					b, err := os.ReadFile(filepath.Join(dir, "tasks", name+".out"))
					if err != nil {
						t.Fatal(err)
					}
					pids[strings.Fields(string(b))[3]] = true
				}
			}
			// Experiments share workers: jobs of them, and one more that
			// replaced the one that died.
			if len(pids) > jobs+1 {
				t.Errorf("%d worker processes ran 5 experiments, want at most %d", len(pids), jobs+1)
			}
		})
	}
}
