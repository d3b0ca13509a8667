package reports

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
)

// demoScenario is a resolved scenario as manifest.json holds it.
func demoScenario() map[string]any {
	return map[string]any{
		"name":     "demo",
		"topology": map[string]any{"kind": "star", "hosts": 10.0},
		"link":     map[string]any{"rate": "50Mbit", "mtu": 1500.0, "shaper": "htb"},
		"switch":   map[string]any{"target": "embedded", "queue_depth_pkts": 256.0, "ecn_threshold_pkts": 0.0},
		"transports": []any{
			map[string]any{"name": "homa", "label": "", "homa": map[string]any{"overcommit": 2.0, "priorities": 8.0, "basic": false}},
			map[string]any{"name": "tcp", "label": "", "tcp": map[string]any{"congestion": "cubic", "connections_per_peer": 1.0}},
		},
		"phases": []any{
			map[string]any{"name": "bulk", "clients": []any{"h2-h9"}, "servers": []any{"h1"}, "sizes": "fixed:1000000", "arrivals": "closed", "max_outstanding": 1.0, "response_bytes": 100.0},
			map[string]any{"name": "probes", "clients": []any{"h10"}, "servers": []any{"h1"}, "sizes": "fixed:100", "arrivals": "poisson", "rate_rps": 200.0, "response_bytes": 0.0},
		},
		"warmup": "2s", "duration": "15s", "drain": "2s", "repetitions": 1.0,
	}
}

// TestFirstScreenSwitchFeatures: the setup names a RED profile and PFC.
func TestFirstScreenSwitchFeatures(t *testing.T) {
	run := demoRun()
	run.scenario = demoScenario()
	run.scenario["switch"] = map[string]any{"target": "embedded", "queue_depth_pkts": 256.0, "ecn_threshold_pkts": 0.0,
		"ecn": map[string]any{"kmin_pkts": 10.0, "kmax_pkts": 60.0, "pmax": 0.2},
		"pfc": map[string]any{"priorities": []any{3.0}, "xoff_pkts": 16.0, "xon_pkts": 8.0, "headroom_pkts": 1024.0}}
	page := buildReport(t, run)
	for _, want := range []string{"ECN marks by RED (Kmin 10, Kmax 60 packets, Pmax 0.2)", "PFC on priorities 3 (XOFF 16, XON 8, headroom 1024 packets)"} {
		if !strings.Contains(page, want) {
			t.Errorf("setup lacks %q", want)
		}
	}
}

