package simulate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// triggersMatrix is the matrix the agents' test runs too.
const triggersMatrix = "../../workloads/testdata/triggers.cm"

// TestMatrixInTheTwin runs triggersMatrix on Homa and the TCP model: every
// flow completes, the records show no triggered flow started before its
// trigger fired, and summary.json has the flows' statistics.
func TestMatrixInTheTwin(t *testing.T) {
	abs, err := filepath.Abs(triggersMatrix)
	if err != nil {
		t.Fatal(err)
	}
	p := load(t, `name: cm
topology: {kind: star, hosts: 5}
link: {rate: 1Gbit}
transports:
  - name: homa
  - name: tcp
phases:
  - name: graph
    connection_matrix: `+abs+`
    hosts: [h2, h3, h4, h5]
calibration: {sizes: [100, 1000, 10000, 100000]}
warmup: 1ms
duration: 1s
`)
	m, err := workloads.LoadMatrix(abs)
	if err != nil {
		t.Fatal(err)
	}
	run := runSim(t, p)
	var rows []rundir.RPC
	for _, r := range readAllRPCs(t, run) {
		if r.Matrix != "" {
			rows = append(rows, r)
		}
	}
	byExp := map[string][]rundir.RPC{}
	for _, r := range rows {
		byExp[r.Experiment] = append(byExp[r.Experiment], r)
		if r.Client == "h1" || r.ServerHost == "h1" {
			t.Fatalf("row %+v: h1 holds no node", r)
		}
	}
	if len(byExp) != 2 {
		t.Fatalf("matrix rows of %d experiments, want 2", len(byExp))
	}
	for exp, rs := range byExp {
		n, err := rundir.CheckMatrixOrder(rs, m)
		if err != nil {
			t.Fatalf("%s: %v", exp, err)
		}
		if n != 5 {
			t.Errorf("%s: checked %d triggered flows, want 5", exp, n)
		}
	}
	if b, err := os.ReadFile(filepath.Join(run, "report.html")); err != nil || !strings.Contains(string(b), `id="matrices"`) {
		t.Errorf("report.html: %v, want its Connection matrices table", err)
	}
	var s struct {
		Experiments []struct {
			Name  string
			Flows []struct {
				Flows, Completed, Unstarted, Notifications int
				FCT                                        struct{ P50, Max *float64 } `json:"fct_us"`
				Completion                                 *float64                    `json:"completion_us"`
				Slowdown                                   struct{ P50, Max *float64 } `json:"slowdown"`
				OrderChecked                               int                         `json:"order_checked"`
				OrderError                                 string                      `json:"order_error"`
			} `json:"flows"`
		} `json:"experiments"`
	}
	decodeSummary(t, run, &s)
	for _, e := range s.Experiments {
		if len(e.Flows) != 1 {
			t.Fatalf("%s: %d matrices in the summary, want 1", e.Name, len(e.Flows))
		}
		f := e.Flows[0]
		if f.Flows != 9 || f.Completed != 9 || f.Unstarted != 0 || f.Notifications != 4 || f.Completion == nil || f.FCT.Max == nil ||
			f.OrderChecked != 5 || f.OrderError != "" {
			t.Errorf("%s: flows %+v", e.Name, f)
			continue
		}
		// The chain's three flows are on the critical path: 0.9 MB at 1
		// Gbit/s is 7.2 ms.
		if *f.Completion < 7200 || *f.Completion > 20_000 {
			t.Errorf("%s: the graph took %.0f µs, want 7.2 to 20 ms", e.Name, *f.Completion)
		}
		// No flow beats its ideal, and the run's slowest is its own.
		if f.Slowdown.P50 == nil || f.Slowdown.Max == nil || *f.Slowdown.P50 < 0.99 || *f.Slowdown.Max < *f.Slowdown.P50 {
			t.Errorf("%s: flows' slowdown P50 %v, max %v; want both at least 1", e.Name, f.Slowdown.P50, f.Slowdown.Max)
			continue
		}
		t.Logf("%s: graph %.0f µs, FCT P50 %.0f max %.0f µs, slowdown P50 %.2f max %.2f", e.Name, *f.Completion, *f.FCT.P50, *f.FCT.Max, *f.Slowdown.P50, *f.Slowdown.Max)
	}
}
