package scenario

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// clockBase is a scenario of every kind of transport the clock defaults
// touch (engine, PIAS) and one they leave alone (kernel TCP).
const clockBase = `name: c
topology: {kind: star, hosts: 4}
link: {rate: 1Gbit}
transports:
  - name: homa
  - name: pias
  - name: tcp
phases:
  - name: p
    clients: [h2-h3]
    servers: [h1]
    sizes: fixed:1000
    arrivals: closed
    max_outstanding: 1
duration: 1ms
`

// TestClockDefaults: a simulated run fills each setting the file leaves
// out with the modelled hardware's value and lists it; one the file or a
// sweep sets keeps its value and is not listed; an emulated run keeps
// every default of its own.
func TestClockDefaults(t *testing.T) {
	type want struct {
		backlog          time.Duration // transports[0] (homa)
		switchD, hostTxD Duration
		open, prio       bool     // transports[1] (pias)
		minRTO           Duration // transports[1] (pias)
		ecn              int
		keys             []string
	}
	all := []string{"simulation.switch_delay", "simulation.host_tx_delay", "simulation.host_rx_delay", "switch.ecn_threshold_pkts",
		"transports[0].homa.max_nic_backlog_us", "transports[0].homa.unsched_cutoffs", "transports[0].homa.graduated", "transports[0].homa.boost_tail", "transports[1].tcp.open_when_busy", "transports[1].tcp.nic_priorities"}
	for _, tc := range []struct {
		name     string
		text     string
		simulate bool
		want     want
	}{
		{"emulated keeps its own", strings.Replace(clockBase, "  - name: pias\n", "  - name: pias\n    tcp: {congestion: reno}\n", 1), false,
			want{}},
		{"simulated, nothing set", clockBase, true,
			want{simNICBacklog, simSwitchDelay, simHostTxDelay, true, true, 0, simECNPktsSlow, all}},
		{"simulated, explicit values kept", clockBase + "simulation: {switch_delay: 0s}\nswitch: {ecn_threshold_pkts: 30}\n" +
			"", true, want{simNICBacklog, 0, simHostTxDelay, true, true, 0, 30, []string{"simulation.host_tx_delay", "simulation.host_rx_delay",
			"transports[0].homa.max_nic_backlog_us", "transports[0].homa.unsched_cutoffs", "transports[0].homa.graduated", "transports[0].homa.boost_tail", "transports[1].tcp.open_when_busy", "transports[1].tcp.nic_priorities"}}},
		{"simulated, explicit false and backlog kept", strings.Replace(strings.Replace(clockBase,
			"  - name: homa\n", "  - name: homa\n    homa: {max_nic_backlog_us: 5}\n", 1),
			"  - name: pias\n", "  - name: pias\n    tcp: {open_when_busy: false, min_rto: 1ms}\n", 1), true,
			want{5 * time.Microsecond, simSwitchDelay, simHostTxDelay, false, true, Duration(time.Millisecond), simECNPktsSlow,
				[]string{"simulation.switch_delay", "simulation.host_tx_delay", "simulation.host_rx_delay", "switch.ecn_threshold_pkts",
					"transports[0].homa.unsched_cutoffs", "transports[0].homa.graduated", "transports[0].homa.boost_tail", "transports[1].tcp.nic_priorities"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlanWith(t, tc.text, Options{Simulate: tc.simulate})
			var keys []string
			for _, d := range plan.ClockDefaults {
				keys = append(keys, d.Key)
			}
			if strings.Join(keys, " ") != strings.Join(tc.want.keys, " ") {
				t.Errorf("clock defaults %v, want %v", keys, tc.want.keys)
			}
			for _, e := range plan.Experiments {
				s := e.Scenario
				var sw, tx Duration
				if s.Simulation != nil {
					sw, tx = s.Simulation.SwitchDelay, s.Simulation.HostTxDelay
				}
				got := want{s.Transports[0].Homa.MaxNICBacklog, sw, tx, s.Transports[1].TCP.OpenWhenBusy, s.Transports[1].TCP.NICPriorities,
					s.Transports[1].TCP.MinRTO, s.Switch.ECNThresholdPkts, tc.want.keys}
				if got.backlog != tc.want.backlog || got.switchD != tc.want.switchD || got.hostTxD != tc.want.hostTxD ||
					got.open != tc.want.open || got.prio != tc.want.prio || got.minRTO != tc.want.minRTO || got.ecn != tc.want.ecn {
					t.Errorf("%s: got %+v, want %+v", e.Name, got, tc.want)
				}
				if tcp := s.Transports[2].TCP; tcp.OpenWhenBusy || tcp.NICPriorities || tcp.MinRTO != 0 {
					t.Errorf("%s: kernel TCP took PIAS's connections: %+v", e.Name, tcp)
				}
			}
		})
	}
}

// TestWorkloadCutoffs: a simulated run fixes Homa's cutoffs from the
// workload when every phase sends one size spec one way (or echoed) and
// the file says nothing of cutoffs; otherwise its receivers compute them
// as Linux's do, and an emulated run always does.
func TestWorkloadCutoffs(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		simulate       bool
		want           string
	}{
		{"simulated", "", "", true, "fixed:1000"},
		{"emulated", "", "switch: {ecn_threshold_pkts: 20}\n", false, ""},
		{"cutoff_samples given", "  - name: homa\n", "  - name: homa\n    homa: {cutoff_samples: 500}\n", true, ""},
		{"cutoffs given", "  - name: homa\n", "  - name: homa\n    homa: {unsched_cutoffs: [1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 500]}\n", true, ""},
		{"responses of their own", "    max_outstanding: 1\n", "    max_outstanding: 1\n    response_bytes: 100\n", true, ""},
		{"two workloads", "duration: 1ms\n", "  - {name: q, clients: [h4], servers: [h1], sizes: \"fixed:2000\", rate_rps: 100}\nduration: 1ms\n", true, ""},
		{"one workload twice", "duration: 1ms\n", "  - {name: q, clients: [h4], servers: [h1], sizes: \"fixed:1000\", rate_rps: 100}\nduration: 1ms\n", true, "fixed:1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Parse("c.yaml", []byte(strings.Replace(clockBase, tc.old, tc.new, 1)))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := src.Plan(Options{Simulate: tc.simulate})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range plan.Experiments {
				if got := e.Scenario.Transports[0].CutoffsFrom; got != tc.want {
					t.Errorf("%s: cutoffs from %q, want %q", e.Name, got, tc.want)
				}
				if got := e.Scenario.Transports[1].CutoffsFrom; got != "" {
					t.Errorf("%s: PIAS's cutoffs from %q, want none", e.Name, got)
				}
			}
		})
	}
}

