package reports

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

func TestFailureKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "unspecified"},
		{"homa: call 2038203913890130650 to 10.0.0.1: homa: rpc timed out", "homa: call N to 10.0.0.1: homa: rpc timed out"},
		{"dial tcp 10.0.0.1:4000: connect: connection refused", "dial tcp 10.0.0.1:4000: connect: connection refused"},
		{"read tcp 10.0.0.2:45678->10.0.0.1:4000: reset", "read tcp 10.0.0.2:N->10.0.0.1:4000: reset"},
	}
	for _, tc := range tests {
		if got := stats.FailureKey(tc.in); got != tc.want {
			t.Errorf("failureKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Timeouts of many calls to one receiver count as one reason.
	e := &stats.ExpRecords{Failures: map[string]int64{}}
	for _, id := range []string{"111111", "222222", "333333"} {
		k := stats.FailureKey("homa: call " + id + " to 10.0.0.1: homa: rpc timed out")
		e.Failures[k]++
	}
	if len(e.Failures) != 1 {
		t.Errorf("reasons %v, want one", e.Failures)
	}
}

// TestCountersByRole gives the manifest per-host counters for an incast
// (clients h2, h3; server h1) and checks that summary.json keeps the
// server's grants apart from the clients' and that the report shows them.
func TestCountersByRole(t *testing.T) {
	run := synthRun{seed: 3, lengths: []int64{100, 100000}, noTel: true, exps: []synthExp{
		{name: "inc-homa", transport: "homa", n: 500, meanNs: 20_000},
	}}
	dir := t.TempDir()
	run.write(t, dir)
	editFirstExperiment(t, dir, func(exp map[string]any) {
		delete(exp, "transport_counters") // the reports merge them from hosts
		exp["hosts"] = []map[string]any{
			{"host": "h1", "role": "server", "served": 40, "transport": map[string]uint64{"homa_tx_grant_p7": 900, "homa_resends_sent": 4, "homa_active_max": 2}},
			{"host": "h2", "role": "client", "transport": map[string]uint64{"homa_rx_grant_p7": 450, "homa_tx_data_p0": 3000, "homa_active_max": 0}},
			{"host": "h3", "role": "client", "transport": map[string]uint64{"homa_rx_grant_p7": 440, "homa_tx_data_p0": 2900, "homa_resends_received": 4}},
		}
	})
	if _, err := Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Experiments []struct {
			Internals struct {
				Counters map[string]uint64            `json:"counters"`
				ByRole   map[string]map[string]uint64 `json:"by_role"`
				Hosts    map[string]int               `json:"hosts_by_role"`
			} `json:"transport_internals"`
		} `json:"experiments"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	in := sum.Experiments[0].Internals
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"server grants sent", in.ByRole["server"]["homa_tx_grant_p7"], 900},
		{"client grants received", in.ByRole["client"]["homa_rx_grant_p7"], 890},
		{"client data sent", in.ByRole["client"]["homa_tx_data_p0"], 5900},
		{"clients sent no grants", in.ByRole["client"]["homa_tx_grant_p7"], 0},
		{"all hosts: grants sent", in.Counters["homa_tx_grant_p7"], 900},
		{"all hosts: resends both ways", in.Counters["homa_resends_sent"] + in.Counters["homa_resends_received"], 8},
		{"all hosts: active_max is a peak", in.Counters["homa_active_max"], 2},
		{"server hosts", uint64(in.Hosts["server"]), 1},
		{"client hosts", uint64(in.Hosts["client"]), 2},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, s := range []string{"inc-homa: transport counters by host role", "server (1 hosts)", "client (2 hosts)", "<td class=\"l\">homa_tx_grant_p7</td><td>0</td><td>900</td>"} {
		if !strings.Contains(page, s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
}

// TestConfiguredLoadShortfall checks the fidelity warning for clients that
// issued clearly fewer RPCs than the configured rate asks for, and its
// absence when they kept up.
func TestConfiguredLoadShortfall(t *testing.T) {
	for _, tc := range []struct {
		rps  float64
		warn bool
	}{{100, false}, {200, true}} {
		run := synthRun{seed: 5, lengths: []int64{100}, noTel: true, exps: []synthExp{
			{name: "p-homa", transport: "homa", n: 1000, meanNs: 10_000},
		}}
		sum, _ := buildSynth(t, run, func(exp map[string]any) {
			exp["configured_rps"], exp["configured_bps"] = tc.rps, tc.rps*100*8
		})
		e := sum.Experiments[0]
		warned := false
		for _, f := range e.Fidelity {
			warned = warned || strings.Contains(f, "could not keep up with the configured load")
		}
		if warned != tc.warn {
			t.Errorf("configured %g/s for 1000 RPCs in 10 s: warned %v, want %v (%q)", tc.rps, warned, tc.warn, e.Fidelity)
		}
		if e.ConfiguredGbps == nil || *e.ConfiguredGbps != tc.rps*100*8/1e9 {
			t.Errorf("configured_gbps = %v, want %g", e.ConfiguredGbps, tc.rps*100*8/1e9)
		}
	}
	// With a closed-loop client besides, the experiment's configured load
	// is unknown: only the open-loop part is given.
	run := synthRun{seed: 5, lengths: []int64{100}, noTel: true, exps: []synthExp{{name: "c-homa", transport: "homa", n: 100, meanNs: 10_000}}}
	sum, _ := buildSynth(t, run, func(exp map[string]any) {
		exp["configured_rps"], exp["configured_bps"], exp["unrated_clients"] = 10.0, 8000.0, 1
	})
	if e := sum.Experiments[0]; e.ConfiguredGbps != nil || e.ConfiguredOpenGbps == nil || *e.ConfiguredOpenGbps != 8e-6 {
		t.Errorf("with a closed loop: configured_gbps %v, open-loop part %v; want null and 8e-06", e.ConfiguredGbps, e.ConfiguredOpenGbps)
	}
}

// editFirstExperiment rewrites the first experiment entry of a run
// directory's manifest.json with f.
func editFirstExperiment(t *testing.T, dir string, f func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var man map[string]any
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	f(man["experiments"].([]any)[0].(map[string]any))
	if err := os.WriteFile(path, mustJSON(t, man), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMeanLinkUtil: mean_link_util is the mean of the rated links' mean
// utilisation, and null without telemetry.
func TestMeanLinkUtil(t *testing.T) {
	for _, noTel := range []bool{false, true} {
		run := synthRun{seed: 9, lengths: []int64{1000}, noTel: noTel, telSamples: 50, exps: []synthExp{
			{name: "u-homa", transport: "homa", n: 200, meanNs: 10_000},
		}}
		sum, _ := buildSynth(t, run, nil)
		e := sum.Experiments[0]
		if noTel {
			if e.MeanLinkUtil != nil {
				t.Errorf("no telemetry, yet mean_link_util %v", *e.MeanLinkUtil)
			}
			continue
		}
		var total, busiest float64
		for _, l := range e.Links {
			total += l.MeanUtil
			busiest = max(busiest, l.MeanUtil)
		}
		if e.BusiestLinkUtil == nil || *e.BusiestLinkUtil != busiest || busiest <= *e.MeanLinkUtil {
			t.Errorf("busiest_link_util %v, want %g, above the mean", e.BusiestLinkUtil, busiest)
		}
		if len(e.Links) == 0 || e.MeanLinkUtil == nil || math.Abs(*e.MeanLinkUtil-total/float64(len(e.Links))) > 1e-12 || *e.MeanLinkUtil <= 0 {
			t.Errorf("mean_link_util %v over links %+v", e.MeanLinkUtil, e.Links)
		}
	}
}

// buildSynth writes a synthetic run, lets edit change its first manifest
// experiment (when not nil), builds the report and returns the summary and
// the run directory.
func buildSynth(t *testing.T, run synthRun, edit func(map[string]any)) (*stats.Summary, string) {
	t.Helper()
	dir := t.TempDir()
	run.write(t, dir)
	if edit != nil {
		editFirstExperiment(t, dir, edit)
	}
	sum, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return sum, dir
}

// TestECNMarks: the switch's CE marks are summed per queue over ports
// (synthRun gives queue q of port 1 and, for q < 2, of port 2 2q marks).
func TestECNMarks(t *testing.T) {
	run := synthRun{seed: 4, lengths: []int64{100}, noTel: true, exps: []synthExp{{name: "e-tcp", transport: "tcp", n: 100, meanNs: 10_000}}}
	sum, _ := buildSynth(t, run, nil)
	sw := sum.Experiments[0].Switch
	if sw.CEMarks != 58 || len(sw.CEMarksByQueue) != 8 || sw.CEMarksByQueue[1] != 4 || sw.CEMarksByQueue[7] != 14 {
		t.Errorf("ce_marks %d by queue %v; want 58 with q1 4 and q7 14", sw.CEMarks, sw.CEMarksByQueue)
	}
}
