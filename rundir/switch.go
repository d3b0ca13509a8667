package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/homatb/homatb/p4/switchstats"
)

// SwitchStats is the switch statistics document. Its type is declared with
// the switch (package switchstats) so that p4 imports nothing of the
// testbed; this alias is the run directory's name for it.
type SwitchStats = switchstats.Stats

// SwitchDir is the folder of per-experiment switch statistics.
const SwitchDir = "switch"

// SwitchStatsPath is where an experiment's statistics of one switch are
// kept: counters as differences over the experiment (switchstats.Diff).
func SwitchStatsPath(dir, experiment, sw string) string {
	return filepath.Join(dir, SwitchDir, experiment, sw+".json")
}

// WriteSwitchStats writes one switch's statistics of an experiment.
func WriteSwitchStats(dir, experiment, sw string, st SwitchStats) error {
	path := SwitchStatsPath(dir, experiment, sw)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("switch statistics: %w", err)
	}
	return WriteJSON(path, st)
}

// SwitchStatsFile is one switch's statistics as read back.
type SwitchStatsFile struct {
	Switch string
	Stats  SwitchStats
}

// ReadSwitchStats reads every switch's statistics of an experiment, in
// switch name order; an experiment without any is no error.
func ReadSwitchStats(dir, experiment string) ([]SwitchStatsFile, error) {
	files, err := filepath.Glob(SwitchStatsPath(dir, experiment, "*"))
	if err != nil {
		return nil, fmt.Errorf("list switch statistics: %w", err)
	}
	slices.Sort(files)
	var out []SwitchStatsFile
	for _, f := range files {
		b, err := os.ReadFile(f)
		if isNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read switch statistics: %w", err)
		}
		var st SwitchStats
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("parse %s: %w", f, err)
		}
		out = append(out, SwitchStatsFile{Switch: strings.TrimSuffix(filepath.Base(f), ".json"), Stats: st})
	}
	return out, nil
}