// TestPaperLevels: where the simulated clock fixes Homa's cutoffs from the
// workload it also runs the Homa paper's simulator's levels (graduated
// blind levels, boosted tails), each unless the file sets it; Linux's
// (and an emulated run's) otherwise.
func TestPaperLevels(t *testing.T) {
	for _, tc := range []struct {
		name, old, new  string
		simulate        bool
		graduated, tail bool
	}{
		{"simulated", "", "", true, true, true},
		{"emulated", "", "switch: {ecn_threshold_pkts: 20}\n", false, false, false},
		{"boost_tail off kept", "  - name: homa\n", "  - name: homa\n    homa: {boost_tail: false}\n", true, true, false},
		{"graduated off kept", "  - name: homa\n", "  - name: homa\n    homa: {graduated: false}\n", true, false, true},
		{"cutoffs given", "  - name: homa\n", "  - name: homa\n    homa: {unsched_cutoffs: [1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 500]}\n", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlanWith(t, strings.Replace(clockBase, tc.old, tc.new, 1), Options{Simulate: tc.simulate})
			for _, e := range plan.Experiments {
				h := e.Scenario.Transports[0].Homa
				if h.Graduated != tc.graduated || h.BoostTail != tc.tail {
					t.Errorf("%s: graduated %v, boost_tail %v; want %v, %v", e.Name, h.Graduated, h.BoostTail, tc.graduated, tc.tail)
				}
			}
		})
	}
}

