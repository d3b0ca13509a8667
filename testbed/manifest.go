package testbed

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/homatb/homatb/testbed/scenario"
)

// Manifest is manifest.json (docs/formats.md): what ran, on what, and how
// far it got. It is rewritten after every experiment, so an interrupted run
// keeps what it measured.
type Manifest struct {
	Run          string             `json:"run"`
	Tag          string             `json:"tag"`
	ScenarioFile string             `json:"scenario_file"`
	Scenario     *scenario.Scenario `json:"scenario"`
	Started      int64              `json:"started_unix_ns"`
	Ended        int64              `json:"ended_unix_ns"`
	Incomplete   bool               `json:"incomplete"`
	// Error says why the run stopped early, when it did.
	Error       string               `json:"error,omitempty"`
	Versions    map[string]string    `json:"versions"`
	GitCommit   string               `json:"git_commit"`
	Machine     Machine              `json:"machine"`
	LinkBps     uint64               `json:"link_bps"`
	Seeds       []uint64             `json:"seeds"`
	Calibration map[string]Calibrate `json:"calibration,omitempty"`
	Fidelity    []string             `json:"fidelity"`
	Experiments []ExperimentRecord   `json:"experiments"`

	mu   sync.Mutex
	path string
}

// Machine describes the host the run used.
type Machine struct {
	CPUs     int    `json:"cpus"`
	MemBytes uint64 `json:"mem_bytes"`
	Hostname string `json:"hostname"`
}

// Calibrate is the outcome of one transport's calibration.
type Calibrate struct {
	// RTTus maps message size to the median unloaded RTT in microseconds.
	RTTus map[uint32]float64 `json:"rtt_us"`
	// UnschedBytes is link rate x the smallest size's unloaded RTT (Homa).
	UnschedBytes uint32 `json:"unsched_bytes,omitempty"`
}

// ExperimentRecord is one experiment's entry.
type ExperimentRecord struct {
	Name       string            `json:"name"`
	Transport  string            `json:"transport"`
	Params     map[string]string `json:"params"`
	LinkBps    uint64            `json:"link_bps"`
	Started    int64             `json:"started_unix_ns"`
	Ended      int64             `json:"ended_unix_ns"`
	WarmupMs   int64             `json:"warmup_ms"`
	DurationMs int64             `json:"duration_ms"`
	Seed       uint64            `json:"seed"`
	Receivers  []string          `json:"receivers"`
	// ConfiguredBps is the request load the open-loop clients were
	// configured to offer (bits/s, message bytes only); 0 for closed loops.
	ConfiguredBps float64 `json:"configured_bps"`
	// ConfiguredRPS is the sum of those clients' rates (RPCs/s).
	ConfiguredRPS float64  `json:"configured_rps"`
	Fidelity      []string `json:"fidelity"`
	Incomplete    bool     `json:"incomplete"`
	// Counters are the agents' books summed over hosts.
	RPCs struct {
		Issued    uint64 `json:"issued"`
		Completed uint64 `json:"completed"`
		Failed    uint64 `json:"failed"`
		InFlight  uint64 `json:"in_flight"`
	} `json:"rpcs"`
	// TransportCounters are the transport counters of every host that took
	// part, clients and servers, summed (gauges such as active_max take the
	// largest host's value); Hosts has each host's own, with its role.
	TransportCounters map[string]uint64 `json:"transport_counters,omitempty"`
	Hosts             []HostCounters    `json:"hosts,omitempty"`
	// CPUBusy is the machine's busy fraction over the experiment;
	// AgentCPUMs the CPU time the agents that took part used.
	CPUBusy    float64 `json:"cpu_busy"`
	AgentCPUMs uint64  `json:"agent_cpu_ms"`
}

// save writes the manifest atomically (write and rename), so a reader never
// sees half a file even when the run is killed mid-write.
func (m *Manifest) save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	tmp := m.path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := os.Rename(tmp, m.path); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

// update applies f under the lock and saves.
func (m *Manifest) update(f func(*Manifest)) error {
	m.mu.Lock()
	f(m)
	m.mu.Unlock()
	return m.save()
}

// versions collects what the manifest needs to make a run reproducible.
func versions() (map[string]string, string) {
	v := map[string]string{"go": runtime.Version()}
	commit := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		v["homatb"] = info.Main.Version
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		v["kernel"] = utsString(u.Release[:])
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "mininet").Output(); err == nil {
		v["mininet"] = string(out)
	}
	if commit == "" {
		// Builds with -buildvcs=false carry no revision: ask git, if the
		// working directory is a checkout.
		if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
			commit = strings.TrimSpace(string(out))
		}
	}
	return v, commit
}

func utsString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU()}
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		m.MemBytes = si.Totalram * uint64(si.Unit)
	}
	m.Hostname, _ = os.Hostname()
	return m
}

func newManifest(runDir, run, tag, file string, plan *scenario.Plan) *Manifest {
	v, commit := versions()
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	m := &Manifest{
		Run: run, Tag: tag, ScenarioFile: abs, Scenario: plan.Base, Incomplete: true,
		Versions: v, GitCommit: commit, Machine: machine(), LinkBps: uint64(plan.Base.Link.Rate),
		Fidelity: []string{}, Experiments: []ExperimentRecord{}, Calibration: map[string]Calibrate{},
		path: filepath.Join(runDir, "manifest.json"),
	}
	seen := map[uint64]bool{}
	for _, e := range plan.Experiments {
		if !seen[e.Seed] {
			seen[e.Seed] = true
			m.Seeds = append(m.Seeds, e.Seed)
		}
	}
	return m
}
