package testbed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/testbed/agents"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

func TestSwitchTotals(t *testing.T) {
	st := rundir.SwitchStats{Ports: []switchstats.Port{{KernelDrops: 3, TxErrors: 1}, {KernelDrops: 2, NoBuffer: 4}}}
	if got, want := totals(st), (switchTotals{kernelDrops: 5, noBuffer: 4, txErrors: 1}); got != want {
		t.Errorf("totals = %+v, want %+v", got, want)
	}
}

func TestRecordsMerge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rpcs.csv")
	r, err := createRecords(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	hdr := "experiment,transport,phase,client,server,req_bytes,resp_bytes,intended_ns,sent_ns,done_ns,rtt_ns,status,error,retries\n"
	a := hdr + "calibrate-homa-100,homa,calibrate,h2,10.0.0.1:4000,100,100,1,2,3001,3000,completed,,0\n" +
		"calibrate-homa-100,homa,calibrate,h2,10.0.0.1:4000,100,100,5,6,0,0,failed,timeout,1\n"
	b := hdr + "calibrate-homa-1000,homa,calibrate,h2,10.0.0.1:4000,1000,1000,1,2,5001,5000,completed,,0\n"
	for _, data := range []string{a, b} {
		rows, err := r.parse([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.write(rows, "calibrate-homa"); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.appendCSV(strings.NewReader("experiment,other\nx,y\n")); err == nil {
		t.Error("a file with a different header was merged")
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != 4 || strings.Count(string(got), "experiment,transport") != 1 {
		t.Fatalf("merged file:\n%s", got)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "calibrate-homa,") {
			t.Errorf("row not renamed: %s", l)
		}
	}
}

// TestRecordsIssueOrder: the clients' records, each in its own issue
// order, enter rpcs.csv in issue order across the clients (by sent_ns, a
// tie to the client listed first), as a simulated run writes them.
func TestRecordsIssueOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rpcs.csv")
	r, err := createRecords(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	hdr := "experiment,transport,phase,client,server,req_bytes,resp_bytes,intended_ns,sent_ns,done_ns,rtt_ns,status,error,retries\n"
	row := func(client string, sent int) string {
		return fmt.Sprintf("x,homa,measure,%s,10.0.0.1:4000,100,100,%d,%d,%d,9,completed,,0\n", client, sent, sent, sent+9)
	}
	files := []io.Reader{
		strings.NewReader(hdr + row("h1", 1) + row("h1", 5) + row("h1", 9)),
		strings.NewReader(hdr),
		strings.NewReader(hdr + row("h3", 2) + row("h3", 5) + row("h3", 10)),
	}
	if err := r.appendMerged(files); err != nil {
		t.Fatal(err)
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, l := range strings.Split(strings.TrimSpace(string(got)), "\n")[1:] {
		f := strings.Split(l, ",")
		order = append(order, f[3]+"@"+f[8])
	}
	want := []string{"h1@1", "h3@2", "h1@5", "h3@5", "h1@9", "h3@10"}
	if !slices.Equal(order, want) {
		t.Errorf("rows %v, want %v", order, want)
	}
}

func TestOtherLoadWarning(t *testing.T) {
	for _, tc := range []struct {
		other float64
		warn  bool
	}{{0, false}, {0.24, false}, {0.25, true}, {1.5, true}} {
		w := otherLoadWarning(tc.other, 3.5)
		if got := strings.Contains(w, "other processes kept") && strings.Contains(w, "load average 3.50"); got != tc.warn {
			t.Errorf("other CPUs %.2f: warning %q, want one: %v", tc.other, w, tc.warn)
		}
	}
}

func TestLagWarning(t *testing.T) {
	poisson := &agentpb.Workload{Arrivals: "poisson", RateRps: 100} // 10 ms mean gap
	tests := []struct {
		name string
		lag  float64
		w    *agentpb.Workload
		warn bool
	}{
		{"on schedule", 200, poisson, false},
		{"over 1 ms and a tenth of the gap", 5000, poisson, true},
		{"closed loop never warns", 5000, &agentpb.Workload{Arrivals: "closed"}, false},
		{"server only", 5000, nil, false},
	}
	for _, tc := range tests {
		_, behind := lagOf("h2", &agentpb.Counters{LagP99Us: tc.lag, LagMaxUs: tc.lag}, tc.w)
		if behind != tc.warn {
			t.Errorf("%s: behind %v, want %v", tc.name, behind, tc.warn)
		}
	}
	one := lagWarning([]lag{{"h2", 5000, 9000, 10000}}, 3)
	if !strings.Contains(one, "agent h2 send lag P99 5000 µs (max 9000 µs)") {
		t.Errorf("one host: %q", one)
	}
	many := lagWarning([]lag{{"h3", 7000, 20000, 10000}, {"h2", 5000, 9000, 10000}}, 3)
	if want := "2 of 3 clients fell behind their schedule (h2 h3): send lag P99 5000–7000 µs (max 20000 µs) against a mean gap of 10000 µs"; many != want {
		t.Errorf("two hosts:\n got %q\nwant %q", many, want)
	}
	if lagWarning(nil, 3) != "" {
		t.Error("warning with no lagging host")
	}
}

func TestAgentSocketDir(t *testing.T) {
	short := agentSocketDir("/tmp/r", "hb00001")
	if short != "/tmp/r/agents" {
		t.Errorf("short run dir: %s", short)
	}
	long := agentSocketDir("/"+strings.Repeat("x", 120), "hb00001")
	if !strings.Contains(long, "hb00001") || len(filepath.Join(long, "h250.sock")) >= 108 {
		t.Errorf("long run dir: socket dir %s", long)
	}
}

func TestPlainProgress(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, []time.Duration{time.Second, time.Second, 2 * time.Second})
	p.begin("a")
	p.step("a", false)
	p.begin("b")
	p.step("b", true)
	out := buf.String()
	for _, want := range []string{"[1/3] a ...", "[1/3] a done", "ETA", "[2/3] b incomplete"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lines lack %q:\n%s", want, out)
		}
	}
}

func TestNewTag(t *testing.T) {
	a, b := NewTag("run"), NewTag("run")
	if len(a) != 7 || a[:2] != "hb" {
		t.Errorf("tag %q", a)
	}
	if a == b {
		t.Errorf("two tags for the same run id collided: %s", a)
	}
}

func TestHostRole(t *testing.T) {
	for _, tc := range []struct {
		client, server bool
		want           string
	}{{true, false, rundir.RoleClient}, {false, true, rundir.RoleServer}, {true, true, rundir.RoleBoth}} {
		if got := rundir.HostRole(tc.client, tc.server); got != tc.want {
			t.Errorf("HostRole(%v, %v) = %q, want %q", tc.client, tc.server, got, tc.want)
		}
	}
	c := &agentpb.Counters{Served: 7, Transport: map[string]uint64{"homa_tx_grant_p7": 3}}
	h := hostCounters("h1", rundir.RoleServer, c)
	c.Transport["homa_tx_grant_p7"] = 99 // the record keeps its own copy
	if h.Served != 7 || h.Transport["homa_tx_grant_p7"] != 3 {
		t.Errorf("hostCounters = %+v", h)
	}
}

func TestLoadWarning(t *testing.T) {
	w := &agentpb.Workload{Arrivals: scenario.ArrivalsPoisson, RateRps: 200, DurationMs: 10_000}
	tests := []struct {
		name   string
		w      *agentpb.Workload
		issued uint64
		warn   bool
	}{
		{"on schedule", w, 2000, false},
		{"Poisson spread", w, 1900, false},
		{"fell behind", w, 1500, true},
		{"closed loop", &agentpb.Workload{Arrivals: scenario.ArrivalsClosed, MaxOutstanding: 1, DurationMs: 10_000}, 3, false},
		{"bounded by max_rpcs", &agentpb.Workload{Arrivals: scenario.ArrivalsPoisson, RateRps: 200, DurationMs: 10_000, MaxRpcs: 50}, 50, false},
		{"server only", nil, 0, false},
	}
	for _, tc := range tests {
		got := loadWarning("h2", &agentpb.Counters{Issued: tc.issued}, tc.w)
		if (got != "") != tc.warn {
			t.Errorf("%s: warning %q, want one: %v", tc.name, got, tc.warn)
		}
		if tc.warn && !strings.Contains(got, "h2 issued 1500") {
			t.Errorf("%s: %q does not name the host and count", tc.name, got)
		}
	}
	bps, rps, unrated := agents.Roles{Clients: map[string]*agentpb.Workload{
		"h2": {Arrivals: scenario.ArrivalsPoisson, RateRps: 100},
		"h3": {Arrivals: scenario.ArrivalsPoisson, RateRps: 50},
		"h4": {Arrivals: scenario.ArrivalsClosed, MaxOutstanding: 1},
	}, MeanSize: map[string]float64{"h2": 1000, "h3": 2000, "h4": 1e6}}.ConfiguredLoad()
	if bps != 100*1000*8+50*2000*8 || rps != 150 || unrated != 1 {
		t.Errorf("configuredLoad = %g bit/s, %g RPC/s, %d unrated; want 1.6e6, 150, 1 (the closed loop)", bps, rps, unrated)
	}
}

func TestCalibrationResponse(t *testing.T) {
	phase := func(resp uint32) scenario.Phase { return scenario.Phase{ResponseBytes: resp} }
	tests := []struct {
		name   string
		phases []scenario.Phase
		want   uint32
	}{
		{"one phase", []scenario.Phase{phase(100)}, 100},
		{"echo", []scenario.Phase{phase(0)}, 0},
		{"the most used", []scenario.Phase{phase(100), phase(0), phase(100)}, 100},
		{"a tie takes the smaller", []scenario.Phase{phase(500), phase(100)}, 100},
		{"a tie takes a fixed length over echo", []scenario.Phase{phase(0), phase(100)}, 100},
		{"no phases echo", nil, 0},
		{"collectives alone: the steps' 1-byte answers", []scenario.Phase{{Collective: &scenario.Collective{}}, {ConnectionMatrix: "x.cm"}}, 1},
		{"a collective beside serving RPCs: theirs", []scenario.Phase{{Collective: &scenario.Collective{}}, phase(0)}, 0},
	}
	for _, tc := range tests {
		if got := (&scenario.Scenario{Phases: tc.phases}).CalibrationResponse(); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestFabricOf(t *testing.T) {
	for _, tc := range []struct {
		topo      scenario.Topology
		interLink int
		pairs     [][2]string // hosts whose path we check
		links     []int
	}{
		{scenario.Topology{Kind: scenario.KindStar, Hosts: 3}, 0, [][2]string{{"h1", "h3"}}, []int{2}},
		{scenario.Topology{Kind: scenario.KindLeafSpine, Leaves: 2, Spines: 1, HostsPerLeaf: 2}, 2,
			[][2]string{{"h1", "h2"}, {"h1", "h3"}}, []int{2, 4}},
	} {
		n, err := topo.Layout(tc.topo, "hb00001")
		if err != nil {
			t.Fatal(err)
		}
		s := &scenario.Scenario{Topology: tc.topo, Link: scenario.Link{Rate: 50e6, MTU: 1500}}
		f := rundir.NewFabricRecord(n.Fabric(s))
		if f.LinkBps != 50e6 || f.MTU != 1500 || f.FrameOverhead != 38 || f.InterSwitchLinks != tc.interLink || len(f.Hosts) != len(n.Hosts) {
			t.Errorf("%s: fabric %+v", tc.topo.Kind, f)
		}
		sw := f.SwitchOf()
		for i, p := range tc.pairs {
			if got := f.LinksBetween(sw[p[0]], sw[p[1]]); got != tc.links[i] {
				t.Errorf("%s: %s to %s crosses %d links, want %d", tc.topo.Kind, p[0], p[1], got, tc.links[i])
			}
		}
		if ip := n.Hosts[0].IP.String(); sw[ip] != n.Hosts[0].Switch {
			t.Errorf("%s: address %s maps to switch %q", tc.topo.Kind, ip, sw[ip])
		}
	}
}

// TestScenarioDoc: manifest.json's scenario uses the YAML schema's keys and
// units, not Go's field names and nanoseconds.
func TestScenarioDoc(t *testing.T) {
	s := &scenario.Scenario{Name: "x", Link: scenario.Link{Rate: 50e6, MTU: 1500}, Warmup: scenario.Duration(2 * time.Second)}
	b, err := json.Marshal(s.Doc())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"x"`, `"rate":"50Mbit"`, `"mtu":1500`, `"warmup":"2s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("scenario %s lacks %s", b, want)
		}
	}
	if strings.Contains(string(b), "QueueDepthPkts") || strings.Contains(string(b), "Warmup") {
		t.Errorf("Go field names in %s", b)
	}
}
