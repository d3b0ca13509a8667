package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/p4/switchstats"
)

// multipathScenario is two leaves of two hosts and two spines; h1 and h2
// (leaf l1) send to h3 and h4 (leaf l2), so all their traffic crosses the
// spines, at a light load (3.2 Mbit/s per client) so that a busy 2-vCPU
// machine keeps up. FAULTS is replaced by the faults list.
const multipathScenario = `name: mp
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
link: {rate: 100Mbit}
switch: {target: embedded, postcards: false}
transports:
  - name: homa
phases:
  - {name: bulk, clients: [h1, h2], servers: [h3, h4], sizes: fixed:20000, arrivals: poisson, rate_rps: 20}
warmup: 200ms
duration: 3s
drain: 300ms
calibration: {sizes: [100], samples: 3}
FAULTS`

// spineBytes runs the scenario with faults and returns the bytes each
// spine sent in its experiment (the switch statistics the report shows
// per port) and the run's summary.
func spineBytes(t *testing.T, bin, faults string) (map[string]uint64, summaryFile) {
	t.Helper()
	return spineBytesOf(t, bin, strings.Replace(multipathScenario, "FAULTS", faults, 1))
}

// spineBytesOf runs a variant of multipathScenario (experiment mp-homa)
// and returns what spineBytes does.
func spineBytesOf(t *testing.T, bin, text string) (map[string]uint64, summaryFile) {
	t.Helper()
	dir, out, err := runScenarioText(t, bin, text, 180*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, sp := range []string{"p1", "p2"} {
		b, err := os.ReadFile(filepath.Join(dir, "switch", "mp-homa", sp+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var st switchstats.Stats
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("%s.json: %v", sp, err)
		}
		for _, p := range st.Ports {
			for _, q := range p.Queues {
				got[sp] += q.SentBytes
			}
		}
	}
	return got, readSummary(t, dir, out)
}

// runScenarioText runs the scenario text with the homatb binary bin in a
// fresh run directory and registry, at most timeout, and checks nothing of
// the run is left afterwards. err says why a run failed or came out
// incomplete, with its output and log.
func runScenarioText(t *testing.T, bin, text string, timeout time.Duration) (dir string, out *bytes.Buffer, err error) {
	t.Helper()
	dir, reg := runDirs(t)
	file := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out = &bytes.Buffer{}
	cmd := exec.CommandContext(ctx, bin, "run", file, "--run-dir", dir, "--registry", reg, "--binary", bin)
	cmd.Dir = ".." // from the repository's root, where a BMv2 run finds build/tor.json
	cmd.Stdout, cmd.Stderr = out, out
	runErr := cmd.Run()
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		return dir, out, fmt.Errorf("homatb run: %v, and no manifest.json\n%s", runErr, out.String())
	}
	m := readManifest(t, dir)
	t.Cleanup(func() { assertNothingLeft(t, reg, m.Tag) })
	if runErr != nil || m.Incomplete {
		logs, _ := os.ReadFile(filepath.Join(dir, "logs", "homatb.log"))
		return dir, out, fmt.Errorf("homatb run: %v (incomplete %v)\n%s\n--- logs/homatb.log ---\n%s", runErr, m.Incomplete, out.String(), tail(logs, 4000))
	}
	return dir, out, nil
}

// TestLeafSpineUsesBothSpines runs traffic across a two-spine fabric: both
// spines carry a fair share of it; with the link l1-p1 down for most of
// the measurement, the controller moves the paths to p2, which then
// carries most of it, and every RPC still completes.
func TestLeafSpineUsesBothSpines(t *testing.T) {
	needRunPrereqs(t)
	bin := buildHomatb(t)

	both, s := spineBytes(t, bin, "")
	if both["p1"] == 0 || both["p2"] == 0 || both["p1"] > 2*both["p2"] || both["p2"] > 2*both["p1"] {
		t.Errorf("spines sent %v bytes: want both within 2x of each other", both)
	}
	checkMultipathBooks(t, s, false)
	t.Logf("no fault: spine bytes %v", both)

	faulted, s := spineBytes(t, bin, "faults:\n  - {link: l1-p1, down: {at: 0s, for: 2500ms}}\n")
	if faulted["p2"] < 3*faulted["p1"] {
		t.Errorf("l1-p1 down 2.5 s of 3 s: spines sent %v bytes, want p2 at least 3x p1", faulted)
	}
	checkMultipathBooks(t, s, true)
	t.Logf("l1-p1 down: spine bytes %v", faulted)
}

// checkMultipathBooks checks the experiment's books balance and, without a fault,
// that nothing failed.
func checkMultipathBooks(t *testing.T, s summaryFile, faulted bool) {
	t.Helper()
	for _, e := range s.Experiments {
		r := e.RPCs
		if r.Issued == 0 || r.Issued != r.Completed+r.Failed {
			t.Errorf("%s: issued %d, completed %d, failed %d", e.Name, r.Issued, r.Completed, r.Failed)
		}
		if !faulted && r.Failed != 0 {
			t.Errorf("%s: %d RPCs failed without a fault: %v", e.Name, r.Failed, r.Failures)
		}
	}
}
