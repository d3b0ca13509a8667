package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/claims"
	"github.com/homatb/homatb/rundir"
)

// TestReproduceTwinClaim runs claim B5 (Homa against PIAS) through the
// twin on a tiny scenario in place of the paper's fabric, three seeds,
// and checks that its row is measured, judged and written; with --jobs 2
// the scenario's experiments run as tasks, and the row and the records
// are the same as in one process.
func TestReproduceTwinClaim(t *testing.T) {
	bin := ""
	var first claims.Row
	for _, jobs := range []int{1, 2} {
		out := filepath.Join(t.TempDir(), fmt.Sprint(jobs)) // kept for the comparison
		t.Run(fmt.Sprintf("jobs%d", jobs), func(t *testing.T) {
			if jobs > 1 {
				bin = buildBinary(t)
			}
			rows, err := claims.Reproduce(t.Context(), claims.Options{
				IDs: []string{"B5"}, Out: out, Jobs: jobs, Twin: simulateScenario(jobs, bin),
				Scenarios: map[string]string{"scenarios/claims/paper-table.yaml": "testdata/claims-tiny.yaml"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 {
				t.Fatalf("%d rows, want 1", len(rows))
			}
			r := rows[0]
			switch r.Verdict {
			case claims.Reproduced, claims.OrderingHolds, claims.NotReproduced:
			default:
				t.Fatalf("verdict %q (%s), want a measured one", r.Verdict, r.Note)
			}
			if len(r.Points) != 2 {
				t.Fatalf("%d points, want 2", len(r.Points))
			}
			for _, p := range r.Points {
				if len(p.Values) != 3 || math.IsNaN(p.Median) || p.Median <= 0 || p.Min > p.Median || p.Median > p.Max {
					t.Errorf("point %s: values %v, median %g (%g-%g): want three seeds' positive ratios", p.Label, p.Values, p.Median, p.Min, p.Max)
				}
			}
			if _, err := os.Stat(filepath.Join(r.RunDir, "summary.json")); err != nil {
				t.Errorf("run directory: %v", err)
			}
			if jobs == 1 {
				first = r
			} else {
				if _, err := os.Stat(filepath.Join(r.RunDir, rundir.DispatchFile)); err != nil {
					t.Errorf("--jobs 2 did not run the scenario as tasks: %v", err)
				}
				if fmt.Sprint(r.Points) != fmt.Sprint(first.Points) {
					t.Errorf("--jobs 2 points %v, one process %v", r.Points, first.Points)
				}
				one, split := recordFiles(t, first.RunDir), recordFiles(t, r.RunDir)
				if len(one) == 0 || len(one) != len(split) {
					t.Errorf("%d files in one process's run, %d in the tasks'", len(one), len(split))
				}
				for f, b := range one {
					if !bytes.Equal(b, split[f]) {
						t.Errorf("%s differs between one process and the tasks", f)
					}
				}
			}
			if err := claims.WriteFiles(out, claims.NewReport("test", time.Now(), false, time.Second, rows)); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(out, "claims.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep claims.Report
			if err := json.Unmarshal(b, &rep); err != nil || len(rep.Rows) != 1 || rep.Rows[0].Verdict != r.Verdict {
				t.Errorf("claims.json: %v, %+v", err, rep.Rows)
			}
		})
	}
}

func TestReproduceUnknownClaim(t *testing.T) {
	cmd := newRootCmd()
	cmd.SetArgs([]string{"reproduce", "Z9", "--out", t.TempDir()})
	cmd.SetOut(os.Stderr)
	err := cmd.Execute()
	if err == nil || exitCode(err) != 2 {
		t.Errorf("reproduce Z9: %v (exit %d), want a usage error", err, exitCode(err))
	}
}

// TestReproduceRender rebuilds the pages of an output directory from its
// claims.json without measuring anything.
func TestReproduceRender(t *testing.T) {
	dir := t.TempDir()
	rows, err := claims.Reproduce(t.Context(), claims.Options{IDs: []string{"D1"}, Quick: true, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := claims.WriteFiles(dir, claims.NewReport("homatb reproduce D1 --quick", time.Now(), true, time.Second, rows)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "claims.md"))
	var out strings.Builder
	if err := renderClaims(&out, dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "claims.md"))
	if err != nil || !strings.Contains(string(md), "| D1 |") || !strings.Contains(out.String(), "D1") {
		t.Errorf("claims.md %q (%v), table %q", md, err, out.String())
	}
}
