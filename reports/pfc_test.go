package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
)

// TestPFCInSummaryAndReport: a switch's PAUSE counters reach the
// experiment's switch.pfc, one row per port and priority with any, and the
// report's section lists them.
func TestPFCInSummaryAndReport(t *testing.T) {
	dir := t.TempDir()
	st := switchstats.Stats{Ports: []switchstats.Port{
		{Port: 1, Iface: "s1-eth1", Queues: []switchstats.Queue{{Queue: 3, PFCPausesSent: 12, PFCResumesSent: 11}}},
		{Port: 2, Iface: "s1-eth2", Queues: []switchstats.Queue{{Queue: 0}, {Queue: 3, PFCPausesRecv: 4, PFCResumesRecv: 4, PFCPausedNs: 2_500_000}}},
	}}
	if err := rundir.WriteSwitchStats(dir, "e1", "s1", st); err != nil {
		t.Fatal(err)
	}
	got, _, err := stats.ReadSwitchStats(dir, "e1")
	if err != nil {
		t.Fatal(err)
	}
	want := []stats.PFCPort{
		{Switch: "s1", Port: 1, Iface: "s1-eth1", Priority: 3, PausesSent: 12, ResumesSent: 11},
		{Switch: "s1", Port: 2, Iface: "s1-eth2", Priority: 3, PausesReceived: 4, ResumesRecv: 4, PausedMs: 2.5},
	}
	if len(got.PFC) != len(want) || got.PFC[0] != want[0] || got.PFC[1] != want[1] {
		t.Fatalf("pfc %+v, want %+v", got.PFC, want)
	}
	s := &stats.Summary{Experiments: []stats.Experiment{{Name: "e1", Switch: got}}}
	rows := pfcRows(s)
	var buf bytes.Buffer
	tmpl, err := parseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	if err := tmpl.ExecuteTemplate(&buf, "pfc", &reportPage{PFC: rows}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`id="pfc"`, "s1/1", "<td>12</td>", "<td>2.5</td>"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("section lacks %q:\n%s", w, buf.String())
		}
	}
}
