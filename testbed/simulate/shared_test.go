package simulate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/testbed/simulate"
)

// TestSharedHosts runs Homa's short RPCs beside TCP's bulk transfers from
// the same clients, with and without the host qdisc: each transport's
// RPCs are analysed on their own within their experiment, every RPC is
// booked, and the qdisc takes Homa's short messages out from behind TCP's
// packets in the NIC (at 1 Gbit/s a
// frame is 12 us, so the gain is a few frames).
func TestSharedHosts(t *testing.T) {
	src := `name: co
topology: {kind: star, hosts: 4}
link: {rate: 1Gbit}
switch: {queue_depth_pkts: 256, ecn_threshold_pkts: 20}
transports:
  - name: homa
  - name: tcp
    tcp: {congestion: dctcp}
phases:
  - {name: probes, transport: homa, clients: [h2-h4], servers: [h1], sizes: "fixed:100", arrivals: poisson, rate_rps: 2000, response_bytes: 100}
  - {name: bulk, transport: tcp-dctcp, clients: [h2-h4], servers: [h1], sizes: "fixed:1000000", arrivals: closed, max_outstanding: 1, response_bytes: 100}
simulated: true
warmup: 20ms
duration: 300ms
drain: 50ms
seed: 5
calibration: {sizes: [100, 100000], samples: 3}
sweep:
  - {param: host_qdisc, values: [none, pacer]}
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
		if e.Short.P99us != nil {
			p99[e.Name] = *e.Short.P99us
		}
		if e.Short.P99us != nil && (e.Anatomy == nil || e.Anatomy.RPCs == 0 || e.Anatomy.Joined != e.Anatomy.RPCs) {
			t.Errorf("%s: the latency anatomy joined %+v short RPCs, want all", e.Name, e.Anatomy)
		}
	}
	const none, pacer = "co-homa+tcp-host_qdiscnone/homa", "co-homa+tcp-host_qdiscpacer/homa"
	if len(s.Experiments) != 4 || p99[none] == 0 || p99[pacer] == 0 {
		t.Fatalf("experiments %v: want homa and tcp of each host_qdisc, with Homa's short P99", p99)
	}
	if !(p99[pacer] < 0.8*p99[none]) {
		t.Errorf("Homa's short P99 %.1f us with the qdisc, %.1f us without: want under 0.8 of it", p99[pacer], p99[none])
	}
	for _, e := range s.Experiments {
		if e.Name == pacer && (e.Internals == nil || e.Internals.Counters["qdisc_tcp_deferred"] == 0) {
			t.Errorf("%s: no TCP packet was deferred by the qdisc: %+v", e.Name, e.Internals)
		}
		// The TCP model's shared FIFO NIC is named where it shapes the result.
		named := slices.ContainsFunc(e.Fidelity, func(f string) bool { return strings.Contains(f, "share each host's one FIFO NIC") })
		if want := strings.Contains(e.Name, "host_qdiscnone"); named != want {
			t.Errorf("%s: the shared NIC named %v, want %v: %q", e.Name, named, want, e.Fidelity)
		}
	}
}

// TestQdiscPacesHoma: with the host qdisc, Homa's own pacer stands aside
// and the qdisc paces and orders its packets, as HomaModule's Homa skips
// its old pacer while homa_qdisc is active; without the qdisc the
// engine's pacer holds the packets the NIC has no room for.
func TestQdiscPacesHoma(t *testing.T) {
	src := `name: paced
topology: {kind: star, hosts: 3}
link: {rate: 10Gbit}
transports:
  - name: homa
    homa: {max_nic_backlog_us: 5}
phases:
  - {name: bulk, clients: [h2, h3], servers: [h1], sizes: "fixed:1000000", arrivals: closed, max_outstanding: 2, response_bytes: 100}
simulated: true
warmup: 1ms
duration: 10ms
drain: 20ms
seed: 3
calibration: {sizes: [100, 100000], samples: 3}
sweep:
  - {param: host_qdisc, values: [none, pacer]}
`
	s := readSummary(t, runSim(t, load(t, src)))
	if len(s.Experiments) != 2 {
		t.Fatalf("%d experiments, want 2", len(s.Experiments))
	}
	for _, e := range s.Experiments {
		if e.Internals == nil {
			t.Fatalf("%s: no transport counters", e.Name)
		}
		c := e.Internals.Counters
		switch e.Name {
		case "paced-homa-host_qdiscnone":
			if c["homa_pacer_waits"] == 0 {
				t.Errorf("%s: the engine's pacer never held a packet without the qdisc: %v", e.Name, c)
			}
		case "paced-homa-host_qdiscpacer":
			if c["homa_pacer_waits"] != 0 || c["qdisc_homa_deferred"] == 0 {
				t.Errorf("%s: the engine's pacer held %d times and the qdisc deferred %d Homa packets; want none and some",
					e.Name, c["homa_pacer_waits"], c["qdisc_homa_deferred"])
			}
		default:
			t.Errorf("unexpected experiment %s", e.Name)
		}
	}
}