// buildReport writes run into a fresh directory, builds its report and
// returns report.html.
func buildReport(t *testing.T, run synthRun) string {
	t.Helper()
	dir := t.TempDir()
	run.write(t, dir)
	if _, err := Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFirstScreen: the report opens with one sentence per comparison and
// the run's setup, above the contents and the warnings.
func TestFirstScreen(t *testing.T) {
	run := demoRun()
	run.scenario = demoScenario()
	page := buildReport(t, run)
	summary, setup, contents, fidelity := strings.Index(page, `id="summary"`), strings.Index(page, `id="setup"`), strings.Index(page, `id="contents"`), strings.Index(page, `id="fidelity"`)
	if summary < 0 || setup < summary || contents < setup || fidelity < contents {
		t.Errorf("first screen order: summary %d, setup %d, contents %d, fidelity %d; want them in that order", summary, setup, contents, fidelity)
	}
	sentence := regexp.MustCompile(`homa&#39;s short-message P99 was [0-9.]+x lower than tcp&#39;s: [0-9.]+ (µs|ms|s) vs [0-9.]+ (µs|ms|s), one run \(load=0\.[58]\)\.`)
	if got := sentence.FindAllString(page, -1); len(got) != 2 {
		i := strings.Index(page, `id="summary"`)
		t.Errorf("headline sentences %q, want one per load; page has %.600s", got, page[max(i, 0):])
	}
	for _, want := range []string{"star, 10 hosts", "1 Gbit/s, MTU 1500", "embedded switch, 8 strict-priority queues of 256 packets",
		"transport homa</th><td class=\"l\">overcommit 2, priorities 8", "congestion cubic, connections_per_peer 1",
		"h2-h9 → h1, sizes fixed:1000000, 1 outstanding per client (closed loop), 100 B responses",
		"h10 → h1, sizes fixed:100, Poisson at 200 RPC/s per client, echoed responses", "warm-up 2s, measured 15s, drain 2s"} {
		if !strings.Contains(page, want) {
			t.Errorf("setup lacks %q", want)
		}
	}
}

// TestNoLargeMicroseconds: no latency of 10 ms or more is printed in µs,
// anywhere in the report's text, for a run whose tails reach tens of ms.
func TestNoLargeMicroseconds(t *testing.T) {
	run := demoRun()
	run.scenario = demoScenario()
	run.exps[3].meanNs = 5_000_000
	text := regexp.MustCompile(`(?s)<pre>.*?</pre>|<[^>]*>`).ReplaceAllString(buildReport(t, run), " ") // the manifest's JSON keeps its raw numbers
	var big []string
	for _, m := range regexp.MustCompile(`([0-9][0-9.]*) µs`).FindAllStringSubmatch(text, -1) {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil && v > 10_000 {
			big = append(big, m[0])
		}
	}
	if len(big) > 0 {
		t.Errorf("%d latencies above 10,000 µs printed in µs, e.g. %q", len(big), big[:min(5, len(big))])
	}
	if !strings.Contains(text, " ms") {
		t.Error("no latency in ms: the run's tails should need them")
	}
}

func TestLatencyUnits(t *testing.T) {
	for _, tc := range []struct {
		us   float64
		want string
	}{{9.5, "9.50 µs"}, {733, "733 µs"}, {1810, "1.81 ms"}, {117_000, "117 ms"}, {1_413_778, "1.41 s"}, {25_000_000, "25.0 s"}} {
		if got := fmtLatency(tc.us); got != tc.want {
			t.Errorf("fmtLatency(%g) = %q, want %q", tc.us, got, tc.want)
		}
	}
	for _, tc := range []struct {
		bps  float64
		want string
	}{{50e6, "50 Mbit/s"}, {1e9, "1 Gbit/s"}, {2.5e6, "2.5 Mbit/s"}, {12.34e9, "12.3 Gbit/s"}} {
		if got := fmtBitRate(tc.bps); got != tc.want {
			t.Errorf("fmtBitRate(%g) = %q, want %q", tc.bps, got, tc.want)
		}
	}
}

// TestSetupOfLargeRuns: the setup box of a twin run of a fat tree, a rail
// fabric, a collective and a connection matrix says what ran, in the
// twin's terms (found wanting on a 1,024-host permutation: "fat-tree, 0
// hosts", "0 s simulated", and the matrix told as "→ , sizes , Poisson at
// 0 RPC/s").
func TestSetupOfLargeRuns(t *testing.T) {
	hostsOf := func(n int) []rundir.FabricHost {
		hs := make([]rundir.FabricHost, n)
		for i := range hs {
			hs[i].Name = "h" + strconv.Itoa(i+1)
		}
		return hs
	}
	for _, tc := range []struct {
		name     string
		topology map[string]any
		hosts    int
		phase    map[string]any
		want     map[string]string // row: its text
	}{
		{"fat tree and matrix", map[string]any{"kind": "fat-tree", "k": 16.0, "load_balancing": "spray"}, 1024,
			map[string]any{"name": "perm", "connection_matrix": "/tmp/x/perm1024.cm", "clients": []any{}, "servers": []any{}},
			map[string]string{"topology": "fat tree of k=16: 1024 hosts, spray", "workload perm": "connection matrix perm1024.cm",
				"mode": "simulated in virtual time (homatb run --simulate): 7.25ms simulated in 90.0 s", "links": "100 Gbit/s, MTU 1500"}},
		{"rail and collective", map[string]any{"kind": "rail", "rails": 4.0, "servers": 4.0, "groups": 2.0, "spines": 2.0}, 32,
			map[string]any{"name": "ar", "hosts": []any{"all"}, "collective": map[string]any{"kind": "tree-allreduce", "bytes": 32e6, "iterations": 2.0, "compute": "50µs", "jitter": "0s", "window": 8.0}},
			map[string]string{"topology": "rail-optimised: 2 groups of 4 servers with 4 NICs each (32 hosts, one per NIC, on per-rail leaves), 2 spines",
				"workload ar": "tree-allreduce among all, 32000000 B buffer, 2 iterations, compute 50µs, window 8"}},
		{"one-way on the wire", map[string]any{"kind": "star", "hosts": 16.0}, 16,
			map[string]any{"name": "a", "clients": []any{"all"}, "servers": []any{"all"}, "sizes": "w4", "arrivals": "poisson", "load": 0.8, "load_of": "wire", "one_way": true},
			map[string]string{"topology": "star, 16 hosts", "workload a": "all → all, sizes w4, Poisson at load 0.8 of the link per client, one-way messages, load counted on the wire"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := demoScenario()
			sc["topology"], sc["phases"] = tc.topology, []any{tc.phase}
			m := &stats.Manifest{Manifest: rundir.Manifest{Scenario: sc, Mode: rundir.ModeSimulated,
				Simulation: &rundir.Simulation{SimulatedSeconds: 0.00725, WallSeconds: 90},
				Fabric:     &rundir.FabricRecord{LinkBps: 100e9, MTU: 1500, Hosts: hostsOf(tc.hosts)}}}
			got := map[string]string{}
			for _, kv := range setupOf(m) {
				got[kv[0]] = kv[1]
			}
			for row, want := range tc.want {
				if !strings.HasPrefix(got[row], want) || (row != "mode" && got[row] != want) {
					t.Errorf("%s: %q, want %q", row, got[row], want)
				}
			}
		})
	}
}

// TestNoShort: the headline's tables give way to a sentence only when no
// experiment has an RPC they count.
func TestNoShort(t *testing.T) {
	half := &stats.ShortestHalf{Count: 3}
	for _, tc := range []struct {
		name string
		exps []stats.Experiment
		want bool
	}{
		{"collectives alone", []stats.Experiment{{}, {}}, true},
		{"short RPCs in one", []stats.Experiment{{}, {Short: stats.Short{Count: 5}}}, false},
		{"a shortest half", []stats.Experiment{{ShortestHalf: half}}, false},
	} {
		pg := &reportPage{}
		for i := range tc.exps {
			pg.Experiments = append(pg.Experiments, &tc.exps[i])
		}
		if got := pg.NoShort(); got != tc.want {
			t.Errorf("%s: NoShort %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAnatomyNote: without bars, the anatomy chart says why: no switch
// records, or no short RPC to take apart (a connection matrix's 2 MB
// flows, whose records were kept, once read "no per-packet switch records").
func TestAnatomyNote(t *testing.T) {
	long := []*stats.Experiment{{Name: "perm"}}
	if n := anatomyChart("a", "t", long).Note; !strings.Contains(n, "takes apart short RPCs, and this run has none") {
		t.Errorf("no short RPCs: note %q", n)
	}
	short := []*stats.Experiment{{Name: "rpcs", Short: stats.Short{Count: 9}}}
	if n := anatomyChart("a", "t", short).Note; !strings.Contains(n, "no per-packet switch records") {
		t.Errorf("short RPCs without records: note %q", n)
	}
}

// TestMissingChartNotes: a matrix's experiment (no RPC in the size bins)
// in the twin (no telemetry) is told why its charts are missing in its own
// terms, not "no calibration".
func TestMissingChartNotes(t *testing.T) {
	sim := &stats.Manifest{Manifest: rundir.Manifest{Mode: rundir.ModeSimulated}}
	s := &stats.Summary{Manifest: sim, Experiments: []stats.Experiment{{Name: "perm", Transport: "homa", RPCs: stats.RPCCounts{Issued: 4, Completed: 4}}}}
	pg, err := buildPage(&stats.Analysis{Sum: s}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(pg.Groups[0].Notes, "\n")
	for _, want := range []string{"perm: no RPC of a client phase, so no slowdown chart", "perm: no telemetry (the twin samples no queues"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q: %s", want, notes)
		}
	}
	if strings.Contains(notes, "no calibration") {
		t.Errorf("notes blame calibration: %s", notes)
	}
}

func TestOversubscription(t *testing.T) {
	leaves := func(perLeaf, uplinks int, uplinkBps, coreBps uint64, pods bool) *rundir.FabricRecord {
		f := &rundir.FabricRecord{LinkBps: 100, UplinkBps: uplinkBps, CoreBps: coreBps, EdgeUplinks: uplinks}
		if pods {
			f.PodUplinks = 4
		}
		for i := range 2 * perLeaf {
			f.Hosts = append(f.Hosts, rundir.FabricHost{Name: "h" + strconv.Itoa(i+1), Switch: "l" + strconv.Itoa(i/perLeaf+1)})
		}
		return f
	}
	for _, tc := range []struct {
		name string
		f    *rundir.FabricRecord
		want string
	}{
		{"none recorded", nil, ""},
		{"star", &rundir.FabricRecord{LinkBps: 100, Hosts: []rundir.FabricHost{{Name: "h1", Switch: "s1"}}}, ""},
		{"1:1", leaves(4, 4, 0, 0, false), ""},
		{"2:1", leaves(8, 4, 0, 0, false), "top-of-rack switches 2:1 oversubscribed (8 hosts, 4 uplinks)"},
		{"fast uplinks", leaves(16, 4, 400, 0, false), ""},
		{"slow core", leaves(2, 2, 0, 25, true), "pods 4:1 oversubscribed toward the cores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := oversubscription(tc.f); got != tc.want {
				t.Errorf("oversubscription = %q, want %q", got, tc.want)
			}
		})
	}
}
