package claims

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
)

// TestEmulationRunsAlone checks --jobs runs twin scenarios side by side
// but an emulated one with nothing beside it: its results are the
// machine's timing, which another run would change.
func TestEmulationRunsAlone(t *testing.T) {
	var mu sync.Mutex
	var twins, emus, maxTwins int
	var shared []string
	run := func(emulated bool) Runner {
		return func(_ context.Context, file string, _ int, _ string) (*stats.Summary, error) {
			mu.Lock()
			if emulated {
				emus++
				if emus > 1 || twins > 0 {
					shared = append(shared, file)
				}
			} else {
				twins++
				maxTwins = max(maxTwins, twins)
				if emus > 0 {
					shared = append(shared, file)
				}
			}
			mu.Unlock()
			time.Sleep(30 * time.Millisecond)
			mu.Lock()
			if emulated {
				emus--
			} else {
				twins--
			}
			mu.Unlock()
			return nil, errors.New("not run: the test's runner")
		}
	}
	// B3, B7 and B6 are three twin scenarios; C2 and E1 two emulated ones.
	_, _ = Reproduce(t.Context(), Options{IDs: []string{"B3", "C2", "B7", "E1", "B6"}, Jobs: 4, Out: t.TempDir(), Root: "..",
		Twin: run(false), Emulate: run(true)})
	if len(shared) > 0 {
		t.Errorf("emulated runs shared the machine with other runs: %v", shared)
	}
	if maxTwins < 2 {
		t.Errorf("at most %d twin runs at once with --jobs 4, want them side by side", maxTwins)
	}
}

// TestReuseCompleteRuns checks --reuse judges a complete run already in
// the output directory instead of running it again, and runs a scenario
// whose run there is incomplete or has other seeds.
func TestReuseCompleteRuns(t *testing.T) {
	tests := []struct {
		name       string
		incomplete bool
		reps       int
		wantRun    bool
	}{
		{"complete, three seeds", false, 3, false},
		{"incomplete", true, 3, true},
		{"one seed", false, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			dir := filepath.Join(out, "runs", "receiver-driven")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			man, _ := json.Marshal(rundir.Manifest{Run: "r", Incomplete: tt.incomplete})
			var sum stats.Summary
			for r := range tt.reps {
				sum.Experiments = append(sum.Experiments, stats.Experiment{Name: "e", Transport: "homa", Params: map[string]any{"repetition": r + 1}})
			}
			js, _ := json.Marshal(sum)
			for name, b := range map[string][]byte{"manifest.json": man, "summary.json": js} {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ran := false
			twin := func(context.Context, string, int, string) (*stats.Summary, error) {
				ran = true
				return nil, errors.New("not run: the test's runner")
			}
			rows, _ := Reproduce(t.Context(), Options{IDs: []string{"B3"}, Out: out, Root: "..", Reuse: true, Twin: twin})
			if ran != tt.wantRun {
				t.Errorf("ran the scenario: %v, want %v (row: %s, %s)", ran, tt.wantRun, rows[0].Verdict, rows[0].Note)
			}
		})
	}
}

// TestMissingScenario checks reproduce refuses at once, naming the file and
// --root, when a selected claim's scenario is not under the root (run from
// outside the repository), and runs nothing; model-only claims need none.
func TestMissingScenario(t *testing.T) {
	ran := false
	twin := func(context.Context, string, int, string) (*stats.Summary, error) {
		ran = true
		return nil, errors.New("not run: the test's runner")
	}
	root := t.TempDir()
	_, err := Reproduce(t.Context(), Options{IDs: []string{"B3", "B1"}, Out: t.TempDir(), Root: root, Twin: twin})
	want := filepath.Join(root, "scenarios/claims/paper-table.yaml")
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--root") {
		t.Errorf("error %v, want one naming %s and --root", err, want)
	}
	if ran {
		t.Error("ran a scenario although another was missing")
	}
	if _, err := Reproduce(t.Context(), Options{IDs: []string{"D1"}, Quick: true, Messages: 20_000, Out: t.TempDir(), Root: root}); err != nil {
		t.Errorf("a model-only claim needs no scenario: %v", err)
	}
}

// TestInterruptedNoVerdict checks that claims whose runs an interrupt cut
// short, or kept from starting, get no verdict ("not yet measured", with
// the reason), and that no scenario starts after the interrupt.
func TestInterruptedNoVerdict(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var started []string
	twin := func(ctx context.Context, file string, _ int, _ string) (*stats.Summary, error) {
		started = append(started, filepath.Base(file))
		cancel() // the user's ^C, during the first run
		return nil, ctx.Err()
	}
	rows, _ := Reproduce(ctx, Options{IDs: []string{"B3", "B7"}, Out: t.TempDir(), Root: "..", Twin: twin})
	if len(started) != 1 {
		t.Errorf("scenarios started: %v, want only the first (none after the interrupt)", started)
	}
	for _, r := range rows {
		if r.Verdict != NotYetMeasured || !strings.Contains(r.Note, "interrupted") {
			t.Errorf("%s: %s (%s), want not yet measured, interrupted", r.ID, r.Verdict, r.Note)
		}
	}
}
