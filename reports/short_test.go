package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// writeMultiget writes a run of one experiment in the shape of
// incast-responses.yaml: h1's multiget RPCs (100 B requests, 20 KB
// responses, 10-19 ms) and h10's probes (64 B both ways, 1.0-1.9 ms). With
// phases, the manifest records which phase each client ran and the
// scenario's phases (and headline phase, when given); without, it is a
// run written before either existed.
func writeMultiget(t *testing.T, phases bool, headline string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("experiment,transport,phase,client,server,req_bytes,resp_bytes,intended_ns,sent_ns,done_ns,rtt_ns,status\n")
	const t0 = 1_000_000_000
	for i := range 100 {
		at := int64(t0 + i*1_000_000)
		rtt := int64(10_000+100*i) * 1000
		fmt.Fprintf(&b, "x,homa,measure,h1,10.0.0.2:4000,100,20000,%d,%d,%d,%d,completed\n", at, at, at+rtt, rtt)
		rtt = int64(1_000+10*i) * 1000
		fmt.Fprintf(&b, "x,homa,measure,h10,10.0.0.1:4000,64,64,%d,%d,%d,%d,completed\n", at, at, at+rtt, rtt)
	}
	if err := os.WriteFile(filepath.Join(dir, "rpcs.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	m := rundir.Manifest{Run: "r", Experiments: []rundir.Experiment{{Name: "x", Transport: "homa", Config: "homa", DurationMs: 100}}}
	sc := map[string]any{"phases": []any{map[string]any{"name": "multiget"}, map[string]any{"name": "probes"}}}
	if headline != "" {
		sc["report"] = map[string]any{"headline_phase": headline}
	}
	m.Scenario = sc
	if phases {
		m.Experiments[0].ClientPhases = map[string]string{"h1": "multiget", "h10": "probes"}
	}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestShortMeansBothDirections: an RPC is short only when its request and
// its response both are; a scenario's headline phase makes the headline
// that phase's RPCs; every phase gets its own row.
func TestShortMeansBothDirections(t *testing.T) {
	for _, tc := range []struct {
		name       string
		phases     bool
		headline   string
		wantPhase  string
		wantCount  int64
		wantP99    float64 // µs, nearest rank 99 of 100
		wantLabel  string
		wantPhases []string
	}{
		{"multiget is not short", true, "", "", 100, 1_980, "short-message", []string{"multiget", "probes"}},
		{"headline phase", true, "multiget", "multiget", 100, 19_800, "multiget", []string{"multiget", "probes"}},
		{"a run written before phases", false, "", "", 100, 1_980, "short-message", nil},
		{"headline phase no client ran", false, "multiget", "", 100, 1_980, "short-message", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeMultiget(t, tc.phases, tc.headline)
			sum, err := Build(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			e := sum.Experiments[0]
			if e.Short.Phase != tc.wantPhase || e.Short.Count != tc.wantCount {
				t.Errorf("short: phase %q, %d RPCs; want %q, %d", e.Short.Phase, e.Short.Count, tc.wantPhase, tc.wantCount)
			}
			if e.Short.P99us == nil || *e.Short.P99us != tc.wantP99 {
				t.Errorf("short P99 %v µs, want %v", e.Short.P99us, tc.wantP99)
			}
			if got := sum.ShortLabel(); got != tc.wantLabel {
				t.Errorf("label %q, want %q", got, tc.wantLabel)
			}
			var names []string
			for _, p := range e.Phases {
				names = append(names, p.Name)
				if p.Count != 100 {
					t.Errorf("phase %s: %d RPCs, want 100", p.Name, p.Count)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.wantPhases, ",") {
				t.Errorf("phases %v, want %v", names, tc.wantPhases)
			}
			// summary.json has the phases (an empty list, never null), and
			// the report a row per phase.
			raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Experiments []map[string]json.RawMessage `json:"experiments"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			if p := string(doc.Experiments[0]["phases"]); p == "null" || p == "" {
				t.Errorf("summary.json phases %q", p)
			}
			html, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(html), `id="phases"`); has != (tc.wantPhases != nil) {
				t.Errorf("report's By phase table present %v, want %v", has, tc.wantPhases != nil)
			}
		})
	}
}
