package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/homatb/homatb/internal/buildinfo"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
)

// Manifest is the run's manifest.json (rundir.Manifest), kept up to date
// on disk during the run: it is rewritten after every experiment, so an
// interrupted run keeps what it measured.
type Manifest struct {
	rundir.Manifest

	mu  sync.Mutex
	dir string
}

// save writes the manifest atomically.
func (m *Manifest) save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return rundir.WriteManifest(m.dir, &m.Manifest)
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
	commit := buildinfo.Commit()
	if info, ok := debug.ReadBuildInfo(); ok {
		v["homatb"] = info.Main.Version
	}
	if k := buildinfo.Kernel(); k != "" {
		v["kernel"] = k
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

func machine() rundir.Machine {
	m := rundir.Machine{CPUs: runtime.NumCPU()}
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
	m := &Manifest{Manifest: rundir.Manifest{
		Run: run, Tag: tag, ScenarioFile: abs, Scenario: plan.Base.Doc(), Incomplete: true, Started: time.Now().UnixNano(),
		Mode:     rundir.ModeEmulated,
		Versions: v, GitCommit: commit, Machine: machine(),
		Baseline: plan.Base.BaselineConfig(), Fidelity: []string{}, Experiments: []rundir.Experiment{}, Calibration: map[string]rundir.Calibration{},
	}, dir: runDir}
	m.Order, m.Seeds = plan.Order(), plan.Seeds()
	return m
}