// TestSweptClockDefault: a setting a sweep sets takes the sweep's value in
// every experiment and is not listed as the clock's.
func TestSweptClockDefault(t *testing.T) {
	text := clockBase + "sweep:\n  - param: transports.homa.homa.max_nic_backlog_us\n    values: [2, 3]\n"
	src, err := Parse("c.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{Simulate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan.ClockDefaults {
		if strings.Contains(d.Key, "max_nic_backlog") {
			t.Errorf("swept setting listed as a clock default: %+v", d)
		}
	}
	seen := map[time.Duration]bool{}
	for _, e := range plan.Experiments {
		if e.Transport.Name == TransportHoma {
			seen[e.Scenario.Transports[0].Homa.MaxNICBacklog] = true
		}
	}
	if !seen[2*time.Microsecond] || !seen[3*time.Microsecond] || len(seen) != 2 {
		t.Errorf("homa's swept backlogs %v, want 2µs and 3µs", seen)
	}
}

// TestPFabricClockTimer: a simulated pFabric's timer ticks once per
// unloaded round trip of the fabric (computed by hand here for a star at
// 10 Gbit/s with the clock's latencies), its RESEND after three silent
// ticks and its abort after 10 s (pFabric's hosts never give a flow up);
// an explicit tick_us is kept, and the emulation keeps the engine's
// millisecond.
func TestPFabricClockTimer(t *testing.T) {
	text := strings.Replace(strings.Replace(clockBase, "link: {rate: 1Gbit}", "link: {rate: 10Gbit}", 1),
		"  - name: homa\n", "  - name: pfabric\n", 1)
	// A full frame (1,538 B) out and a minimal one (102 B) back on two
	// 10 Gbit/s links, plus 2 x (1 us + 0.5 us host, 0.25 us switch).
	wantTick := (2*(1538+102)*8*time.Second/10e9 + 2*(1750*time.Nanosecond)).Round(time.Microsecond)
	for _, tc := range []struct {
		name     string
		text     string
		simulate bool
		tick     time.Duration
		resend   int
		timeout  int
	}{
		{"simulated", text, true, wantTick, pfabricResendTicks, int((10*time.Second + wantTick - 1) / wantTick)},
		{"explicit tick kept", strings.Replace(text, "  - name: pfabric\n", "  - name: pfabric\n    homa: {tick_us: 50}\n", 1), true, 50 * time.Microsecond, 0, 0},
		{"emulated", strings.Replace(strings.Replace(text, "  - name: pias\n", "  - name: pias\n    tcp: {congestion: reno}\n", 1), "rate: 10Gbit", "rate: 1Gbit", 1), false, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Parse("p.yaml", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := src.Plan(Options{Simulate: tc.simulate})
			if err != nil {
				t.Fatal(err)
			}
			h := plan.Base.Transports[0].Homa
			if h.Tick != tc.tick || h.ResendTicks != tc.resend || h.TimeoutTicks != tc.timeout {
				t.Errorf("pfabric tick %v, resend %d, timeout %d ticks; want %v, %d, %d", h.Tick, h.ResendTicks, h.TimeoutTicks, tc.tick, tc.resend, tc.timeout)
			}
		})
	}
}

