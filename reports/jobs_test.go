package reports

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

// TestJobsSameOutputs: experiments analysed several at once give the
// files one at a time gives, byte for byte (report.html aside, which
// states when it was built), for a run of experiments of unequal size, a
// shared one's parts among them, and records read at once (gzip).
func TestJobsSameOutputs(t *testing.T) {
	runs := map[string]synthRun{
		"unequal": {seed: 5, telSamples: 50, exps: []synthExp{
			{name: "big-homa", transport: "homa", n: 20000, meanNs: 20_000, failed: 3, inFly: 2},
			{name: "small-homa", transport: "homa", n: 300, meanNs: 5_000},
			{name: "mid-tcp", transport: "tcp", n: 4000, meanNs: 200_000},
			{name: "co", transport: "homa", n: 800, meanNs: 40_000, params: map[string]any{"host_qdisc": "none"}},
			{name: "co", transport: "tcp", n: 600, meanNs: 400_000, params: map[string]any{"host_qdisc": "none"}},
			{name: "tiny-tcp", transport: "tcp", n: 50, meanNs: 90_000},
		}},
		"gzip": {seed: 6, gzip: true, exps: []synthExp{
			{name: "a-homa", transport: "homa", n: 3000, meanNs: 10_000},
			{name: "b-tcp", transport: "tcp", n: 2000, meanNs: 100_000},
			{name: "c-homa", transport: "homa", n: 100, meanNs: 10_000},
		}},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			run.write(t, dir)
			outs := map[int]string{}
			for _, jobs := range []int{1, 3} {
				outs[jobs] = filepath.Join(t.TempDir(), "out")
				if _, err := Build(context.Background(), dir, stats.WithOutputDir(outs[jobs]), stats.WithJobs(jobs)); err != nil {
					t.Fatalf("jobs %d: %v", jobs, err)
				}
			}
			one, three := readTree(t, outs[1]), readTree(t, outs[3])
			if len(one) < 10 {
				t.Fatalf("one at a time wrote %d files, want the summary, by_size.csv and every experiment's exports", len(one))
			}
			for f, b := range one {
				if f == "report.html" {
					continue
				}
				if !bytes.Equal(b, three[f]) {
					t.Errorf("%s differs: %d bytes one at a time, %d three at once", f, len(b), len(three[f]))
				}
			}
			if len(three) != len(one) {
				t.Errorf("three at once wrote %d files, one at a time %d", len(three), len(one))
			}
		})
	}
}

// readTree reads every file under dir by its path in dir.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
