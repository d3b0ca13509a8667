package claims

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/homatb/homatb/reports/stats"
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
	_, _ = Reproduce(t.Context(), Options{IDs: []string{"B3", "C2", "B7", "E1", "B6"}, Jobs: 4, Out: t.TempDir(),
		Twin: run(false), Emulate: run(true)})
	if len(shared) > 0 {
		t.Errorf("emulated runs shared the machine with other runs: %v", shared)
	}
	if maxTwins < 2 {
		t.Errorf("at most %d twin runs at once with --jobs 4, want them side by side", maxTwins)
	}
}
