package scenario

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/tcprpc"
)

// good is a valid scenario that the bad cases below each break in one place.
const good = `name: t
topology:
  kind: star
  hosts: 4
link:
  rate: 100Mbit
transports:
  - name: homa
    homa:
      priorities: 8
  - name: tcp
phases:
  - name: bulk
    clients: [h2-h3]
    servers: [h1]
    sizes: fixed:1000
    arrivals: closed
    max_outstanding: 1
duration: 2s
`

// TestAdversaryScenario: a valid adversary and a sweep over its kind make
// one experiment per kind and transport, each with its adversary's kind.
func TestAdversaryScenario(t *testing.T) {
	src, err := Parse("adv.yaml", []byte(good+"adversaries:\n  - {host: h4, kind: malformed, target: h1, rate: 10Mbit}\nsweep:\n  - param: adversaries.0.kind\n    values: [forged_resend, unsched_flood]\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range plan.Experiments {
		kinds = append(kinds, e.Scenario.Adversaries[0].Kind)
	}
	if want := []string{"forged_resend", "forged_resend", "unsched_flood", "unsched_flood"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if start, dur := plan.Base.Adversaries[0].Window(plan.Base); start != 0 || dur != 2*time.Second {
		t.Errorf("window %v for %v, want the whole measurement", start, dur)
	}
	if _, err := src.Plan(Options{Simulate: true}); err == nil || !strings.Contains(err.Error(), "adversaries") {
		t.Errorf("simulated: %v, want the adversaries refused", err)
	}
}

// TestPFCInTheSimulator: switch.pfc plans emulated and simulated alike.
func TestPFCInTheSimulator(t *testing.T) {
	src, err := Parse("pfc.yaml", []byte(good+"switch:\n  pfc: {priorities: [3], xoff_pkts: 20, xon_pkts: 10}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sim := range []bool{false, true} {
		if _, err := src.Plan(Options{Simulate: sim}); err != nil {
			t.Errorf("simulate %v: %v", sim, err)
		}
	}
}

func TestGoodScenario(t *testing.T) {
	src, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(plan.Experiments); got != 2 {
		t.Fatalf("experiments = %d, want one per transport (2)", got)
	}
	if plan.Base.Link.Rate != 100e6 || plan.Base.Link.MTU != 1500 || plan.Base.Transports[1].TCP.Congestion != "cubic" {
		t.Errorf("defaults not applied: %+v", plan.Base.Link)
	}
}

// A whole number written as a float (4.0, 4e0) is exact, and accepted.
func TestWholeFloatIsAnInteger(t *testing.T) {
	for _, v := range []string{"4.0", "4e0"} {
		src, err := Parse("good.yaml", []byte(strings.Replace(good, "  hosts: 4", "  hosts: "+v, 1)))
		if err != nil {
			t.Fatalf("hosts: %s: %v", v, err)
		}
		plan, err := src.Plan(Options{})
		if err != nil {
			t.Fatalf("hosts: %s: %v", v, err)
		}
		if got := plan.Base.Topology.Hosts; got != 4 {
			t.Errorf("hosts: %s read as %d, want 4", v, got)
		}
	}
}

func TestBadScenarios(t *testing.T) {
	tests := []struct {
		name      string
		from, to  string // replace from with to in good
		line      int
		field     string
		msgSubstr string
	}{
		{"unknown top key", "duration: 2s", "duraton: 2s", 19, "duraton", `unknown field "duraton"`},
		// Zeros that would silently become the default.
		{"zero duration", "duration: 2s", "duration: 0s", 19, "duration", "expected a measurement longer than 0 (left out: 10s), got 0"},
		{"zero spines", "  kind: star\n  hosts: 4", "  kind: leaf-spine\n  leaves: 2\n  hosts_per_leaf: 2\n  spines: 0", 6, "topology.spines", "expected 1 or more spines (left out: 1), got 0"},
		{"zero MTU", "rate: 100Mbit", "rate: 100Mbit\n  mtu: 0", 7, "link.mtu", "expected an MTU in bytes (left out: 1500), got 0"},
		{"zero connections", "  - name: tcp", "  - name: tcp\n    tcp: {connections_per_peer: 0}", 12, "transports[1].tcp.connections_per_peer", "expected 1 or more connections (left out: 1), got 0"},
		{"unknown nested key", "  hosts: 4", "  hostz: 4", 4, "topology.hostz", "expected one of"},
		{"wrong type", "  hosts: 4", "  hosts: four", 4, "topology.hosts", "expected an integer"},
		// yaml.v3 alone would truncate 4.5 hosts to 4.
		{"range written with dots", "clients: [h2-h3]", "clients: [h2..h3]", 14, "phases[0].clients", `expected a host range such as h2-h9, got "h2..h3"`},
		{"fraction of an integer", "  hosts: 4", "  hosts: 4.5", 4, "topology.hosts", "expected an integer, got the number 4.5"},
		{"fraction in a homa key", "priorities: 8", "priorities: 8\n      overcommit: 2.5", 11, "transports[0].homa.overcommit", "expected an integer, got 2.5"},
		{"fraction as a sweep value", "duration: 2s", "duration: 2s\nsweep:\n  - param: seed\n    values: [1, 1.5]", 22, "sweep[0].values[1] (seed)", "expected a non-negative integer, got the number 1.5"},
		{"bad rate", "rate: 100Mbit", "rate: fast", 6, "link.rate", "expected a rate"},
		{"rate too high", "rate: 100Mbit", "rate: 10Gbit", 6, "link.rate", "up to 1000 Mbit/s"},
		{"rate in bytes without /s", "rate: 100Mbit", "rate: 50MB", 6, "link.rate", `"50MB" is a size in bytes, not a rate: write 400Mbit (bits per second) or 50MB/s (bytes per second)`},
		{"bytes per second read as bytes", "rate: 100Mbit", "rate: 150MB/s", 6, "link.rate", "up to 1000 Mbit/s"},
		{"nine priorities", "priorities: 8", "priorities: 9", 10, "transports[0].homa.priorities", "1, 2, 4 or 8"},
		{"unknown homa extra", "priorities: 8", "priorities: 8\n      extra: {poll_uz: \"50\"}", 11, "transports[0].homa.extra.poll_uz", `unknown field "poll_uz"; expected one of: variant, `},
		{"bad homa extra value", "priorities: 8", "priorities: 8\n      extra: {poll_us: \"1s\"}", 11, "transports[0].homa.extra.poll_us", `expected an integer, got "1s"`},
		{"unknown homa key", "priorities: 8", "priorities: 8\n      poll_uz: 50", 11, "transports[0].homa.poll_uz", `unknown field "poll_uz"`},
		{"homa value out of range", "priorities: 8", "priorities: 8\n      fifo_grant_permille: 1000", 11, "transports[0].homa.fifo_grant_permille", "1000 not in 0..999"},
		{"homa extra value out of range", "priorities: 8", "priorities: 8\n      extra: {poll_us: 20000}", 11, "transports[0].homa.extra.poll_us", "20ms not in 0..10ms"},
		{"homa value of the wrong type", "priorities: 8", "priorities: 8\n      client_port: 70000", 11, "transports[0].homa.client_port", "from 0 to 65535, got 70000"},
		{"variant not the transport's", "priorities: 8", "priorities: 8\n      variant: ndp", 11, "transports[0].homa.variant", `the variant is the transport's name (homa)`},
		{"start_msg on pfabric", "  - name: tcp", "  - name: pfabric\n    homa: {start_msg: true}", 12, "transports[1].homa.start_msg", "start_msg is Homa's"},
		{"unknown host", "servers: [h1]", "servers: [h7]", 15, "phases[0].servers", `host "h7" does not exist`},
		{"host range past end", "clients: [h2-h3]", "clients: [h2-h9]", 14, "phases[0].clients", "h9"},
		{"bad transport", "  - name: tcp", "  - name: quic", 11, "transports[1].name", `homa, tcp, pfabric, phost, ndp, pias, roce, uet, got "quic"`},
		{"pfabric on bmv2", "  - name: tcp", "  - name: pfabric\nswitch: {target: bmv2}", 11, "transports[1].name", "BMv2's FIFO queues cannot"},
		{"open_when_busy emulated", "  - name: tcp", "  - name: tcp\n    tcp: {open_when_busy: true}", 12, "transports[1].tcp.open_when_busy", "simulator's TCP model"},
		{"nic_priorities emulated", "  - name: tcp", "  - name: tcp\n    tcp: {nic_priorities: true}", 12, "transports[1].tcp.nic_priorities", "simulator's"},
		{"min_rto emulated", "  - name: tcp", "  - name: tcp\n    tcp: {min_rto: 1ms}", 12, "transports[1].tcp.min_rto", "kernel keeps its own"},
		{"min_rto negative", "  - name: tcp", "  - name: tcp\n    tcp: {min_rto: -1ms}", 12, "transports[1].tcp.min_rto", "at least 0"},
		{"pfabric buffer below a frame", "  - name: tcp", "  - name: pfabric\n    pfabric: {buffer_bytes: 100}", 12, "transports[1].pfabric.buffer_bytes", "at least one frame"},
		{"ndp threshold above the queue", "  - name: tcp", "  - name: ndp\n    ndp: {trim_threshold_pkts: 100000}", 12, "transports[1].ndp.trim_threshold_pkts", "to the queue depth"},
		{"pias thresholds not ascending", "  - name: tcp", "  - name: pias\n    tcp: {congestion: cubic}\n    pias: {thresholds: [10KB, 5KB]}", 13, "transports[1].pias.thresholds[1]", "ascending"},
		{"pias dctcp without ecn", "  - name: tcp", "  - name: pias", 11, "transports[1].tcp.congestion", "ecn_threshold_pkts"},
		{"credit window on homa", "priorities: 8", "priorities: 8\n      credit_window_bytes: 20000", 11, "transports[0].homa.credit_window_bytes", "the phost and ndp transports' setting"},
		{"roce key on homa", "      priorities: 8", "      roce_qps_per_peer: 2", 10, "transports[0].homa.roce_qps_per_peer", "roce transport's setting"},
		{"roce queue pairs out of range", "  - name: tcp", "  - name: roce\n    homa: {roce_qps_per_peer: 1000}", 12, "transports[1].homa.roce_qps_per_peer", "not in 1..256"},
		{"uet trim threshold above the queue", "  - name: tcp", "  - name: uet\n    uet: {trim_threshold_pkts: 100000}", 12, "transports[1].uet.trim_threshold_pkts", "0 (no trimming) to the queue depth"},
		{"uet trimming on bmv2", "  - name: tcp", "  - name: uet\n    uet: {trim_threshold_pkts: 8}\nswitch: {target: bmv2}", 12, "transports[1].uet.trim_threshold_pkts", "BMv2 cannot"},
		{"uet trimming on another port", "  - name: tcp", "  - name: uet\n    uet: {trim_threshold_pkts: 8}\n    homa: {uet_udp_port: 5000}", 13, "transports[1].homa.uet_udp_port", "needs UET on UDP port 4793"},
		{"uet on RoCE's port", "  - name: tcp", "  - name: uet\n    homa: {uet_udp_port: 4791}", 12, "transports[1].homa.uet_udp_port", "RoCEv2's port"},
		{"uet parameters on ndp", "  - name: tcp", "  - name: ndp\n    uet: {trim_threshold_pkts: 4}", 12, "transports[1].uet", "uet parameters on ndp"},
		{"ndp parameters on tcp", "  - name: tcp", "  - name: tcp\n    ndp: {trim_threshold_pkts: 4}", 12, "transports[1].ndp", "ndp parameters on tcp"},
		{"bad duration", "duration: 2s", "duration: soon", 19, "duration", "expected a duration"},
		{"red kmax below kmin", "duration: 2s", "duration: 2s\nswitch:\n  ecn: {kmin_pkts: 20, kmax_pkts: 10, pmax: 0.1}", 21, "switch.ecn.kmax_pkts", "more than kmin_pkts (20)"},
		{"red pmax above one", "duration: 2s", "duration: 2s\nswitch:\n  ecn: {kmin_pkts: 5, kmax_pkts: 10, pmax: 2}", 21, "switch.ecn.pmax", "at most 1, got 2"},
		{"pfc on bmv2", "duration: 2s", "duration: 2s\nswitch:\n  target: bmv2\n  pfc: {priorities: [3], xoff_pkts: 20, xon_pkts: 10}", 22, "switch.pfc", "BMv2's simple_switch has no priority flow control"},
		{"pfc xon above xoff", "duration: 2s", "duration: 2s\nswitch:\n  pfc: {priorities: [3], xoff_pkts: 20, xon_pkts: 30}", 21, "switch.pfc.xon_pkts", "0 to xoff_pkts - 1 packets, got 30"},
		{"pfc xoff beyond the queue", "duration: 2s", "duration: 2s\nswitch:\n  queue_depth_pkts: 64\n  pfc: {priorities: [3], xoff_pkts: 64, xon_pkts: 30}", 22, "switch.pfc.xoff_pkts", "pauses before a queue drops, got 64"},
		{"pfc priority out of range", "duration: 2s", "duration: 2s\nswitch:\n  pfc:\n    priorities: [3, 8]\n    xoff_pkts: 20\n    xon_pkts: 10", 22, "switch.pfc.priorities[1]", "0..7, each once, got 8"},
		{"pfc lossless queue 0 with pfabric", "  - name: tcp", "  - name: pfabric\nswitch:\n  pfc: {priorities: [0], xoff_pkts: 20, xon_pkts: 10}", 11, "transports[1].name", "leave priority 0 out"},
		{"red and a step", "duration: 2s", "duration: 2s\nswitch:\n  ecn_threshold_pkts: 20\n  ecn: {kmin_pkts: 5, kmax_pkts: 10, pmax: 0.1}", 22, "switch.ecn", "not both"},
		{"negative simulated latency", "duration: 2s", "duration: 2s\nsimulation: {switch_delay: -1us}", 20, "simulation.switch_delay", "expected a latency from 0 to 1ms, got -1µs"},
		{"unknown simulation key", "duration: 2s", "duration: 2s\nsimulation:\n  host_delay: 1us", 21, "simulation.host_delay", "host_tx_delay"},
		{"closed without outstanding", "    max_outstanding: 1\n", "", 13, "phases[0].max_outstanding", "at least 1"},
		{"list expected", "clients: [h2-h3]", "clients: {a: b}", 14, "phases[0].clients", "expected a list"},
		{"bad kind", "kind: star", "kind: ring", 3, "topology.kind", `"star", "leaf-spine", "fat-tree", "rail" or "external"`},
		{"load out of range", "    arrivals: closed\n    max_outstanding: 1", "    load: 2", 17, "phases[0].load", "between 0 and 1"},
		{"duplicate key", "  hosts: 4", "  hosts: 4\n  hosts: 5", 5, "topology.hosts", "already defined at line 4"},
		{"missing phases", "phases:", "phasez:", 12, "phasez", "unknown field"},
		{"sweep of the network", "duration: 2s", "duration: 2s\nsweep:\n  - param: topology.hosts\n    values: [2, 3]", 21, "sweep[0].param", "cannot sweep"},
		{"sweep of unknown field", "duration: 2s", "duration: 2s\nsweep:\n  - param: phases.bulk.lod\n    values: [1]", 21, "sweep[0].param", `no field "lod"`},
		{"sweep of unknown phase", "duration: 2s", "duration: 2s\nsweep:\n  - param: phases.burst.load\n    values: [1]", 21, "sweep[0].param", `no entry named "burst"`},
		{"bad sweep value type", "duration: 2s", "duration: 2s\nsweep:\n  - param: transports.homa.homa.overcommit\n    values: [2, x]", 22, "sweep[0].values[1] (transports.homa.homa.overcommit)", `expected an integer, got "x"`},
		{"adversary is a victim", "duration: 2s", "duration: 2s\nadversaries:\n  - {host: h2, kind: malformed, target: h1, rate: 10Mbit}", 21, "adversaries[0].host", "h2 is a client or server of a phase"},
		{"adversary of unknown kind", "duration: 2s", "duration: 2s\nadversaries:\n  - {host: h4, kind: smurf, target: h1, rate: 10Mbit}", 21, "adversaries[0].kind", `expected one of [forged_grants forged_resend unsched_flood priority_abuse malformed], or none (no attack, a sweep's baseline), got "smurf"`},
		{"adversary target no victim", "duration: 2s", "duration: 2s\nadversaries:\n  - {host: h4, kind: malformed, target: h9, rate: 10Mbit}", 21, "adversaries[0].target", `expected the victim, a host of the run`},
		{"adversary without rate", "duration: 2s", "duration: 2s\nadversaries:\n  - {host: h4, kind: malformed, target: h1}", 21, "adversaries[0].rate", "expected the attack's rate"},
		{"adversary above the link", "duration: 2s", "duration: 2s\nadversaries:\n  - {host: h4, kind: unsched_flood, target: h1, rate: 200Mbit}", 21, "adversaries[0].rate", "above the link's"},
		{"adversary past the end", "duration: 2s", "duration: 2s\nadversaries:\n  - host: h4\n    kind: malformed\n    target: h1\n    rate: 10Mbit\n    start: 1s\n    for: 2s", 26, "adversaries[0].for", "after the measurement ends"},
		{"adversary bad start", "duration: 2s", "duration: 2s\nadversaries:\n  - {host: h4, kind: malformed, target: h1, rate: 10Mbit, start: 5s}", 21, "adversaries[0].start", "below the measurement's duration"},
		{"trust of an unknown host", "duration: 2s", "duration: 2s\ndscp:\n  trust: [h9]", 21, "dscp.trust", `host "h9" does not exist`},
		{"untrusted without trust", "duration: 2s", "duration: 2s\ndscp:\n  untrusted: {remark: 0}", 21, "dscp.untrusted", "give dscp.trust"},
		{"remark beyond DSCP", "duration: 2s", "duration: 2s\ndscp:\n  trust: [h1]\n  untrusted: {remark: 64}", 22, "dscp.untrusted.remark", "from 0 to 63, got 64"},
		{"meter of queue 9", "duration: 2s", "duration: 2s\nswitch:\n  meters:\n    - {priorities: [9], rate: 1Mbit, burst: 15KB}", 22, "switch.meters[0].priorities", "from 0 (lowest) to 7 (highest), got 9"},
		{"queue in two meters", "duration: 2s", "duration: 2s\nswitch:\n  meters:\n    - {priorities: [7], rate: 1Mbit, burst: 15KB}\n    - {priorities: [6, 7], rate: 1Mbit, burst: 15KB}", 23, "switch.meters[1].priorities", "metered by switch.meters[0] already"},
		{"meter without rate", "duration: 2s", "duration: 2s\nswitch:\n  meters:\n    - priorities: [7]\n      burst: 15KB", 22, "switch.meters[0].rate", "expected the metered rate"},
		{"meter above the link", "duration: 2s", "duration: 2s\nswitch:\n  meters:\n    - priorities: [7]\n      rate: 1Gbit\n      burst: 15KB", 23, "switch.meters[0].rate", "above the link's"},
		{"meter burst below a frame", "duration: 2s", "duration: 2s\nswitch:\n  meters:\n    - priorities: [7]\n      rate: 1Mbit\n      burst: 100", 24, "switch.meters[0].burst", "from one MTU (1500 bytes)"},
		{"meter excess action", "duration: 2s", "duration: 2s\nswitch:\n  meters:\n    - priorities: [7]\n      rate: 1Mbit\n      burst: 15KB\n      exceed: police", 25, "switch.meters[0].exceed", `expected "remark" (queue 0, DSCP 0) or "drop", got "police"`},
		{"five meters", "duration: 2s", "duration: 2s\nswitch:\n  meters:" + "\n    - {priorities: [0], rate: 1Mbit, burst: 15KB}" + "\n    - {priorities: [1], rate: 1Mbit, burst: 15KB}\n    - {priorities: [2], rate: 1Mbit, burst: 15KB}\n    - {priorities: [3], rate: 1Mbit, burst: 15KB}\n    - {priorities: [4], rate: 1Mbit, burst: 15KB}", 21, "switch.meters", "at most 4 meters"},
		{"defences switch without defences", "duration: 2s", "duration: 2s\nswitch:\n  defences: false", 21, "switch.defences", "none is set"},
		{"buffer below one packet", "duration: 2s", "duration: 2s\nswitch:\n  buffer:\n    shared_bytes: 100", 22, "switch.buffer.shared_bytes", "at least one MTU"},
		{"buffer size not a size", "duration: 2s", "duration: 2s\nswitch:\n  buffer:\n    port_bytes: lots", 22, "switch.buffer.port_bytes", "expected a size"},
		{"alpha without shared buffer", "duration: 2s", "duration: 2s\nswitch:\n  buffer:\n    alpha: 2", 22, "switch.buffer.alpha", "give shared_bytes"},
		{"alpha out of range", "duration: 2s", "duration: 2s\nswitch:\n  buffer:\n    shared_bytes: 1MB\n    alpha: 100", 23, "switch.buffer.alpha", "1/64 to 64"},
		{"buffer on bmv2", "duration: 2s", "duration: 2s\nswitch:\n  target: bmv2\n  buffer:\n    shared_bytes: 1MB", 22, "switch.buffer", "per-queue depths only"},
		{"postcards on bmv2", "duration: 2s", "duration: 2s\nswitch:\n  target: bmv2\n  postcards: true", 22, "switch.postcards", "no per-packet records"},
		{"records unknown", "duration: 2s", "duration: 2s\nswitch:\n  records: some", 21, "switch.records", "expected all, sampled or none"},
		{"records without postcards", "duration: 2s", "duration: 2s\nswitch:\n  postcards: false\n  records: all", 22, "switch.records", "switch.postcards is off"},
		{"no records with postcards", "duration: 2s", "duration: 2s\nswitch:\n  postcards: true\n  records: none", 22, "switch.records", "switch.postcards is on"},
		{"byte depth on bmv2", "duration: 2s", "duration: 2s\nswitch:\n  target: bmv2\n  queue_depth_bytes: 64KB", 22, "switch.queue_depth_bytes", "packets only"},
		{"unknown buffer key", "duration: 2s", "duration: 2s\nswitch:\n  buffer:\n    shared: 1MB", 22, "switch.buffer.shared", "unknown field"},
		{"dctcp without ecn marking", "  - name: tcp", "  - name: tcp\n    tcp: {congestion: dctcp}", 12, "transports[1].tcp.congestion", "switch.ecn_threshold_pkts > 0"},
		{"unknown congestion control", "  - name: tcp", "  - name: tcp\n    tcp: {congestion: vegas}", 12, "transports[1].tcp.congestion", `dctcp or nv (homatb's BPF DCTCP and TCP-NV), got "vegas"`},
		{"cutoffs in increasing order", "priorities: 8", "priorities: 8\n      unsched_cutoffs: [3008, 12288, 63488, 1000000]", 11, "transports[0].homa.unsched_cutoffs", "Linux's order"},
		// What the run would refuse or mis-measure (issue #31).
		{"homa message over its limit", "sizes: fixed:1000", "sizes: fixed:2000000", 16, "phases[0].sizes",
			`messages up to 2000000 bytes, but homa (transports[0]) carries at most 1000000: truncate the sizes with ",max=1000000", or raise transports[0].homa.max_message_bytes to 2000000`},
		{"response over the limit", "    max_outstanding: 1\n", "    max_outstanding: 1\n    response_bytes: 2000000\n", 19, "phases[0].response_bytes",
			"homa (transports[0]) carries at most 1000000: expected response_bytes of at most 1000000"},
		{"message longer than the measurement", "duration: 2s", "duration: 100us", 19, "duration",
			"takes 160µs at the link rate 100Mbit, longer than the measurement: expected a duration of at least 1ms"},
		{"default calibration over the limit", "priorities: 8", "priorities: 8\n      max_message_bytes: 500000", 11, "transports[0].homa.max_message_bytes",
			"homa carries at most 500000 bytes, but the default calibration sizes go to 1000000: write calibration.sizes of at most 500000"},
		{"calibration over the limit", "duration: 2s", "duration: 2s\ncalibration: {sizes: [100, 2000000]}", 20, "calibration.sizes[1]",
			"calibration size 2000000, but homa (transports[0]) carries at most 1000000: expected calibration.sizes of at most 1000000"},
		{"rate_rps beyond the link", "    arrivals: closed\n    max_outstanding: 1", "    rate_rps: 1e12", 17, "phases[0].rate_rps",
			"the downlinks of h1, h2, h3 at up to 16000000000% and the uplinks of h1, h2, h3 at up to 16000000000% of the link rate 100Mbit"},
		{"rate_rps fix", "    arrivals: closed\n    max_outstanding: 1", "    rate_rps: 1e12", 17, "phases[0].rate_rps",
			"expected a rate_rps of at most 6250 here, or set allow_overload: true"},
		{"bursts beyond the link", "    sizes: fixed:1000\n    arrivals: closed\n    max_outstanding: 1", "    sizes: fixed:100000\n    incast: {interval: 10ms}", 17, "phases[0].incast.interval",
			`phase "bulk"'s bursts (every client sends one RPC each 10ms) put the downlink of h1 at up to 160%`},
		{"offered load beyond the link", "    arrivals: closed\n    max_outstanding: 1", "    load: 0.8", 17, "phases[0].load",
			"expected a load of at most 0.5 here"},
		{"one-way messages in emulation", "    arrivals: closed\n    max_outstanding: 1", "    load: 0.3\n    one_way: true", 18, "phases[0].one_way",
			"only the simulator sees on one clock"},
		{"unknown load_of", "    arrivals: closed\n    max_outstanding: 1", "    load: 0.3\n    load_of: bytes", 18, "phases[0].load_of",
			`expected "messages" (message bytes, the default) or "wire"`},
		{"load_of without a load", "    max_outstanding: 1", "    max_outstanding: 1\n    load_of: wire", 19, "phases[0].load_of",
			"the phase has no load"},
		{"dctcp as a transport", "  - name: tcp", "  - name: dctcp", 11, "transports[1].name",
			"dctcp is kernel TCP with a congestion control: write name: tcp with tcp: {congestion: dctcp}"},
		{"near miss of a transport", "  - name: tcp", "  - name: phots", 11, "transports[1].name", `did you mean "phost"?`},
		{"no transports", "  - name: homa\n    homa:\n      priorities: 8\n  - name: tcp\n", "", 7, "transports", "homa, tcp, pfabric, phost, ndp, pias, roce"},
		{"unclosed list", "clients: [h2-h3]", "clients: [h2-h3", 14, "clients", "a list opened with [ is not closed"},
		{"tab in the indentation", "    servers: [h1]", "\tservers: [h1]", 15, "servers", "a tab in the indentation"},
		{"unclosed quote", "name: t\n", "name: \"t\n", 1, "name", "a quoted string is not closed"},
		{"unclosed mapping", "link:\n  rate: 100Mbit", "link: {rate: 100Mbit", 5, "link", "a mapping opened with { is not closed"},
		{"key indented too far", "  hosts: 4", "   hosts: 4", 4, "hosts", "indented deeper than the key above"},
		{"unknown baseline", "duration: 2s", "duration: 2s\nreport:\n  baseline: dctcp", 21, "report.baseline", `(homa, tcp-cubic), got "dctcp"`},
		{"unknown headline phase", "duration: 2s", "duration: 2s\nreport:\n  headline_phase: probe", 21, "report.headline_phase", `expected the name of one of the phases`},
		{"two labels for one configuration", "  - name: tcp", "  - name: tcp\n  - name: tcp\n    label: cubic", 13, "transports[2].label", `configuration "tcp-cubic" is listed twice`},
		{"bad sweep value range", "duration: 2s", "duration: 2s\nsweep:\n  - param: transports.homa.homa.priorities\n    values: [4, 9]", 22, "transports[0].homa.priorities", "1, 2, 4 or 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(good, tc.from, tc.to, 1)
			if text == good {
				t.Fatalf("replacement %q not found in the good scenario", tc.from)
			}
			wantOneError(t, text, tc.line, tc.field, tc.msgSubstr)
		})
	}
}

func parseAndPlan(file, text string) error {
	src, err := Parse(file, []byte(text))
	if err != nil {
		return err
	}
	_, err = src.Plan(Options{SizeSpec: func(s string) (SizeStats, error) {
		if n, ok := strings.CutPrefix(s, "fixed:"); ok {
			v, err := strconv.Atoi(n)
			return SizeStats{Mean: float64(v), Max: v}, err
		}
		if s != "w4" {
			return SizeStats{}, fmt.Errorf("unknown size spec %q", s)
		}
		return SizeStats{Mean: 1000, Max: 1000}, nil
	}})
	return err
}

// TestSweptErrorOnce: a bad value in one sweep fails every combination it
// is part of, yet is reported once, at the value's line.
func TestSweptErrorOnce(t *testing.T) {
	sweep := "sweep:\n  - param: transports.homa.homa.priorities\n    values: [4, 9]\n  - param: transports.homa.homa.overcommit\n    values: [1, 2, 3]\n"
	err := parseAndPlan("once.yaml", good+sweep)
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Line != 22 || es[0].Field != "transports[0].homa.priorities" {
		t.Fatalf("got %v, want one error at once.yaml:22 transports[0].homa.priorities", err)
	}
}

// TestErrorsInLineOrder: several problems come back sorted by line.
func TestErrorsInLineOrder(t *testing.T) {
	text := strings.Replace(good, "priorities: 8", "priorities: 3", 1) + "switch:\n  queue_depth_pkts: -1\n"
	err := parseAndPlan("order.yaml", text)
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 {
		t.Fatalf("got %v, want two errors", err)
	}
	if es[0].Line != 10 || es[1].Line != 21 {
		t.Errorf("lines %d, %d; want 10 then 21", es[0].Line, es[1].Line)
	}
}

func TestSizeSpecError(t *testing.T) {
	err := parseAndPlan("s.yaml", strings.Replace(good, "sizes: fixed:1000", "sizes: huge", 1))
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Line != 16 || es[0].Field != "phases[0].sizes" {
		t.Fatalf("got %v, want one error at s.yaml:16 phases[0].sizes", err)
	}
}

func TestSweepExpansion(t *testing.T) {
	sweep := `sweep:
  - param: transports.homa.homa.overcommit
    values: [1, 2, 4]
  - param: phases.bulk.sizes
    values: [fixed:1000, w4]
repetitions: 2
`
	src, err := Parse("sw.yaml", []byte(strings.Replace(good, "  - name: tcp\n", "", 1)+sweep))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(plan.Experiments), 3*2*2; got != want {
		t.Fatalf("experiments = %d, want %d", got, want)
	}
	seen := map[string]bool{}
	for _, e := range plan.Experiments {
		if seen[e.Name] {
			t.Errorf("duplicate experiment name %q", e.Name)
		}
		seen[e.Name] = true
		oc := e.Params["transports.homa.homa.overcommit"]
		if fmt.Sprint(e.Scenario.Transports[0].Homa.Overcommit) != oc {
			t.Errorf("%s: overcommit %d, param says %s", e.Name, e.Scenario.Transports[0].Homa.Overcommit, oc)
		}
		if e.Scenario.Phases[0].Sizes != e.Params["phases.bulk.sizes"] {
			t.Errorf("%s: sizes %q, param says %q", e.Name, e.Scenario.Phases[0].Sizes, e.Params["phases.bulk.sizes"])
		}
		if e.Params["repetition"] != fmt.Sprint(e.Repetition) {
			t.Errorf("%s: repetition param %q, want %d", e.Name, e.Params["repetition"], e.Repetition)
		}
	}
	// The first experiment has the first value of every sweep; the last
	// sweep varies fastest, the repetition slowest.
	first, second := plan.Experiments[0], plan.Experiments[1]
	if first.Name != "t-homa-overcommit1-sizesfixed_1000-r1" || second.Name != "t-homa-overcommit1-sizesw4-r1" {
		t.Errorf("order: %s, %s", first.Name, second.Name)
	}
	// Sweep values must not leak into the base scenario or each other.
	if plan.Base.Transports[0].Homa.Overcommit != 0 {
		t.Errorf("base scenario changed by the sweep: overcommit %d", plan.Base.Transports[0].Homa.Overcommit)
	}
	if r2 := plan.Experiments[6]; r2.Repetition != 2 || r2.Seed == first.Seed {
		t.Errorf("%s (repetition %d) has seed %d, like the first repetition", r2.Name, r2.Repetition, r2.Seed)
	}
	if oc2 := plan.Experiments[2]; oc2.Seed != first.Seed {
		t.Errorf("%s has seed %d, %s %d: one transport's parameter changed the traffic", oc2.Name, oc2.Seed, first.Name, first.Seed)
	}
}

// TestInterleavedOrder: repetitions interleave the configurations (ABAB),
// and a sweep of one transport's parameter leaves the others to run once
// per value of the other sweeps, under names without it.
func TestInterleavedOrder(t *testing.T) {
	sweep := `sweep:
  - param: transports.homa.homa.overcommit
    values: [1, 2]
  - param: phases.bulk.max_outstanding
    values: [1, 4]
repetitions: 2
`
	plan := mustPlan(t, good+sweep)
	var got []string
	for _, e := range plan.Experiments {
		got = append(got, strings.TrimPrefix(e.Name, "t-"))
	}
	want := []string{
		"homa-overcommit1-max_outstanding1-r1", "tcp-max_outstanding1-r1",
		"homa-overcommit1-max_outstanding4-r1", "tcp-max_outstanding4-r1",
		"homa-overcommit2-max_outstanding1-r1",
		"homa-overcommit2-max_outstanding4-r1",
		"homa-overcommit1-max_outstanding1-r2", "tcp-max_outstanding1-r2",
		"homa-overcommit1-max_outstanding4-r2", "tcp-max_outstanding4-r2",
		"homa-overcommit2-max_outstanding1-r2",
		"homa-overcommit2-max_outstanding4-r2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("order\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range plan.Experiments {
		if _, ok := e.Params["transports.homa.homa.overcommit"]; ok != (e.Transport.Name == "homa") {
			t.Errorf("%s: params %v", e.Name, e.Params)
		}
	}
}

func TestSweepByIndexAndList(t *testing.T) {
	// phases[0] as error messages name fields, phases.0 and phases[bulk]
	// all reach the same phase.
	for _, path := range []string{"phases.0.clients", "phases[0].clients", "phases[bulk].clients"} {
		t.Run(path, func(t *testing.T) {
			sweep := "sweep:\n  - param: " + path + "\n    values: [[h2], [h2, h3, h4]]\n"
			src, err := Parse("ix.yaml", []byte(good+sweep))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := src.Plan(Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Experiments) != 4 {
				t.Fatalf("experiments = %d, want 4", len(plan.Experiments))
			}
			if got := plan.Experiments[2].Scenario.Phases[0].Clients; len(got) != 3 {
				t.Errorf("clients of the second combination = %v, want 3 hosts", got)
			}
			if name := plan.Experiments[2].Name; name != "t-homa-clientsh2+h3+h4" {
				t.Errorf("name = %q", name)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
	}{
		{"100Mbit", 100e6}, {"1Gbit", 1e9}, {"1gbps", 1e9}, {"250mbit/s", 250e6}, {"2.5Gbit", 2.5e9}, {"64000", 64000}, {"10k", 10e3},
	}
	for _, tc := range tests {
		got, err := ParseRate(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back, err := ParseRate(got.String()); err != nil || back != got {
			t.Errorf("round trip of %q through %q = %v, %v", tc.in, got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "fast", "-1Mbit", "0"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
}

// TestShippedScenarios checks that every file in scenarios/ validates.
func TestShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			plan, err := Load(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Experiments) == 0 {
				t.Fatal("no experiments")
			}
			for _, w := range plan.Warnings() {
				t.Errorf("warning: %s", w)
			}
		})
	}
	if _, err := os.Stat("../../scenarios/incast.yaml"); err != nil {
		t.Errorf("the default scenario is missing: %v", err)
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
	}{{"1500", 1500}, {"64KB", 64000}, {"2MB", 2e6}, {"1MiB", 1 << 20}, {"512k", 512000}, {"1.5GB", 1.5e9}, {"100 B", 100}}
	for _, tc := range tests {
		if got, err := ParseByteSize(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "lots", "-1KB", "2TB"} {
		if _, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", bad)
		}
	}
}

func TestSwitchBuffer(t *testing.T) {
	text := good + "switch:\n  queue_depth_bytes: 64KB\n  buffer:\n    shared_bytes: 2MB\n    alpha: 0.5\n    port_pkts: 300\n"
	src, err := Parse("buf.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	sw := plan.Base.Switch
	want := Buffer{SharedBytes: 2e6, Alpha: 0.5, PortPkts: 300}
	if sw.Buffer != want || sw.QueueDepthBytes != 64000 {
		t.Errorf("switch = %+v, want buffer %+v and queue_depth_bytes 64000", sw, want)
	}
}

func TestOfferedLinkLoad(t *testing.T) {
	// h1..h4 all to all at 60% with echoed responses: each host sends 60%
	// of requests and receives its share of everyone's requests (60%) plus
	// the responses to its own (60%).
	text := strings.Replace(good, "    arrivals: closed\n    max_outstanding: 1\n", "    load: 0.6\n", 1)
	text = strings.Replace(text, "clients: [h2-h3]", "clients: [all]", 1)
	text = strings.Replace(text, "servers: [h1]", "servers: [all]", 1)
	text += "allow_overload: true\n" // the overload is what is measured here
	plan := mustPlan(t, text)
	ll, err := OfferedLinkLoad(plan.Experiments[0].Scenario)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"h1", "h4"} {
		if d, u := ll.Down[h], ll.Up[h]; math.Abs(d-1.2) > 1e-9 || math.Abs(u-1.2) > 1e-9 {
			t.Errorf("%s: down %.3f, up %.3f; want 1.2 each (requests + echoed responses)", h, d, u)
		}
	}
	if w := plan.Warnings(); len(w) != 2 || !strings.Contains(w[0], "4 host downlinks (h1, h2, h3, h4) at up to 120%") {
		t.Errorf("warnings %q", w)
	}
	// With 100-byte responses the same load fits.
	plan = mustPlan(t, strings.Replace(text, "    load: 0.6\n", "    load: 0.6\n    response_bytes: 100\n", 1))
	ll, _ = OfferedLinkLoad(plan.Experiments[0].Scenario)
	if d := ll.Down["h1"]; math.Abs(d-0.66) > 1e-9 {
		t.Errorf("h1 down %.4f, want 0.6 + 0.6*100/1000", d)
	}
	if w := plan.Warnings(); len(w) != 0 {
		t.Errorf("warnings %q for a load that fits", w)
	}
	// Closed loops are left out: they carry what the network allows.
	if ll, _ := OfferedLinkLoad(mustPlan(t, good).Base); len(ll.Down) != 0 {
		t.Errorf("closed-loop load counted: %v", ll.Down)
	}
}

func mustPlan(t *testing.T, text string) *Plan { return mustPlanWith(t, text, Options{}) }

// mustPlanWith is the plan of a scenario given as text, with opt.
func mustPlanWith(t *testing.T, text string, opt Options) *Plan {
	t.Helper()
	src, err := Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(opt)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func TestRepetitionsOption(t *testing.T) {
	src, err := Parse("r.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{Repetitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	reps := map[int]bool{}
	for _, e := range plan.Experiments {
		reps[e.Repetition] = true
		if e.Params["repetition"] == "" {
			t.Errorf("%s has no repetition param", e.Name)
		}
	}
	if len(reps) != 3 || plan.Base.Repetitions != 3 {
		t.Errorf("repetitions %v, base %d; want 3", reps, plan.Base.Repetitions)
	}
}

// TestLinuxCutoffsAccepted: static cutoffs in Linux's order (Linux's W4
// set, cloudlab/bin/set_cutoffs) are valid.
func TestLinuxCutoffsAccepted(t *testing.T) {
	text := strings.Replace(good, "priorities: 8", "priorities: 8\n      unsched_cutoffs: [1000000, 1000000, 1000000, 1000000, 1000000, 63488, 12288, 3008]", 1)
	if err := parseAndPlan("w4.yaml", text); err != nil {
		t.Fatal(err)
	}
}

// TestHomaKeys: a homa block sets homaconf.Config's fields by their keys,
// directly or, as files written before the keys had fields did, under
// extra as strings; the experiments' agents get the scenario's link and
// the transport's variant with them.
func TestHomaKeys(t *testing.T) {
	text := strings.Replace(good, "priorities: 8", "priorities: 8\n      start_msg: true\n      tick_us: 250\n      extra: {poll_us: \"50\", fifo_grants: \"off\"}", 1)
	text = strings.Replace(text, "  - name: tcp", "  - name: ndp\n    homa: {pacer_spin_us: \"off\", overcommit: 2}", 1)
	src, err := Parse("keys.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := plan.Experiments[0]
	c := e.Transport.HomaConfig(e.Scenario.Fabric())
	if !c.StartMsg || c.Poll != 50*time.Microsecond || !c.DisableFIFOGrants || c.Tick != 250*time.Microsecond ||
		c.LinkBps != 100e6 || c.MTU != 1500 || c.Variant != "" {
		t.Errorf("homa config %+v", c)
	}
	e = plan.Experiments[1]
	c = e.Transport.HomaConfig(e.Scenario.Fabric())
	if c.Variant != homaconf.VariantNDP || c.PacerSpin >= 0 || c.Overcommit != 2 {
		t.Errorf("ndp config %+v", c)
	}
}

// TestConfigLabels: every configuration keeps a label of its own, and the
// baseline is Homa's unless report.baseline picks another.
func TestConfigLabels(t *testing.T) {
	text := strings.Replace(good, "  - name: tcp\n", `  - name: tcp
  - name: tcp
    label: dctcp
    tcp: {congestion: dctcp}
  - name: pfabric
switch: {ecn_threshold_pkts: 20}
`, 1)
	for _, tc := range []struct {
		name, report, baseline string
	}{
		{"homa by default", "", "homa"},
		{"chosen by label", "report: {baseline: tcp-cubic}\n", "tcp-cubic"},
		{"chosen by id", "report: {baseline: tcp-dctcp}\n", "tcp-dctcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Parse("labels.yaml", []byte(text+tc.report))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := src.Plan(Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range plan.Experiments {
				got = append(got, e.Transport.Config())
			}
			if want := []string{"homa", "tcp-cubic", "tcp-dctcp", "pfabric"}; !slices.Equal(got, want) {
				t.Errorf("labels %v, want %v", got, want)
			}
			if b := plan.Base.BaselineConfig(); b != tc.baseline {
				t.Errorf("baseline %q, want %q", b, tc.baseline)
			}
		})
	}
}

// TestZeroIsHonoured: drain: 0s and seed: 0 are values, not "unset"; only
// their absence takes the defaults.
func TestZeroIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name, add string
		drain     time.Duration
		seed      uint64
	}{
		{"defaults", "", time.Second, 1},
		{"zeros", "drain: 0s\nseed: 0\n", 0, 0},
		{"values", "drain: 3s\nseed: 7\n", 3 * time.Second, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlan(t, good+tc.add)
			if d := plan.Base.Drain.D(); d != tc.drain {
				t.Errorf("drain %s, want %s", d, tc.drain)
			}
			if s := plan.Experiments[0].Seed; s != tc.seed {
				t.Errorf("first experiment's seed %d, want %d", s, tc.seed)
			}
		})
	}
}

// TestAllowOverload: the overload that is an error by default is accepted,
// with its warning, when the scenario asks for it.
func TestAllowOverload(t *testing.T) {
	text := strings.Replace(good, "    arrivals: closed\n    max_outstanding: 1", "    load: 0.8", 1)
	if err := parseAndPlan("o.yaml", text); err == nil {
		t.Fatal("overload accepted without allow_overload")
	}
	plan := mustPlan(t, text+"allow_overload: true\n")
	if w := plan.Warnings(); len(w) == 0 || !strings.Contains(w[0], "h1") {
		t.Errorf("warnings %q, want the overloaded downlink of h1", w)
	}
}

// TestTCPMessageLimit keeps MaxTCPMessageBytes equal to the limit the TCP
// transport enforces.
func TestTCPMessageLimit(t *testing.T) {
	if MaxTCPMessageBytes != tcprpc.MaxMessage {
		t.Errorf("MaxTCPMessageBytes %d, tcprpc.MaxMessage %d", MaxTCPMessageBytes, tcprpc.MaxMessage)
	}
}

// TestFilePathsBesideTheScenario: a file: size spec is found beside the
// scenario file, whatever the working directory, and reaches the plan as
// an absolute path (the agents run elsewhere).
func TestFilePathsBesideTheScenario(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cdf.tsv"), []byte("length_bytes\tcdf\n100\t0.5\n1000\t1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(good, "sizes: fixed:1000", "sizes: file:cdf.tsv", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	plan, err := Load(file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plan.Experiments[0].Scenario.Phases[0].Sizes, "file:"+filepath.Join(dir, "cdf.tsv"); got != want {
		t.Errorf("sizes %q, want %q", got, want)
	}
}

// wantOneError plans text as bad.yaml and requires exactly one error, at
// line on field, whose message contains msg and starts with FILE:LINE.
func wantOneError(t *testing.T, text string, line int, field, msg string) {
	t.Helper()
	err := parseAndPlan("bad.yaml", text)
	if err == nil {
		t.Fatal("no error")
	}
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 {
		t.Fatalf("want exactly one *Error, got %T: %v", err, err)
	}
	e := es[0]
	if e.File != "bad.yaml" || e.Line != line || e.Field != field || !strings.Contains(e.Msg, msg) {
		t.Errorf("got %s\nwant bad.yaml:%d: %s: ...%s...", e, line, field, msg)
	}
	if !strings.HasPrefix(e.Error(), fmt.Sprintf("bad.yaml:%d: ", line)) {
		t.Errorf("message %q does not start with file:line", e.Error())
	}
}

// TestOneWayLoadOnTheWire checks the Homa paper's load on the wire: W1's
// one-way messages at 80% of the link counted as message bytes ask more
// than the link once their headers are on it (refused); counted on the
// wire (load_of: wire), as the paper's simulator counts them, they fit at
// exactly 80%, and a one-way phase with a response is refused.
func TestOneWayLoadOnTheWire(t *testing.T) {
	const base = `name: w1
topology: {kind: star, hosts: 16}
link: {rate: 10Gbit}
simulated: true
transports:
  - name: homa
phases:
  - name: all2all
    clients: [all]
    servers: [all]
    sizes: w1
    load: 0.8
    one_way: true
duration: 10ms
`
	plan := func(text string) (*Plan, error) {
		src, err := Parse("w1.yaml", []byte(text))
		if err != nil {
			return nil, err
		}
		return src.Plan(Options{Simulate: true})
	}
	if _, err := plan(base); err == nil || !strings.Contains(err.Error(), "phases[0].load") || !strings.Contains(err.Error(), "on the wire for one-way") {
		t.Errorf("W1 one-way at 0.8 of message bytes: %v, want refused at phases[0].load", err)
	}
	p, err := plan(strings.Replace(base, "    load: 0.8\n", "    load: 0.8\n    load_of: wire\n", 1))
	if err != nil {
		t.Fatalf("W1 one-way at 0.8 on the wire: %v", err)
	}
	s := p.Experiments[0].Scenario
	ll, err := OfferedLinkLoad(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"h1", "h16"} {
		if u, d := ll.Up[h], ll.Down[h]; math.Abs(u-0.8) > 1e-9 || math.Abs(d-0.8) > 1e-9 {
			t.Errorf("%s: up %.4f, down %.4f, want 0.8 each (one-way messages, no responses)", h, u, d)
		}
	}
	st, err := SizeStatsOf("w1")
	if err != nil {
		t.Fatal(err)
	}
	// The message bytes' share of the wire: HomaSimulation configures W1
	// at 0.657 of its wire load (homaTransportConfig.ini).
	t.Logf("W1: mean %.1f B, %.1f B on the wire: message load %.3f of the wire load", st.Mean, s.WireBytes(st), st.Mean/s.WireBytes(st))
	if _, err := plan(strings.Replace(base, "    one_way: true\n", "    one_way: true\n    response_bytes: 100\n", 1)); err == nil || !strings.Contains(err.Error(), "phases[0].response_bytes") {
		t.Errorf("one-way with a response: %v, want refused at phases[0].response_bytes", err)
	}
}

// TestOffered: an open-loop phase offers its rate times its clients times
// the warm-up and measurement, in RPCs, and their packets: a request of
// one packet each way when echoed or with a short response, more with a
// longer one, none back one-way; a closed loop offers nothing a rate fixes.
func TestOffered(t *testing.T) {
	const phase = `name: off
topology: {kind: star, hosts: 4}
link: {rate: 1Gbit}
transports:
  - name: homa
phases:
  - name: p
    clients: [h1-h2]
    servers: [h3]
    sizes: fixed:1000
    rate_rps: 5000
`
	const times = "warmup: 100ms\nduration: 1s\n"
	cases := []struct {
		name, add, tail string
		rpcs, pkts      float64
		sim             bool
	}{
		{"echoed", "", "", 11_000, 22_000, false},
		{"response", "    response_bytes: 100\n", "", 11_000, 22_000, false},
		{"large response", "    response_bytes: 4000\n", "", 11_000, 11_000 * 4, false},
		{"one-way", "    one_way: true\n", "simulated: true\n", 11_000, 11_000, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, err := Parse("off.yaml", []byte(phase+c.add+times+c.tail))
			if err != nil {
				t.Fatal(err)
			}
			p, err := src.Plan(Options{Simulate: c.sim})
			if err != nil {
				t.Fatal(err)
			}
			rpcs, pkts, err := p.Experiments[0].Scenario.Offered()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(rpcs-c.rpcs) > 1e-6 || math.Abs(pkts-c.pkts) > 1e-6 {
				t.Errorf("offered %.1f RPCs, %.1f packets; want %.0f, %.0f", rpcs, pkts, c.rpcs, c.pkts)
			}
		})
	}
	rpcs, pkts, err := mustPlan(t, good).Base.Offered()
	if err != nil || rpcs != 0 || pkts != 0 {
		t.Errorf("closed loop offered %v RPCs, %v packets (%v), want none", rpcs, pkts, err)
	}
}