// TestLongMessagesInTheTwin: the Homa paper's simulations ran W5 whole (up
// to 29.4 MB). A simulated run lets an engine transport carry the
// workload's longest message when the file leaves max_message_bytes out,
// and lists it (with the value per experiment when a sweep changes the
// workload); an explicit limit is kept, and the emulation refuses such
// messages, naming the field and the fix.
func TestLongMessagesInTheTwin(t *testing.T) {
	long := `name: c
topology: {kind: star, hosts: 4}
link: {rate: 10Gbit}
transports:
  - name: homa
  - name: pias
phases:
  - name: p
    clients: [h2-h3]
    servers: [h1]
    sizes: w5,max=30MB
    one_way: true
    load: 0.1
duration: 50ms
`
	key := "transports[0].homa.max_message_bytes"
	for _, tc := range []struct {
		name     string
		text     string
		simulate bool
		want     uint32 // homa's limit in every experiment; 0: the plan fails
		listed   string // the value listed for key ("" not listed)
		errWant  string
	}{
		{"simulated takes the longest message", long, true, 29_400_000, "29400000", ""},
		{"simulated keeps an explicit limit", strings.Replace(long, "  - name: homa\n", "  - name: homa\n    homa: {max_message_bytes: 2000000}\n", 1), true,
			0, "", "carries at most 2000000"},
		{"emulated refuses", long, false, 0, "", "homa (transports[0]) carries at most 1000000"},
		{"truncated workload needs no change", strings.Replace(long, "w5,max=30MB", "w5,max=1000000", 1), true, 0, "", ""},
		{"a bare built-in runs whole", strings.Replace(long, "w5,max=30MB", "w5", 1), true, 29_400_000, "29400000", ""},
		{"a swept workload is listed per experiment", strings.Replace(long, "    sizes: w5,max=30MB\n", "    sizes: w4\n", 1) +
			"sweep:\n  - param: phases.p.sizes\n    values: [\"w4,max=30MB\", \"w5,max=30MB\"]\n", true, 0, "per experiment", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Parse("c.yaml", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := src.Plan(Options{Simulate: tc.simulate})
			if tc.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errWant) || !strings.Contains(err.Error(), "phases[0].sizes") {
					t.Fatalf("plan error %v, want one naming phases[0].sizes and %q", err, tc.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			listed := ""
			for _, d := range plan.ClockDefaults {
				if d.Key == key {
					listed = d.Value
				}
			}
			if listed != tc.listed {
				t.Errorf("%s listed as %q, want %q", key, listed, tc.listed)
			}
			seen := map[uint32]bool{}
			for _, e := range plan.Experiments {
				got := e.Scenario.Transports[0].Homa.MaxMessageBytes
				seen[got] = true
				if tc.want != 0 && got != tc.want {
					t.Errorf("%s: homa carries at most %d, want %d", e.Name, got, tc.want)
				}
			}
			if tc.listed == "per experiment" && (!seen[10_000_000] || !seen[29_400_000]) {
				t.Errorf("homa's limits per experiment %v, want W4's 10000000 and W5's 29400000", seen)
			}
		})
	}
}

// TestSimulatedDuration: a simulated run whose file gives no duration
// measures 10 ms when its phases are open-loop; a duration given, an
// emulated run and a closed loop keep theirs.
func TestSimulatedDuration(t *testing.T) {
	paper := `name: d
topology: {kind: leaf-spine, leaves: 9, spines: 4, hosts_per_leaf: 16, uplink_rate: 40Gbit}
link: {rate: 10Gbit}
transports: [{name: homa}]
phases:
  - {name: p, clients: [all], servers: [all], sizes: "SIZES", load: 0.8, load_of: wire, one_way: true}
`
	open := strings.Replace(strings.Replace(clockBase, "duration: 1ms\n", "", 1), "    arrivals: closed\n    max_outstanding: 1\n", "    load: 0.5\n", 1)
	for _, tc := range []struct {
		name     string
		text     string
		simulate bool
		want     time.Duration
		listed   bool
	}{
		// W4 offers 20,000 messages in well under 10 ms; W5, 58 ms.
		{"W4", strings.Replace(paper, "SIZES", "w4,max=1000000", 1), true, 10 * time.Millisecond, true},
		{"W5 cut at 1 MB", strings.Replace(paper, "SIZES", "w5,max=1000000", 1), true, 58 * time.Millisecond, true},
		// Whole (as a bare w5 runs in the twin), W5 would take 10 million
		// DATA packets before 20,000 messages.
		{"W5 whole", strings.Replace(paper, "SIZES", "w5,max=30MB", 1), true, 107 * time.Millisecond, true},
		{"W5 bare", strings.Replace(paper, "SIZES", "w5", 1), true, 107 * time.Millisecond, true},
		// W3 whole offers 20,000 messages within 10 ms, but its longest
		// message (15 MB) takes 12.1 ms on the wire: twice that, rounded up.
		{"W3 bare", strings.Replace(paper, "SIZES", "w3", 1), true, 25 * time.Millisecond, true},
		{"given", strings.Replace(paper, "SIZES", "w5,max=1000000", 1) + "duration: 3ms\n", true, 3 * time.Millisecond, false},
		// 2 x 62,500 a second (half of 1 Gbit/s in 1 KB messages).
		{"two clients of 1 KB at 1 Gbit/s", open, true, 160 * time.Millisecond, true},
		{"at most a second", strings.Replace(open, "load: 0.5", "rate_rps: 100", 1), true, time.Second, true},
		{"emulated", open + "switch: {ecn_threshold_pkts: 20}\n", false, 10 * time.Second, false},
		{"closed loop", strings.Replace(clockBase, "duration: 1ms\n", "", 1), true, 10 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlanWith(t, tc.text, Options{Simulate: tc.simulate})
			listed := false
			for _, d := range plan.ClockDefaults {
				listed = listed || d.Key == "duration"
			}
			if got := plan.Experiments[0].Scenario.Duration.D(); got != tc.want || listed != tc.listed {
				t.Errorf("duration %s (listed %v), want %s (listed %v)", got, listed, tc.want, tc.listed)
			}
		})
	}
}

