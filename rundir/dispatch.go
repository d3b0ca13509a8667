package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// DispatchFile is the file of a run whose experiments ran as separate
// tasks (homatb run --executor slurm, or --jobs N): what every task needs
// to rebuild the run's plan, and which task ran which experiment.
const DispatchFile = "dispatch.json"

// Dispatch is dispatch.json.
type Dispatch struct {
	// Scenario is the scenario file's absolute path, on a filesystem every
	// task sees; ScenarioSHA256 its content's hash, which each task checks
	// so that an edit after submission cannot change a run half way.
	Scenario       string `json:"scenario"`
	ScenarioSHA256 string `json:"scenario_sha256"`
	// Repetitions, Only, Simulate and HostNIC are the run's options that
	// change its plan or how it runs (homatb run's flags of those names).
	Repetitions int      `json:"repetitions,omitempty"`
	Only        []string `json:"only,omitempty"`
	Simulate    bool     `json:"simulate"`
	HostNIC     string   `json:"host_nic,omitempty"`
	// Experiments are the plan's experiments in order: task i runs
	// Experiments[i].
	Experiments []string `json:"experiments"`
	// Executor is "local" or "slurm"; JobID the Slurm job array's id.
	Executor string `json:"executor"`
	JobID    string `json:"job_id,omitempty"`
	// Submitted is when the tasks were handed over (Unix ns).
	Submitted int64 `json:"submitted_unix_ns"`
	// Merged is set once the tasks' records were merged into the run
	// directory.
	Merged bool `json:"merged,omitempty"`
}

// TaskDir is where the task of experiment name writes its records: a run
// directory of its own, merged into dir afterwards.
func TaskDir(dir, name string) string { return filepath.Join(dir, "tasks", name) }

// TaskLog is the task's own output (its progress and errors).
func TaskLog(dir, name string) string { return filepath.Join(dir, "tasks", name+".log") }

// WriteDispatch writes d as dir's dispatch.json, atomically.
func WriteDispatch(dir string, d *Dispatch) error {
	return WriteJSON(filepath.Join(dir, DispatchFile), d)
}

// ReadDispatch reads dir's dispatch.json; os.ErrNotExist (wrapped) when
// the run ran in one process.
func ReadDispatch(dir string) (*Dispatch, error) {
	b, err := os.ReadFile(filepath.Join(dir, DispatchFile))
	if err != nil {
		return nil, err
	}
	d := &Dispatch{}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, DispatchFile), err)
	}
	if len(d.Experiments) == 0 {
		return nil, fmt.Errorf("%s: no experiments", filepath.Join(dir, DispatchFile))
	}
	return d, nil
}
