package reports

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

// TestRealSmokeRun builds the report of a real run directory written by
// `homatb run` (scenarios/smoke.yaml with TCP only, testdata/smoke-tcp), and
// checks it against the orchestrator's own books in the manifest: the
// agents' RPC counts and the calibration medians.
func TestRealSmokeRun(t *testing.T) {
	const dir = "testdata/smoke-tcp"
	out := t.TempDir()
	sum, err := Build(context.Background(), dir, stats.WithOutputDir(out))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Calibration map[string]struct {
			RTTus map[string]float64 `json:"rtt_us"`
		} `json:"calibration"`
		Experiments []struct {
			Name string `json:"name"`
			RPCs struct {
				Issued, Completed, Failed uint64
			} `json:"rpcs"`
		} `json:"experiments"`
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	if len(sum.Experiments) != len(man.Experiments) {
		t.Fatalf("%d experiments, manifest has %d", len(sum.Experiments), len(man.Experiments))
	}
	for i, e := range sum.Experiments {
		m := man.Experiments[i]
		// The agents count every RPC they issued, warm-up included.
		if got := uint64(e.RPCs.Issued + e.RPCs.Warmup); got != m.RPCs.Issued {
			t.Errorf("%s: %d measure + warm-up RPCs in the records, the agents issued %d", e.Name, got, m.RPCs.Issued)
		}
		if e.RPCs.Failed != int64(m.RPCs.Failed) {
			t.Errorf("%s: %d failed, the agents say %d", e.Name, e.RPCs.Failed, m.RPCs.Failed)
		}
		if !e.Switch.Present || len(e.Links) == 0 || len(e.Series) == 0 {
			t.Errorf("%s: switch statistics or telemetry not picked up", e.Name)
		}
		if e.Slowdown == nil || e.Short.Count == 0 {
			t.Errorf("%s: no slowdown or no short messages", e.Name)
		}
		if e.Homa == nil || len(e.Homa.Counters) == 0 {
			t.Errorf("%s: transport counters from the manifest missing", e.Name)
		}
	}
	// The report's unloaded RTTs are the calibration medians the testbed
	// computed independently.
	rs, err := stats.ReadRecords(context.Background(), dir, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for tr, cal := range man.Calibration {
		base := stats.NewOwnBaseline(rs.Calib[tr])
		if base == nil {
			t.Fatalf("no calibration rows for %s", tr)
		}
		for size, us := range cal.RTTus {
			var l int64
			if err := json.Unmarshal([]byte(size), &l); err != nil {
				t.Fatal(err)
			}
			if got := base.At(l) / 1e3; math.Abs(got-us) > 1 {
				t.Errorf("%s %d B: unloaded RTT %.1f µs, the testbed's median %.1f µs", tr, l, got, us)
			}
		}
	}
}

// TestManifestCalibrationFallback drops the calibration rows of the real
// run: slowdown must then come from the manifest's calibration digest and
// agree with the one computed from the rows.
func TestManifestCalibrationFallback(t *testing.T) {
	const src = "testdata/smoke-tcp"
	withRows, err := Build(context.Background(), src, stats.WithOutputDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"manifest.json", "telemetry.csv"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rc, _, err := stats.OpenRecords(src)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	all, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(all)), "\n") {
		if !strings.Contains(line, ",calibrate,") {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "rpcs.csv"), []byte(strings.Join(kept, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	e, w := sum.Experiments[0], withRows.Experiments[0]
	if e.Calibration == nil || e.Calibration.Experiment != "manifest.json calibration" || e.Slowdown == nil {
		t.Fatalf("calibration %+v, slowdown %v: the manifest digest was not used", e.Calibration, e.Slowdown)
	}
	if math.Abs(*e.Slowdown.P50 / *w.Slowdown.P50 - 1) > 0.01 {
		t.Errorf("slowdown P50 %.3f from the manifest, %.3f from the rows", *e.Slowdown.P50, *w.Slowdown.P50)
	}
}