// TestBuiltinsWholePerClock: a bare w2-w5 is the Homa paper's workload
// whole in a simulated run, which lists the limit it took; an emulated run
// keeps cp_node's 1 MB cut and lists nothing.
func TestBuiltinsWholePerClock(t *testing.T) {
	text := `name: c
topology: {kind: star, hosts: 4}
link: {rate: 1Gbit}
transports: [{name: homa}]
phases:
  - {name: p, clients: [h2-h3], servers: [h1], sizes: w3, response_bytes: 100, load: 0.1}
duration: 1s
`
	for _, tc := range []struct {
		name     string
		simulate bool
		spec     string
		listed   bool
	}{
		{"simulated", true, "w3,max=15158197", true},
		{"emulated", false, "w3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlanWith(t, text, Options{Simulate: tc.simulate})
			listed := false
			for _, d := range plan.ClockDefaults {
				listed = listed || (d.Key == "phases[0].sizes" && d.Value == tc.spec)
			}
			for _, e := range plan.Experiments {
				if got := e.Scenario.Phases[0].Sizes; got != tc.spec {
					t.Errorf("%s: sizes %q, want %q", e.Name, got, tc.spec)
				}
			}
			if listed != tc.listed {
				t.Errorf("listed %v, want %v (%v)", listed, tc.listed, plan.ClockDefaults)
			}
		})
	}
}

// TestPaperUnschedLevels: cutoffs fixed from a built-in workload split its
// unscheduled bytes over as many of the 8 levels as the Homa paper's runs
// did for it, and say so; another spec, or other than 8 levels, keeps the
// engine's rule.
func TestPaperUnschedLevels(t *testing.T) {
	base := `name: c
topology: {kind: star, hosts: 4}
link: {rate: 10Gbit}
transports: [{name: homa}]
phases:
  - {name: p, clients: [h2-h3], servers: [h1], sizes: "SIZES", load: 0.3, one_way: true}
duration: 40ms
`
	for _, tc := range []struct {
		name, sizes, homa string
		want              int
	}{
		{"W3 cut", "w3,max=1000000", "", 4},
		{"W2 whole", "w2", "", 5},
		{"W1", "W1", "", 7},
		{"W5", "w5,max=30MB", "", 1},
		{"a file of its own", "fixed:3000", "", 0},
		{"four levels", "w3,max=1000000", "    homa: {priorities: 4}\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(base, "SIZES", tc.sizes, 1)
			if tc.homa != "" {
				text = strings.Replace(text, "transports: [{name: homa}]\n", "transports:\n  - name: homa\n"+tc.homa, 1)
			}
			plan := mustPlanWith(t, text, Options{Simulate: true})
			tr := plan.Experiments[0].Scenario.Transports[0]
			if tr.CutoffsFrom == "" || tr.CutoffLevels != tc.want {
				t.Fatalf("cutoffs from %q over %d levels, want %d", tr.CutoffsFrom, tr.CutoffLevels, tc.want)
			}
			listed := ""
			for _, d := range plan.ClockDefaults {
				if d.Key == "transports[0].homa.unsched_cutoffs" {
					listed = d.Value
				}
			}
			if said := strings.Contains(listed, fmt.Sprintf("over %d unscheduled levels", tc.want)); said != (tc.want > 0) {
				t.Errorf("listed %q", listed)
			}
		})
	}
}
