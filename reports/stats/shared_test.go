package stats

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// TestSharedExperimentParts: a shared experiment's rows, its transports'
// interleaved as a run writes them, are analysed as one part per
// transport, in the manifest's order of its transports, each with only its
// own RPCs; an experiment of one transport stays whole.
func TestSharedExperimentParts(t *testing.T) {
	dir := t.TempDir()
	const t0 = int64(1_000_000_000_000)
	man := &rundir.Manifest{Experiments: []rundir.Experiment{
		{Name: "alone", Transport: "homa", Config: "homa", Params: map[string]string{}, Started: t0, Ended: t0 + 1e9, DurationMs: 1000},
		{Name: "co", Transport: "homa", Transports: []string{"homa", "tcp"}, Configs: []string{"homa", "tcp-dctcp"},
			Params: map[string]string{"host_qdisc": "pacer"}, Started: t0, Ended: t0 + 1e9, DurationMs: 1000,
			ConfiguredBps: 160_000, ConfiguredRPS: 200, UnratedClients: 1,
			PartLoads: []rundir.ConfiguredLoad{{ConfiguredBps: 160_000, ConfiguredRPS: 200}, {UnratedClients: 1}}},
	}}
	if err := rundir.WriteManifest(dir, man); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, rundir.RPCs().File))
	if err != nil {
		t.Fatal(err)
	}
	w, err := rundir.RPCs().NewWriter(f, true)
	if err != nil {
		t.Fatal(err)
	}
	row := func(exp, tr string, i int64, rttUs int64) {
		at := t0 + i*1e6
		r := rundir.RPC{Experiment: exp, Transport: tr, Phase: rundir.PhaseMeasure, Client: "h2", Server: "10.0.0.1:4000",
			ReqBytes: 100, RespBytes: 100, IntendedNs: at, SentNs: at, DoneNs: at + rttUs*1000, RTTNs: rttUs * 1000, Status: rundir.StatusCompleted}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range int64(200) {
		row("alone", "homa", i, 10)
	}
	// TCP first, then both interleaved: the parts still come in the
	// manifest's order.
	row("co", "tcp", 0, 1000)
	for i := range int64(200) {
		row("co", "homa", i, 20)
		row("co", "tcp", i+1, 1000)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := Analyse(context.Background(), dir, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name, transport, config string
		issued                  int64
		p50                     float64
	}{
		{"alone", "homa", "homa", 200, 10},
		{"co/homa", "homa", "homa", 200, 20},
		{"co/tcp", "tcp", "tcp-dctcp", 201, 1000},
	}
	if len(a.Sum.Experiments) != len(want) {
		t.Fatalf("%d experiments, want %d", len(a.Sum.Experiments), len(want))
	}
	for i, w := range want {
		e := a.Sum.Experiments[i]
		if e.Name != w.name || e.Transport != w.transport || e.Config != w.config || e.RPCs.Issued != w.issued {
			t.Errorf("experiment %d: %s %s %s issued %d; want %+v", i, e.Name, e.Transport, e.Config, e.RPCs.Issued, w)
		}
		// Each part's configured load is its own transport's.
		switch gbps := e.ConfiguredGbps; {
		case w.name == "co/homa" && (gbps == nil || *gbps != 160_000/1e9):
			t.Errorf("%s: configured %v Gbit/s, want its clients' 0.00016", e.Name, gbps)
		case w.name == "co/tcp" && gbps != nil:
			t.Errorf("%s: configured %v Gbit/s, want none (closed loops)", e.Name, *gbps)
		}
		if e.Short.P50us == nil || *e.Short.P50us != w.p50 {
			t.Errorf("%s: short P50 %v, want %v us", e.Name, e.Short.P50us, w.p50)
		}
	}
}
