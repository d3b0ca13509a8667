package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/reports"
)

// writeIncastRun writes a run directory of incast-responses.yaml's shape,
// two configurations (homa, homa-ic): h1's multiget RPCs (100 B requests,
// 20 KB responses, 10-19.9 ms) and h10's probes (64 B both ways; 1-1.99 ms
// with homa, a tenth of that with homa-ic). old makes it a run written
// before client_phases and the two-way definition: no client_phases, no
// headline_phase, and a summary.json whose short set was the 200 RPCs of
// short requests, multiget included.
func writeIncastRun(t *testing.T, old bool) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("experiment,transport,phase,client,server,req_bytes,resp_bytes,intended_ns,sent_ns,done_ns,rtt_ns,status\n")
	for _, exp := range []struct {
		name  string
		scale int64
	}{{"x-homa", 1}, {"x-homa-ic", 10}} {
		for i := range int64(100) {
			at := 1_000_000_000 + i*1_000_000
			rtt := (10_000 + 100*i) * 1000
			fmt.Fprintf(&b, "%s,homa,measure,h1,10.0.0.2:4000,100,20000,%d,%d,%d,%d,completed\n", exp.name, at, at, at+rtt, rtt)
			rtt = (1_000 + 10*i) * 1000 / exp.scale
			fmt.Fprintf(&b, "%s,homa,measure,h10,10.0.0.1:4000,64,64,%d,%d,%d,%d,completed\n", exp.name, at, at, at+rtt, rtt)
		}
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("rpcs.csv", b.String())
	phases := `, "client_phases": {"h1": "multiget", "h10": "probes"}`
	report := `, "report": {"headline_phase": "probes"}`
	if old {
		phases, report = "", ""
		write("summary.json", `{"experiments": [{"name": "x-homa", "transport": "homa", "short": {"max_length": 1000, "count": 200, "p50_us": 5000, "p99_us": 19800}},
			{"name": "x-homa-ic", "transport": "homa", "short": {"max_length": 1000, "count": 200, "p50_us": 5000, "p99_us": 19800}}]}`)
	}
	write("manifest.json", `{"run": "r", "scenario": {"phases": [{"name": "multiget"}, {"name": "probes"}]`+report+`},
		"experiments": [
		{"name": "x-homa", "transport": "homa", "config": "homa", "duration_ms": 100`+phases+`},
		{"name": "x-homa-ic", "transport": "homa", "config": "homa-ic", "duration_ms": 100`+phases+`}]}`)
	return dir
}

// TestReportRecomputesOldRun: `homatb report` on a run directory written
// before the two-way definition loads it and rewrites summary.json with
// it (the multiget RPCs leave short); on a run with client_phases and a
// headline phase, the terminal prints the headline phase's P99 and a row
// per phase and configuration.
func TestReportRecomputesOldRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old       bool
		wantLabel string
		wantP99   float64 // homa's short P99, µs: the probes' either way
		wantRows  []string
	}{
		{"old run", true, "short-message", 1_980, nil},
		{"headline phase", false, "probes", 1_980, []string{
			"multiget  x-homa      100  100 B    14.9 ms  19.8 ms",
			"multiget  x-homa-ic   100  100 B    14.9 ms  19.8 ms",
			"probes    x-homa      100  64 B     1.49 ms  1.98 ms",
			"probes    x-homa-ic   100  64 B     149 µs   198 µs",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeIncastRun(t, tc.old)
			out, err := runCmd(t, "report", dir)
			if err != nil {
				t.Fatalf("report: %v\n%s", err, out)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var sum reports.Summary
			if err := json.Unmarshal(raw, &sum); err != nil {
				t.Fatal(err)
			}
			if len(sum.Experiments) != 2 {
				t.Fatalf("%d experiments, want 2", len(sum.Experiments))
			}
			e := sum.Experiments[0]
			if e.Short.Count != 100 || e.Short.P99us == nil || *e.Short.P99us != tc.wantP99 {
				t.Errorf("%s short: %d RPCs, P99 %v; want 100, %v µs", e.Name, e.Short.Count, e.Short.P99us, tc.wantP99)
			}
			if got := sum.ShortLabel(); got != tc.wantLabel {
				t.Errorf("label %q, want %q", got, tc.wantLabel)
			}
			if !strings.Contains(out, tc.wantLabel+" P50") {
				t.Errorf("output does not name the headline set %q:\n%s", tc.wantLabel, out)
			}
			if has := strings.Contains(out, "by phase"); has != (tc.wantRows != nil) {
				t.Errorf("by-phase table printed %v, want %v:\n%s", has, tc.wantRows != nil, out)
			}
			for _, r := range tc.wantRows {
				if !strings.Contains(out, r) {
					t.Errorf("output lacks the row %q:\n%s", r, out)
				}
			}
		})
	}
}

// TestPhaseLinesOrder: the per-phase table groups by phase, in the order
// the experiments list them, a row per configuration; nothing without
// phases.
func TestPhaseLinesOrder(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	sum := &reports.Summary{Experiments: []reports.Experiment{
		{Name: "a", Phases: []reports.PhaseStats{{Name: "bulk", Count: 3, MinBytes: 10, MaxBytes: 20, P99us: f(5000)}, {Name: "probes", Count: 2, MinBytes: 64, MaxBytes: 64, P99us: f(50)}}},
		{Name: "b", Phases: []reports.PhaseStats{{Name: "probes", Count: 4, MinBytes: 64, MaxBytes: 64, P99us: f(70)}}},
	}}
	got := phaseLines(sum)
	want := []string{
		"by phase (RTT of each phase's measured RPCs, whatever their size):",
		"  phase   experiment  n  request  P50  P99      P99.9",
		"  bulk    a           3  10-20 B  -    5.00 ms  -",
		"  probes  a           2  64 B     -    50.0 µs  -",
		"  probes  b           4  64 B     -    70.0 µs  -",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("phaseLines =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := phaseLines(&reports.Summary{Experiments: []reports.Experiment{{Name: "a"}}}); got != nil {
		t.Errorf("no phases: %q", got)
	}
}
