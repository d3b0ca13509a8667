package testbed

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/homatb/homatb/rundir"
)

// gaugeAgent is an agent whose Status stream gives n samples, then says so
// on sent and waits for the end of the experiment.
type gaugeAgent struct {
	agentAPI
	host string
	n    int
	sent chan struct{}
}

func (a *gaugeAgent) FollowGauges(ctx context.Context, exp string, _ time.Duration, emit func(rundir.HostSample) error) error {
	for i := range a.n {
		if err := emit(rundir.HostSample{Experiment: exp, Host: a.host, UnixNs: int64(i), Active: uint64(i % 3)}); err != nil {
			return err
		}
	}
	close(a.sent)
	<-ctx.Done()
	return nil
}

// TestHostTelemetryStreams: each host's gauges reach hosts.csv as they
// come, while the experiment still runs, and a host without an agent is
// left out.
func TestHostTelemetryStreams(t *testing.T) {
	r := &run{dir: t.TempDir(), log: slog.New(slog.DiscardHandler)}
	counts := map[string]int{"h1": 40, "h2": 25}
	var agents []*gaugeAgent
	for h, n := range counts {
		a := &gaugeAgent{host: h, n: n, sent: make(chan struct{})}
		agents = append(agents, a)
		r.agents.add(h, a)
	}
	stop := r.startHostTelemetry(t.Context(), "e", []string{"h1", "h2", "h3"}, time.Millisecond)
	for _, a := range agents {
		<-a.sent
	}
	got := readHostRows(t, filepath.Join(r.dir, "hosts.csv"))
	stop()
	for h, n := range counts {
		if got[h] != n {
			t.Errorf("hosts.csv before the experiment's end: %d rows of %s, want %d (all %v)", got[h], h, n, got)
		}
	}
	if len(got) != len(counts) {
		t.Errorf("hosts.csv has rows of %v, want only %v", got, counts)
	}
}

// readHostRows counts hosts.csv's rows by host.
func readHostRows(t *testing.T, path string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, s := range readRows(t, path, rundir.Hosts()) {
		out[s.Host]++
	}
	return out
}

// readRows reads every row of a run-directory file of format.
func readRows[T any](t *testing.T, path string, format *rundir.CSVFormat[T]) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := format.NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []T
	for {
		var row T
		if err := r.Read(&row); errors.Is(err, io.EOF) {
			return rows
		} else if err != nil {
			t.Fatalf("%s: %v", format.File, err)
		}
		rows = append(rows, row)
	}
}
