package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Manifest is the part of a run's manifest.json that reports read. Raw keeps
// the whole file so the report can show it verbatim.
type Manifest struct {
	Run          string               `json:"run"`
	ScenarioFile string               `json:"scenario_file"`
	Started      int64                `json:"started_unix_ns"`
	Ended        int64                `json:"ended_unix_ns"`
	Incomplete   bool                 `json:"incomplete"`
	Error        string               `json:"error"`
	Versions     map[string]string    `json:"versions"`
	GitCommit    string               `json:"git_commit"`
	LinkBps      float64              `json:"link_bps"`
	Fidelity     []string             `json:"fidelity"`
	Experiments  []ManifestExperiment `json:"experiments"`
	// Calibration is the testbed's own digest of the calibration phase:
	// transport -> request length -> median unloaded RTT (µs). Reports use
	// it only when rpcs.csv has no calibration rows for a transport.
	Calibration map[string]struct {
		RTTus map[string]float64 `json:"rtt_us"`
	} `json:"calibration"`

	Raw json.RawMessage `json:"-"`
}

// ManifestExperiment is one experiment entry of manifest.json.
type ManifestExperiment struct {
	Name       string         `json:"name"`
	Transport  string         `json:"transport"`
	Params     map[string]any `json:"params"`
	LinkBps    float64        `json:"link_bps"`
	Started    int64          `json:"started_unix_ns"`
	Ended      int64          `json:"ended_unix_ns"`
	WarmupMs   float64        `json:"warmup_ms"`
	DurationMs float64        `json:"duration_ms"`
	Receivers  []string       `json:"receivers"`
	// ConfiguredBps is the request load the open-loop clients were set to
	// offer (bits/s); 0 when unknown or closed-loop.
	ConfiguredBps float64 `json:"configured_bps"`
	// ConfiguredRPS is the sum of those clients' rates (RPCs/s).
	ConfiguredRPS float64  `json:"configured_rps"`
	Fidelity      []string `json:"fidelity"`
	Incomplete    bool     `json:"incomplete"`
	// TransportCounters are agent transport counters merged over every host
	// that took part (Homa internals), when the orchestrator records them.
	TransportCounters map[string]uint64 `json:"transport_counters"`
	// Hosts are the same counters host by host, with each host's role.
	Hosts []ManifestHost `json:"hosts"`
}

// ManifestHost is one host's counters in an experiment entry.
type ManifestHost struct {
	Host string `json:"host"`
	// Role is "client", "server" or "client+server".
	Role      string            `json:"role"`
	Served    uint64            `json:"served"`
	Transport map[string]uint64 `json:"transport"`
}

// readManifest loads manifest.json. A missing manifest is not an error: the
// report is still built from the records, with a fidelity warning.
func readManifest(dir string) (*Manifest, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return &Manifest{}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, false, fmt.Errorf("parse %s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	m.Raw = b
	return &m, true, nil
}
