package testbed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// The BMv2 tests of tor.p4's multipath, RED marking and defences: each
// runs a short scenario on simple_switch_grpc and checks the feature did
// its job there. They need root, BMv2 and p4c's build/tor.json
// (docs/bmv2.md); elsewhere they skip and say why.

// onTarget is a scenario of this file on switch target target.
func onTarget(text, target string) string {
	return strings.Replace(text, "target: bmv2", "target: "+target, 1)
}

// bmv2LeafSpine is multipathScenario on BMv2 with load balancing lb and
// the faults list faults.
func bmv2LeafSpine(lb, faults string) string {
	s := strings.Replace(multipathScenario, "switch: {target: embedded, postcards: false}",
		"switch: {target: bmv2, postcards: false, queue_depth_pkts: 64}", 1)
	s = strings.Replace(s, "hosts_per_leaf: 2}", "hosts_per_leaf: 2, load_balancing: "+lb+"}", 1)
	return strings.Replace(s, "FAULTS", faults, 1)
}

// bmv2SpineDown takes the link l1-p1 down for most of the measurement.
const bmv2SpineDown = "faults:\n  - {link: l1-p1, down: {at: 0s, for: 2500ms}}\n"

// bmv2RED is a DCTCP and a cubic incast through a BMv2 port whose queue
// marks CE by a RED profile: only DCTCP's packets are ECN-capable.
const bmv2RED = `name: bmv2red
topology: {kind: star, hosts: 4}
link: {rate: 10Mbit}
switch:
  target: bmv2
  queue_depth_pkts: 64
  ecn: {kmin_pkts: 5, kmax_pkts: 30, pmax: 0.5}
transports:
  - name: tcp
    label: dctcp
    tcp: {congestion: dctcp}
  - name: tcp
    label: cubic
    tcp: {congestion: cubic}
phases:
  - {name: bulk, clients: [h2, h3], servers: [h1], sizes: "fixed:500000", arrivals: closed, max_outstanding: 1, response_bytes: 100}
  - {name: probes, clients: [h4], servers: [h1], sizes: "fixed:100", arrivals: poisson, rate_rps: 20}
warmup: 500ms
duration: 4s
drain: 1s
calibration: {skip: true}
`

// bmv2Defences has three adversaries at h1, one per defence of tor.p4:
// h4 untrusted abusing the top priority (its DSCP is re-marked), h5
// trusted abusing it above its meter (metered), h6 forging grants with
// h1's address (dropped by the source guard).
const bmv2Defences = `name: bmv2def
topology: {kind: star, hosts: 6}
link: {rate: 20Mbit}
switch:
  target: bmv2
  queue_depth_pkts: 64
  anti_spoofing: true
  meters:
    - {priorities: [6, 7], rate: 2Mbit, burst: 16KB, exceed: remark}
dscp:
  policy: class-selector
  trust: [h1-h3, h5]
  untrusted: {remark: 0}
transports:
  - name: homa
    homa: {sequential_ids: true}
phases:
  - {name: bulk, clients: [h2], servers: [h1], sizes: "fixed:100000", arrivals: closed, max_outstanding: 1, response_bytes: 100}
  - {name: probes, clients: [h3], servers: [h1], sizes: "fixed:100", arrivals: poisson, rate_rps: 20}
adversaries:
  - {host: h4, kind: priority_abuse, target: h1, rate: 4Mbit}
  - {host: h5, kind: priority_abuse, target: h1, rate: 8Mbit}
  - {host: h6, kind: forged_grants, target: h1, rate: 2Mbit, spoof: true}
warmup: 500ms
duration: 3s
drain: 1s
calibration: {skip: true}
`

