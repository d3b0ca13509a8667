package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goodMatrix runs workloads/testdata/triggers.cm (4 nodes, flows up to
// 400,000 bytes) on h2..h5 beside serving RPCs; the bad cases below each
// break it in one place.
const goodMatrix = `name: m
topology:
  kind: star
  hosts: 6
link:
  rate: 100Mbit
transports:
  - name: homa
  - name: tcp
phases:
  - name: graph
    connection_matrix: ../../workloads/testdata/triggers.cm
    hosts: [h2-h5]
  - name: serve
    clients: [h1]
    servers: [h6]
    sizes: fixed:1000
    rate_rps: 100
duration: 2s
`

func TestGoodMatrix(t *testing.T) {
	plan := mustPlan(t, goodMatrix)
	ph := plan.Experiments[0].Scenario.Phases[0]
	if ph.Matrix == nil || len(ph.Matrix.Flows) != 9 || !filepath.IsAbs(ph.ConnectionMatrix) {
		t.Fatalf("phase %+v: want the matrix parsed, its path made absolute", ph)
	}
	hosts, err := plan.Base.MatrixHosts(ph, ph.Matrix)
	if err != nil || strings.Join(hosts, ",") != "h2,h3,h4,h5" {
		t.Errorf("hosts %v (%v), want h2..h5 in order", hosts, err)
	}
	// Without hosts, node i is the topology's i-th host.
	ph.Hosts = nil
	if hosts, err := plan.Base.MatrixHosts(ph, ph.Matrix); err != nil || strings.Join(hosts, ",") != "h1,h2,h3,h4" {
		t.Errorf("hosts %v (%v), want h1..h4", hosts, err)
	}
}

func TestBadMatrixPhases(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.cm")
	if err := os.WriteFile(bad, []byte("Nodes 2\nConnections 1\n0->1 start 0 size 1 colour red\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.cm")
	if err := os.WriteFile(big, []byte("Nodes 2\nConnections 1\n0->1 start 0 size 2000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const cm = "connection_matrix: ../../workloads/testdata/triggers.cm"
	wantBadEdits(t, goodMatrix, []badEdit{
		{"missing file", cm, "connection_matrix: nowhere.cm", 12, "phases[0].connection_matrix", "nowhere.cm: no such file"},
		{"bad line", cm, "connection_matrix: " + bad, 12, "phases[0].connection_matrix", bad + `:3: unknown key "colour"`},
		{"flow over homa's limit", cm, "connection_matrix: " + big, 12, "phases[0].connection_matrix", big + ":3: flow 1 is 2000000 bytes, but homa (transports[0]) carries at most 1000000"},
		{"too few hosts", "hosts: [h2-h5]", "hosts: [h2-h4]", 13, "phases[0].hosts", "has 4 nodes but 3 hosts are given"},
		{"host twice", "hosts: [h2-h5]", "hosts: [h2, h3, h4, h3]", 13, "phases[0].hosts", "host h3 is listed twice"},
		{"clients", "    hosts: [h2-h5]\n", "    hosts: [h2-h5]\n    clients: [h1]\n", 14, "phases[0].clients", "a connection-matrix phase takes connection_matrix and hosts, not clients"},
	})
}

// TestLongFlowsInTheTwin: a simulated run lets Homa carry a connection
// matrix's longest flow and a collective's step message, as it does a
// size distribution's longest message, when the file leaves
// max_message_bytes out; the emulation refuses both, naming the field.
func TestLongFlowsInTheTwin(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.cm")
	if err := os.WriteFile(big, []byte("Nodes 2\nConnections 1\n0->1 start 0 size 2097152\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const head = "name: l\ntopology: {kind: star, hosts: 4}\nlink: {rate: 100Gbit}\ntransports:\n  - name: homa\nphases:\n"
	matrix := head + "  - name: m\n    connection_matrix: " + big + "\n    hosts: [h1, h2]\nduration: 10ms\n"
	ring := head + "  - name: r\n    hosts: [all]\n    collective: {kind: ring-allreduce, bytes: 8MB, iterations: 1}\nduration: 10ms\n"
	for _, tc := range []struct {
		name, text string
		simulate   bool
		want       uint32 // homa's limit; 0: the plan fails
		field      string // the field the emulation's error names
	}{
		{"matrix, simulated", matrix, true, 2_097_152, ""},
		{"matrix, emulated", matrix, false, 0, "phases[0].connection_matrix"},
		{"collective, simulated", ring, true, 2_000_000, ""},
		{"collective, emulated", ring, false, 0, "phases[0].collective.bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Parse("l.yaml", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := src.Plan(Options{Simulate: tc.simulate})
			if tc.want == 0 {
				if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "carries at most 1000000") {
					t.Fatalf("plan error %v, want one naming %s and homa's limit", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := plan.Experiments[0].Scenario.Transports[0].Homa.MaxMessageBytes; got != tc.want {
				t.Errorf("homa carries at most %d, want %d", got, tc.want)
			}
			listed := false
			for _, d := range plan.ClockDefaults {
				listed = listed || d.Key == "transports[0].homa.max_message_bytes"
			}
			if !listed {
				t.Error("the raised limit is not listed among the clock's defaults")
			}
		})
	}
}

// TestMatrixRelativeToTheScenario: a matrix named relative to the scenario
// file is read from beside it wherever the command runs, for the checks
// and for the simulated clock's defaults (here the message limit its 2 MB
// flows need), not from the working directory.
func TestMatrixRelativeToTheScenario(t *testing.T) {
	dir := t.TempDir()
	cm := "Nodes 2\nConnections 1\n0->1 id 1 start 0 size 2000000\n"
	sc := `name: rel
simulated: true
topology: {kind: star, hosts: 2}
link: {rate: 10Gbit}
transports: [{name: homa}]
phases:
  - {name: m, hosts: [all], connection_matrix: two.cm}
duration: 10ms
`
	if err := os.WriteFile(filepath.Join(dir, "two.cm"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rel.yaml")
	if err := os.WriteFile(path, []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := Load(path, Options{}) // from the package's directory, not dir
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Experiments[0].Scenario.Transports[0].MaxMessage(); got < 2000000 {
		t.Errorf("message limit %d, want at least the matrix's 2000000-byte flow", got)
	}
}
