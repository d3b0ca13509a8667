package simulate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/homatb/homatb/testbed"
	"github.com/homatb/homatb/testbed/simulate"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/homatb/homatb/testbed/scenario"
)

// load parses a scenario written inline.
func load(t *testing.T, src string) *scenario.Plan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := scenario.Load(path, scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runSim runs plan into a fresh directory and returns it.
func runSim(t *testing.T, p *scenario.Plan) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	res, err := testbed.Run(context.Background(), p, testbed.Options{RunDir: dir, ScenarioFile: p.File, Simulate: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Incomplete {
		t.Fatalf("run %s incomplete", dir)
	}
	return dir
}

type summary struct {
	Experiments []struct {
		Name string `json:"name"`
		RPCs struct {
			Issued, Completed, Failed uint64
			InFlight                  uint64 `json:"in_flight"`
		} `json:"rpcs"`
		Short struct {
			P99us *float64 `json:"p99_us"`
		} `json:"short"`
		GoodputGbps  *float64 `json:"goodput_gbps"`
		ShortestHalf *struct {
			MaxLength int64    `json:"max_length"`
			Count     int64    `json:"count"`
			S50       *float64 `json:"s50"`
			S99       *float64 `json:"s99"`
		} `json:"shortest_half"`
		Anatomy *struct {
			RPCs      int    `json:"rpcs"`
			Joined    int    `json:"joined"`
			TailCause string `json:"tail_cause"`
		} `json:"anatomy"`
		Switch struct {
			Drops        int64    `json:"drops"`
			RankDrops    int64    `json:"rank_drops"`
			CEMarks      int64    `json:"ce_marks"`
			TrimmedPkts  uint64   `json:"trimmed_pkts"`
			MaxQueuePkts [8]int64 `json:"max_queue_pkts"`
			PFC          []struct {
				PausesSent int64 `json:"pauses_sent"`
			} `json:"pfc"`
		} `json:"switch"`
		Internals *struct {
			Counters map[string]uint64 `json:"counters"`
		} `json:"transport_internals"`
		Fidelity []string `json:"fidelity"`
	} `json:"experiments"`
}

func readSummary(t *testing.T, dir string) summary {
	t.Helper()
	var s summary
	decodeSummary(t, dir, &s)
	return s
}

const idle = `name: idle
topology: {kind: star, hosts: 3}
link: {rate: 50Mbit}
transports:
  - name: homa
phases:
  - name: mixed
    clients: [h2]
    servers: [h1]
    sizes: mix:fixed:1000@2,fixed:10000@2,fixed:100000@1,fixed:300000@1
    arrivals: poisson
    rate_rps: 5
    response_bytes: 100
warmup: 2s
duration: 40s
drain: 1s
seed: SEED
`

// TestIdleSlowdownIsOne checks the simulator's unloaded RTT is the ideal
// the report divides by: on a nearly idle network every size's median
// slowdown is 1.00 +- 0.05.
func TestIdleSlowdownIsOne(t *testing.T) {
	dir := runSim(t, load(t, strings.Replace(idle, "SEED", "1", 1)))
	b, err := os.ReadFile(filepath.Join(dir, "by_size.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	cols := strings.Split(lines[0], ",")
	at := map[string]int{}
	for i, c := range cols {
		at[c] = i
	}
	if len(lines) != 5 {
		t.Fatalf("by_size.csv has %d sizes, want 4:\n%s", len(lines)-1, b)
	}
	// The shortest half: the 1 KB and 10 KB requests (the median is 10 KB),
	// about two thirds of the RPCs, at slowdown 1 too.
	e := readSummary(t, dir).Experiments[0]
	if h := e.ShortestHalf; h == nil || h.MaxLength != 10000 || h.S50 == nil || *h.S50 < 0.95 || *h.S50 > 1.05 ||
		h.Count*2 < int64(e.RPCs.Completed) {
		t.Errorf("shortest half %+v of %d RPCs: want up to 10000 B, at least half, median slowdown 1.00 +- 0.05", h, e.RPCs.Completed)
	}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		var s50 float64
		if err := json.Unmarshal([]byte(f[at["s50"]]), &s50); err != nil {
			t.Fatalf("s50 %q: %v", f[at["s50"]], err)
		}
		if s50 < 0.95 || s50 > 1.05 {
			t.Errorf("length %s: median slowdown %.3f, want 1.00 +- 0.05", f[at["length"]], s50)
		}
	}
}

// TestRepeatsExactly checks that the same scenario and seed give the same
// rpcs.csv and summary.json byte for byte, and another seed other records.
// The scenario is faults-heavy.yaml's Homa: with 10% loss every tick
// finds several RPCs to send RESENDs for, and a run that visited them in
// map order (as emulated hosts do) would not repeat.
func TestRepeatsExactly(t *testing.T) {
	src, err := os.ReadFile("../../scenarios/faults-heavy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seeded := func(seed string) *scenario.Plan {
		p := load(t, string(src)+"\nseed: "+seed+"\n") // it sets none: the default is 1
		if err := p.Only([]string{"homa"}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := runSim(t, seeded("1")), runSim(t, seeded("1")), runSim(t, seeded("2"))
	read := func(dir, f string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, f := range []string{"rpcs.csv", "summary.json"} {
		if !bytes.Equal(read(a, f), read(b, f)) {
			t.Errorf("%s differs between two runs of the same scenario and seed", f)
		}
	}
	if bytes.Equal(read(a, "rpcs.csv"), read(c, "rpcs.csv")) {
		t.Error("rpcs.csv is the same with seeds 1 and 2")
	}
}

// TestIncast checks the default incast, simulated: books balance and the
// probes' tail is the protocol's alone, a few unloaded RTTs.
func TestIncast(t *testing.T) {
	src, err := os.ReadFile("../../scenarios/incast.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := load(t, string(src))
	if err := p.Only([]string{"homa"}); err != nil {
		t.Fatal(err)
	}
	dir := runSim(t, p)
	s := readSummary(t, dir)
	if len(s.Experiments) != 1 {
		t.Fatalf("%d experiments", len(s.Experiments))
	}
	e := s.Experiments[0]
	if e.RPCs.Issued == 0 || e.RPCs.Issued != e.RPCs.Completed+e.RPCs.Failed+e.RPCs.InFlight {
		t.Errorf("books do not balance: %+v", e.RPCs)
	}
	var m struct {
		Calibration map[string]struct {
			RTTus map[string]float64 `json:"rtt_us"`
		} `json:"calibration"`
		Mode string `json:"mode"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Mode != "simulated" {
		t.Errorf("manifest mode %q", m.Mode)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h1>homatb report: incast-simulated-seed1 (simulated)</h1>", "simulated in virtual time"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	rtt := m.Calibration["homa"].RTTus["100"]
	if rtt == 0 || e.Short.P99us == nil {
		t.Fatalf("no unloaded RTT (%v) or short P99", rtt)
	}
	if *e.Short.P99us > 5*rtt {
		t.Errorf("probes' P99 %.0f µs is over 5x the unloaded 100 B RTT %.0f µs", *e.Short.P99us, rtt)
	}
	// The switch's postcards and the servers' rows join every short RPC,
	// and with no host time the tail is the switch's queues.
	if a := e.Anatomy; a == nil || a.RPCs == 0 || a.Joined != a.RPCs || a.TailCause != "queue" {
		t.Errorf("anatomy %+v: want every short RPC joined and the tail in the queues", a)
	}
	// The bottleneck carries the 8 senders' bytes at about the link rate.
	if e.GoodputGbps == nil || *e.GoodputGbps < 0.040 || *e.GoodputGbps > 0.050 {
		t.Errorf("goodput %v Gbit/s, want 0.040-0.050 of the 0.050 link", e.GoodputGbps)
	}
}

// TestRankDropsCounted runs incast.yaml's eight senders with pFabric,
// whose switch ports are rank-ordered: every frame the receiver's port
// drops is a rank drop, and the switch statistics say so in rank_drops,
// as the embedded switch's do (the twin reported 0 before).
func TestRankDropsCounted(t *testing.T) {
	src, err := os.ReadFile("../../scenarios/incast.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "transports:\n", "transports:\n  - name: pfabric\n", 1)
	p := load(t, text)
	if err := p.Only([]string{"pfabric"}); err != nil {
		t.Fatal(err)
	}
	e := readSummary(t, runSim(t, p)).Experiments[0]
	if e.Switch.Drops == 0 || e.Switch.RankDrops != e.Switch.Drops {
		t.Errorf("switch drops %d, rank drops %d: want some, all of them rank drops", e.Switch.Drops, e.Switch.RankDrops)
	}
}

// TestRoCEIncast simulates roce-incast.yaml's lossy RoCE experiment
// (without the switch's PFC, which the simulator refuses): the roce
// policy runs on the simulator's hosts as on the emulated ones (its
// packets framed as UDP), tor.p4's egress marks its ECN-capable packets
// by the RED profile, the receiver answers with CNPs and DCQCN cuts the
// senders' rates, and every RPC completes, the switch's drops recovered
// by go-back-N.
func TestRoCEIncast(t *testing.T) {
	raw, err := os.ReadFile("../../scenarios/roce-incast.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := regexp.MustCompile(`(?m)^  pfc: .*\n`).ReplaceAllString(string(raw), "")
	if len(src) == len(raw) {
		t.Fatal("roce-incast.yaml has no switch.pfc line to leave out")
	}
	p := load(t, src)
	if err := p.Only([]string{"roce-lossy"}); err != nil {
		t.Fatal(err)
	}
	s := readSummary(t, runSim(t, p))
	if len(s.Experiments) != 1 || s.Experiments[0].Internals == nil {
		t.Fatalf("%d experiments, or no transport counters", len(s.Experiments))
	}
	e := s.Experiments[0]
	if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued {
		t.Errorf("rpcs %+v: want every one completed", e.RPCs)
	}
	c := e.Internals.Counters
	if e.Switch.CEMarks == 0 || c["homa_cnps_sent"] == 0 || c["homa_rate_cuts"] == 0 {
		t.Errorf("CE marks %d, CNPs %d, rate cuts %d: want all nonzero", e.Switch.CEMarks, c["homa_cnps_sent"], c["homa_rate_cuts"])
	}
	if e.Switch.Drops > 0 && c["homa_retransmits"] == 0 {
		t.Errorf("%d switch drops but no retransmission", e.Switch.Drops)
	}
	if e.GoodputGbps == nil || *e.GoodputGbps < 0.025 {
		t.Errorf("goodput %v Gbit/s of the 0.050 link", e.GoodputGbps)
	}
}

// TestRoCEIncastPFC simulates roce-incast.yaml's RoCE on the lossless
// priority, with DCQCN and without: PFC keeps every packet (no switch
// drop, no retransmission), the switch sends PAUSE frames that the hosts
// obey, every RPC completes, and without DCQCN the pauses are many more.
func TestRoCEIncastPFC(t *testing.T) {
	src, err := os.ReadFile("../../scenarios/roce-incast.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := load(t, string(src))
	if err := p.Only([]string{"roce-pfc", "roce-pfc-no-dcqcn"}); err != nil {
		t.Fatal(err)
	}
	s := readSummary(t, runSim(t, p))
	if len(s.Experiments) != 2 {
		t.Fatalf("%d experiments, want 2", len(s.Experiments))
	}
	var pauses [2]int64
	for i, e := range s.Experiments {
		c := e.Internals.Counters
		if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued {
			t.Errorf("%s: rpcs %+v: want every one completed", e.Name, e.RPCs)
		}
		if e.Switch.Drops != 0 || c["homa_retransmits"] != 0 {
			t.Errorf("%s: %d switch drops, %d retransmissions: want none under PFC", e.Name, e.Switch.Drops, c["homa_retransmits"])
		}
		for _, pp := range e.Switch.PFC {
			pauses[i] += pp.PausesSent
		}
		if pauses[i] == 0 || c["homa_pfc_pauses_received"] == 0 {
			t.Errorf("%s: switch sent %d PAUSE frames, hosts obeyed %d: want both nonzero", e.Name, pauses[i], c["homa_pfc_pauses_received"])
		}
	}
	if pauses[1] <= 10*pauses[0] {
		t.Errorf("PAUSE frames with DCQCN %d, without %d: want many more without", pauses[0], pauses[1])
	}
}

func TestRefusesBBR(t *testing.T) {
	src := strings.Replace(strings.Replace(idle, "SEED", "1", 1), "  - name: homa\n", "  - name: homa\n  - name: tcp\n    tcp: {congestion: bbr}\n", 1)
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := scenario.Load(path, scenario.Options{Simulate: true})
	if err == nil || !strings.Contains(err.Error(), "s.yaml:7: transports[1].tcp.congestion: bbr is emulation-only") {
		t.Fatalf("Load --simulate = %v, want a refusal of bbr naming its line", err)
	}
	if err := simulate.Check(load(t, src)); err == nil || !strings.Contains(err.Error(), "tcp-bbr") {
		t.Fatalf("Check = %v, want a refusal naming tcp-bbr", err)
	}
}

// TestTCPModelIncast runs the incast over the TCP model's three
// configurations: books balance, the manifest says a model ran, the
// switch marks CE only for the ECN-capable ones, the latency anatomy
// joins every short RPC to its segments' postcards, DCTCP's and PIAS's
// probes wait less than cubic's (reno's, modelled) behind the full queue,
// and a second run repeats the records byte for byte.
func TestTCPModelIncast(t *testing.T) {
	src := `name: inc
topology: {kind: star, hosts: 6}
link: {rate: 50Mbit}
switch: {queue_depth_pkts: 128, ecn_threshold_pkts: 20}
transports:
  - name: tcp
  - name: tcp
    label: dctcp
    tcp: {congestion: dctcp}
  - name: pias
phases:
  - {name: bulk, clients: [h2-h5], servers: [h1], sizes: "fixed:1000000", arrivals: closed, max_outstanding: 1, response_bytes: 100}
  - {name: probes, clients: [h6], servers: [h1], sizes: "fixed:100", arrivals: poisson, rate_rps: 100}
warmup: 500ms
duration: 3s
drain: 1s
seed: 3
calibration: {sizes: [100, 100000], samples: 3}
`
	p := load(t, src)
	if err := simulate.Check(p); err != nil {
		t.Fatal(err)
	}
	dir := runSim(t, p)
	s := readSummary(t, dir)
	p99 := map[string]float64{}
	for _, e := range s.Experiments {
		if e.RPCs.Issued == 0 || e.RPCs.Completed+e.RPCs.Failed+e.RPCs.InFlight != e.RPCs.Issued || e.RPCs.Failed != 0 {
			t.Errorf("%s: books %+v", e.Name, e.RPCs)
		}
		if e.Short.P99us == nil {
			t.Fatalf("%s: no short P99", e.Name)
		}
		p99[e.Name] = *e.Short.P99us
		if e.Anatomy == nil || e.Anatomy.RPCs == 0 || e.Anatomy.Joined != e.Anatomy.RPCs {
			t.Errorf("%s: the latency anatomy joined %+v short RPCs, want all", e.Name, e.Anatomy)
		}
	}
	if !(p99["inc-tcp-dctcp"] < p99["inc-tcp"]/3 && p99["inc-pias"] < p99["inc-tcp-dctcp"]) {
		t.Errorf("short P99s %v: want pias < dctcp < cubic/3", p99)
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("a model of TCP (simnet/tcpmodel)")) {
		t.Error("the manifest does not say TCP was a model")
	}
	for exp, wantCE := range map[string]bool{"inc-tcp": false, "inc-tcp-dctcp": true, "inc-pias": true} {
		sw, err := os.ReadFile(filepath.Join(dir, "switch", exp, "s1.json"))
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Ports []struct {
				Queues []struct {
					CE uint64 `json:"ce_marked_pkts"`
				} `json:"queues"`
			} `json:"ports"`
		}
		if err := json.Unmarshal(sw, &st); err != nil {
			t.Fatal(err)
		}
		var ce uint64
		for _, p := range st.Ports {
			for _, q := range p.Queues {
				ce += q.CE
			}
		}
		if (ce > 0) != wantCE {
			t.Errorf("%s: %d CE marks in the switch statistics, want some: %v", exp, ce, wantCE)
		}
	}
	again := runSim(t, load(t, src))
	x, _ := os.ReadFile(filepath.Join(dir, "rpcs.csv"))
	y, _ := os.ReadFile(filepath.Join(again, "rpcs.csv"))
	if len(x) == 0 || !bytes.Equal(x, y) {
		t.Error("two runs of the same seed wrote different rpcs.csv")
	}
}

func TestRefusesCapture(t *testing.T) {
	p := load(t, strings.Replace(idle, "SEED", "1", 1)+"capture: {hosts: [h1]}\n")
	if err := simulate.Check(p); err == nil || !strings.Contains(err.Error(), "capture:") {
		t.Fatalf("Check = %v, want a refusal of capture", err)
	}
}

// TestUplinkRate: a leaf-spine's uplinks run at topology.uplink_rate in
// the simulated switches, the hosts' links at link.rate.
func TestUplinkRate(t *testing.T) {
	dir := runSim(t, load(t, `name: up
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2, uplink_rate: 400Mbit}
link: {rate: 100Mbit}
transports:
  - name: homa
phases:
  - {name: p, clients: [h1], servers: [h4], sizes: fixed:10000, arrivals: poisson, rate_rps: 100}
warmup: 100ms
duration: 1s
`))
	rates := map[uint64]int{}
	for _, sw := range []string{"l1", "l2", "p1"} {
		b, err := os.ReadFile(filepath.Join(dir, "switch", "up-homa", sw+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Ports []struct {
				RateBps uint64 `json:"rate_bps"`
			} `json:"ports"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		for _, p := range st.Ports {
			rates[p.RateBps]++
		}
	}
	// 4 host ports at 100 Mbit/s; each leaf's uplink and the spine's two
	// ports at 400 Mbit/s.
	if rates[100e6] != 4 || rates[400e6] != 4 {
		t.Errorf("ports by rate %v, want 4 at 100 Mbit/s and 4 at 400 Mbit/s", rates)
	}
	if s := readSummary(t, dir); s.Experiments[0].RPCs.Completed == 0 {
		t.Error("no RPC crossed the spine")
	}
}

// spineSent is the bytes every queue of spine sw sent in experiment exp.
func spineSent(t *testing.T, dir, exp, sw string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "switch", exp, sw+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Ports []struct {
			Queues []struct {
				SentBytes uint64 `json:"sent_bytes"`
			} `json:"queues"`
		} `json:"ports"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, p := range st.Ports {
		for _, q := range p.Queues {
			n += q.SentBytes
		}
	}
	return n
}

// twoSpines is a leaf-spine of two leaves and two spines whose first
// leaf's hosts call the second's, spread over the spines by LB.
const twoSpines = `name: mp
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2, load_balancing: LB}
link: {rate: 100Mbit}
transports:
  - name: homa
phases:
  - {name: p, clients: [h1, h2], servers: [h3, h4], sizes: fixed:20000, arrivals: poisson, rate_rps: 100}
warmup: 50ms
duration: 1s
drain: 200ms
`

// TestSpinesShareAndLinkDownMovesPaths: two leaves, two spines, traffic
// across: both spines carry it; with l1-p1 down for most of the
// measurement the controller's paths put nearly all of it on p2 and every
// RPC still completes.
func TestSpinesShareAndLinkDownMovesPaths(t *testing.T) {
	base := twoSpines
	for _, lb := range []string{"spray", "ecmp"} {
		t.Run(lb, func(t *testing.T) {
			dir := runSim(t, load(t, strings.Replace(base, "LB", lb, 1)))
			p1, p2 := spineSent(t, dir, "mp-homa", "p1"), spineSent(t, dir, "mp-homa", "p2")
			if p1 == 0 || p2 == 0 || p1 > 3*p2 || p2 > 3*p1 {
				t.Errorf("spines sent p1 %d, p2 %d bytes: want both within 3x", p1, p2)
			}
		})
	}
	dir := runSim(t, load(t, strings.Replace(base, "LB", "spray", 1)+"faults:\n  - {link: l1-p1, down: {at: 0s, for: 900ms}}\n"))
	p1, p2 := spineSent(t, dir, "mp-homa", "p1"), spineSent(t, dir, "mp-homa", "p2")
	if p2 < 4*p1 {
		t.Errorf("l1-p1 down 900 ms of 1 s: spines sent p1 %d, p2 %d bytes: want p2 at least 4x p1", p1, p2)
	}
	if r := readSummary(t, dir).Experiments[0].RPCs; r.Completed == 0 || r.Failed != 0 {
		t.Errorf("with l1-p1 down: %+v, want every RPC completed", r)
	}
	t.Logf("l1-p1 down: p1 %d, p2 %d bytes", p1, p2)
}

// TestLossBetweenSwitches: loss on a leaf-spine link in the twin drops
// frames both ways on that link only, counted at the leaf's port toward
// the spine as the embedded switch counts them (its egress and ingress),
// and Homa still completes every RPC; the link named spine first is the
// same link.
func TestLossBetweenSwitches(t *testing.T) {
	// The drain leaves time for Homa's RESENDs, 50 ms of silence apart
	// at 100 Mbit/s (homaconf: the tick stretched to 10 ms).
	scen := strings.NewReplacer("LB", "spray", "drain: 200ms", "drain: 2s").Replace(twoSpines)
	dir := runSim(t, load(t, scen+"faults:\n  - {link: p1-l1, loss: 0.05}\n"))
	var s struct {
		Experiments []struct {
			RPCs struct {
				Issued, Completed, Failed uint64
			} `json:"rpcs"`
			Switch struct {
				FaultDropsByPort map[string]int64 `json:"fault_drops_by_port"`
			} `json:"switch"`
		} `json:"experiments"`
	}
	decodeSummary(t, dir, &s)
	e := s.Experiments[0]
	if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued {
		t.Errorf("rpcs %+v: want every RPC completed", e.RPCs)
	}
	if len(e.Switch.FaultDropsByPort) != 1 || e.Switch.FaultDropsByPort["l1/3"] == 0 {
		t.Errorf("fault drops %v: want some, all at l1/3 (l1's port toward p1)", e.Switch.FaultDropsByPort)
	}
	t.Logf("fault drops %v", e.Switch.FaultDropsByPort)
}
