package reports

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
)

// streamRun is a small synthetic run of three experiments.
func streamRun() synthRun {
	return synthRun{seed: 3, lengths: []int64{100, 10000}, telSamples: 20, exps: []synthExp{
		{name: "s-homa", transport: "homa", n: 3000, meanNs: 20_000, failed: 2, params: map[string]any{"load": "0.5"}},
		{name: "s-tcp", transport: "tcp", n: 2000, meanNs: 90_000, inFly: 1, params: map[string]any{"load": "0.5"}},
		{name: "s-homa-2", transport: "homa", n: 1000, meanNs: 30_000, params: map[string]any{"load": "0.8"}},
	}}
}

// reorder rewrites dir's rpcs.csv with its rows (the header kept first) in
// the order perm gives them.
func reorder(t *testing.T, dir string, perm func(rows []string)) {
	t.Helper()
	path := filepath.Join(dir, "rpcs.csv")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines = lines[:len(lines)-1] // after the last newline
	perm(lines[1:])
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRecordsOneExperimentAtATime: read as runs write rpcs.csv, each
// experiment is handed over once its rows end, with every row of it, and
// the set keeps none; rows not written that way are rundir.ErrNotGrouped.
func TestRecordsOneExperimentAtATime(t *testing.T) {
	tests := []struct {
		name    string
		perm    func(rows []string)
		grouped bool
	}{
		{"as written", func([]string) {}, true},
		{"a calibration row last", func(rows []string) {
			slices.SortStableFunc(rows, func(a, b string) int {
				return boolCmp(strings.HasPrefix(a, "calibrate-"), strings.HasPrefix(b, "calibrate-"))
			})
		}, false},
		{"rows shuffled", func(rows []string) {
			r := rand.New(rand.NewPCG(1, 2))
			r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := streamRun()
			dir := t.TempDir()
			run.write(t, dir)
			reorder(t, dir, tc.perm)
			var got []string
			var inSet int
			rs, err := stats.ReadRecords(context.Background(), dir, nil, nil, func(rs *stats.RecordSet, e *stats.ExpRecords) error {
				got = append(got, e.Name)
				inSet = max(inSet, len(rs.Exps))
				want := run.exps[len(got)-1]
				if tc.grouped && (e.Issued != int64(want.n+want.failed+want.inFly) || len(e.Samples) != want.n) {
					t.Errorf("%s handed over with %d issued, %d samples; want %d, %d", e.Name, e.Issued, len(e.Samples), want.n+want.failed+want.inFly, want.n)
				}
				return nil
			})
			if !tc.grouped {
				if !errors.Is(err, rundir.ErrNotGrouped) {
					t.Fatalf("got %v, want ErrNotGrouped", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"s-homa", "s-tcp", "s-homa-2"}; !slices.Equal(got, want) {
				t.Errorf("handed over %v, want %v", got, want)
			}
			if inSet > 0 || len(rs.Exps) > 0 {
				t.Errorf("the set kept %d experiments' records while one was handed over, %d at the end; want none", inSet, len(rs.Exps))
			}
			if len(rs.Calib) != 2 {
				t.Errorf("calibration of %d transports, want 2", len(rs.Calib))
			}
		})
	}
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// TestReportOfUngroupedRecords: a run whose rpcs.csv is not grouped by
// experiment (rows shuffled) gets the report of the same run written in
// order: the same summary.json, by_size.csv and per-experiment files.
func TestReportOfUngroupedRecords(t *testing.T) {
	run := streamRun()
	grouped, shuffled := t.TempDir(), t.TempDir()
	run.write(t, grouped)
	run.write(t, shuffled)
	reorder(t, shuffled, func(rows []string) {
		r := rand.New(rand.NewPCG(5, 6))
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	})
	for _, dir := range []string{grouped, shuffled} {
		if _, err := Build(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"summary.json", "by_size.csv"}
	for _, e := range run.exps {
		files = append(files, e.name+".data", e.name+".hgrm", e.name+"_cdf.data", filepath.Join(stats.CperfDir, e.name+"-h2.rtts"))
	}
	for _, f := range files {
		a, err := os.ReadFile(filepath.Join(grouped, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(shuffled, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == filepath.Join(stats.CperfDir, run.exps[0].name+"-h2.rtts") {
			// One client's RTTs in the order of the records.
			a, b = sortedLines(a), sortedLines(b)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the grouped and the shuffled records", f)
		}
	}
}

func sortedLines(b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	slices.Sort(lines)
	return []byte(strings.Join(lines, "\n"))
}

// TestReportOfCompressedRecords: the report of a run whose rpcs.csv is
// compressed (a split run merges it so; a run in one process compresses it
// after its report) is that of the same run plain, summary.json's records
// included.
func TestReportOfCompressedRecords(t *testing.T) {
	run := streamRun()
	plain, zst := t.TempDir(), t.TempDir()
	run.write(t, plain)
	run.write(t, zst)
	if done, err := rundir.CompressLarge(zst, 0); err != nil || len(done) == 0 {
		t.Fatalf("compress: %v, compressed %v", err, done)
	}
	for _, dir := range []string{plain, zst} {
		if _, err := Build(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"summary.json", "by_size.csv"} {
		a, err := os.ReadFile(filepath.Join(plain, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(zst, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the plain and the compressed records", f)
		}
	}
}