// TestBMv2ScenariosValid: the BMv2 tests' scenarios pass validation, so
// a machine without BMv2 still catches a scenario they could not run.
func TestBMv2ScenariosValid(t *testing.T) {
	for name, text := range map[string]string{
		"ecmp": bmv2LeafSpine(scenario.LoadBalanceECMP, ""), "spray down": bmv2LeafSpine(scenario.LoadBalanceSpray, bmv2SpineDown),
		"red": bmv2RED, "defences": bmv2Defences,
	} {
		src, err := scenario.Parse(name+".yaml", []byte(text))
		if err == nil {
			_, err = src.Plan(scenario.Options{})
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestBMv2LeafSpineBalances runs the two-spine fabric on BMv2 with each
// load balancing, whose next-hop groups the controller writes as P4Runtime
// action profile members and groups of uplink_selector: both spines carry
// traffic; with l1-p1 down for most of the measurement the controller
// moves l1's paths to p2, which then carries most of it.
func TestBMv2LeafSpineBalances(t *testing.T) {
	needRunPrereqs(t)
	needBMv2(t)
	checkLeafSpineBalances(t, buildHomatb(t), scenario.TargetBMv2)
}

// TestFeatureChecksOnEmbedded runs the BMv2 tests' scenarios and checks
// on the embedded target: both targets of tor.p4 must pass them, and
// docs/bmv2.md gives the two targets' numbers side by side.
func TestFeatureChecksOnEmbedded(t *testing.T) {
	needRunPrereqs(t)
	bin := buildHomatb(t)
	for name, check := range map[string]func(*testing.T, string, string){
		"balances": checkLeafSpineBalances, "red": checkREDMarksDCTCP, "defences": checkDefences,
	} {
		t.Run(name, func(t *testing.T) { check(t, bin, scenario.TargetEmbedded) })
	}
}

// checkLeafSpineBalances is TestBMv2LeafSpineBalances on switch target.
func checkLeafSpineBalances(t *testing.T, bin, target string) {
	for _, lb := range []string{scenario.LoadBalanceECMP, scenario.LoadBalanceSpray} {
		t.Run(lb, func(t *testing.T) {
			both, s := spineBytesOf(t, bin, onTarget(bmv2LeafSpine(lb, ""), target))
			t.Logf("%s: spine bytes %v", lb, both)
			if both["p1"] == 0 || both["p2"] == 0 {
				t.Errorf("%s: spines sent %v bytes: want both to carry traffic", lb, both)
			}
			if lb == scenario.LoadBalanceSpray && (both["p1"] > 2*both["p2"] || both["p2"] > 2*both["p1"]) {
				t.Errorf("spray: spines sent %v bytes: want them within 2x of each other", both)
			}
			checkMultipathBooks(t, s, false)

			down, s := spineBytesOf(t, bin, onTarget(bmv2LeafSpine(lb, bmv2SpineDown), target))
			t.Logf("%s, l1-p1 down: spine bytes %v", lb, down)
			if down["p2"] < 3*down["p1"] {
				t.Errorf("%s, l1-p1 down 2.5 s of 3 s: spines sent %v bytes, want p2 at least 3x p1", lb, down)
			}
			checkMultipathBooks(t, s, true)
		})
	}
}

// transportCounters reads the summary's agent counters of each experiment.
func transportCounters(t *testing.T, dir string) map[string]map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Experiments []struct {
			Name     string `json:"name"`
			Internal struct {
				Counters map[string]uint64 `json:"counters"`
			} `json:"transport_internals"`
		} `json:"experiments"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	out := map[string]map[string]uint64{}
	for _, e := range s.Experiments {
		out[e.Name] = e.Internal.Counters
	}
	return out
}

// TestBMv2REDMarksDCTCP runs DCTCP and cubic incasts through a BMv2 port
// with a RED profile (switch.ecn, tor.p4's set_ecn_red with v1model's
// random()): DCTCP's senders see CE-marked segments delivered, cubic's
// (not ECN-capable) none.
func TestBMv2REDMarksDCTCP(t *testing.T) {
	needRunPrereqs(t)
	needBMv2(t)
	checkREDMarksDCTCP(t, buildHomatb(t), scenario.TargetBMv2)
}

// checkREDMarksDCTCP is TestBMv2REDMarksDCTCP on switch target.
func checkREDMarksDCTCP(t *testing.T, bin, target string) {
	dir, out, err := runScenarioText(t, bin, onTarget(bmv2RED, target), 180*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	checkMultipathBooks(t, readSummary(t, dir, out), false)
	counters := transportCounters(t, dir)
	dctcp, cubic := counters["bmv2red-tcp-dctcp"], counters["bmv2red-tcp-cubic"]
	t.Logf("dctcp: ECN connections %d, CE delivered %d; cubic: %d, %d",
		dctcp["tcp_ecn_conns"], dctcp["tcp_delivered_ce"], cubic["tcp_ecn_conns"], cubic["tcp_delivered_ce"])
	if dctcp["tcp_ecn_conns"] == 0 || dctcp["tcp_delivered_ce"] == 0 {
		t.Errorf("dctcp: %d connections negotiated ECN, %d segments delivered with CE: want both above 0 (counters %v)",
			dctcp["tcp_ecn_conns"], dctcp["tcp_delivered_ce"], dctcp)
	}
	if cubic == nil || cubic["tcp_delivered_ce"] != 0 {
		t.Errorf("cubic: %d segments delivered with CE, want 0 (not ECN-capable; counters %v)", cubic["tcp_delivered_ce"], cubic)
	}
}

// TestBMv2Defences runs three adversaries at once through BMv2 and checks
// each defence of tor.p4 acted on its attacker's port and only there: the
// untrusted host's top-priority packets re-marked, the trusted one's
// metered above its rate, the spoofer's forgeries dropped by the source
// guard; the legitimate client's port untouched by the guard and the
// re-marking.
func TestBMv2Defences(t *testing.T) {
	needRunPrereqs(t)
	needBMv2(t)
	checkDefences(t, buildHomatb(t), scenario.TargetBMv2)
}

// checkDefences is TestBMv2Defences on switch target.
func checkDefences(t *testing.T, bin, target string) {
	dir, _, err := runScenarioText(t, bin, onTarget(bmv2Defences, target), 180*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "switch", "bmv2def-homa", "s1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st switchstats.Stats
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("s1.json: %v", err)
	}
	layout, err := topo.Layout(scenario.Topology{Kind: scenario.KindStar, Hosts: 6}, readManifest(t, dir).Tag)
	if err != nil {
		t.Fatal(err)
	}
	byHost := map[string]switchstats.Port{}
	for _, p := range st.Ports {
		for _, h := range layout.Hosts {
			if h.Port == int(p.Port) {
				byHost[h.Name] = p
			}
		}
	}
	for _, h := range []string{"h2", "h4", "h5", "h6"} {
		p := byHost[h]
		t.Logf("%s (port %d): re-marked %d, metered %d, spoofed %d", h, p.Port, p.RemarkedPkts, p.MeteredPkts, p.SpoofDrops)
	}
	for _, c := range []struct {
		host, what string
		got        uint64
		positive   bool
	}{
		{"h4", "re-marked", byHost["h4"].RemarkedPkts, true},
		{"h4", "metered", byHost["h4"].MeteredPkts, false}, // re-marked to queue 0 first, so no meter sees it
		{"h5", "metered", byHost["h5"].MeteredPkts, true},
		{"h5", "re-marked", byHost["h5"].RemarkedPkts, false},
		{"h6", "spoofed", byHost["h6"].SpoofDrops, true},
		{"h2", "spoofed", byHost["h2"].SpoofDrops, false},
		{"h2", "re-marked", byHost["h2"].RemarkedPkts, false},
	} {
		if (c.got > 0) != c.positive {
			want := "none"
			if c.positive {
				want = "some"
			}
			t.Errorf("%s's port: %d packets %s, want %s", c.host, c.got, c.what, want)
		}
	}
	if len(byHost) != 6 {
		t.Errorf("s1.json has the ports of %d hosts, want 6: %s", len(byHost), fmt.Sprint(st.Ports))
	}
}
