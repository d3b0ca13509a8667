package reports

import (
	"fmt"
	"github.com/homatb/homatb/rundir"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The report's first screen says what ran and what came of it: one
// sentence per comparison with the baseline, and the run's setup.

// fmtLatency writes a latency given in µs in the unit its magnitude reads
// best in: µs below 1 ms, ms below 1 s, s above.
func fmtLatency(us float64) string {
	switch a := math.Abs(us); {
	case a < 1e3:
		return fmtNum(us) + " µs"
	case a < 1e6:
		return fmtNum(us/1e3) + " ms"
	}
	return fmtNum(us/1e6) + " s"
}

// FormatLatency writes a latency given in µs in the unit its magnitude
// reads best in ("733 µs", "1.81 ms", "1.41 s"), as the report does.
func FormatLatency(us float64) string { return fmtLatency(us) }

// fmtLatencyOpt is fmtLatency with "—" for no value.
func fmtLatencyOpt(us *float64) string {
	if us == nil {
		return "—"
	}
	return fmtLatency(*us)
}

// fmtLatencyCI writes a confidence interval of a latency in µs with
// units.
func fmtLatencyCI(iv Interval) string { return ciWith(iv, fmtLatency) }

// fmtBitRate writes a rate in bits per second as Mbit/s or Gbit/s, to
// three significant digits.
func fmtBitRate(bps float64) string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	switch {
	case bps >= 1e9:
		return g(bps/1e9) + " Gbit/s"
	case bps >= 1e6:
		return g(bps/1e6) + " Mbit/s"
	}
	return g(bps/1e3) + " kbit/s"
}

// headlineSentences says, for each configuration, how its short-message
// P99 compared with the baseline's: over the repetitions (median and
// range) when the run repeated them, else from the one run.
func headlineSentences(s *Summary, cs []comparison) []string {
	var out []string
	for _, r := range s.Ratios {
		if r.Repetitions < 2 || r.P99 == nil {
			continue
		}
		base, other := r.Rows(s.Headline)
		if base == nil || other == nil || base.ShortP99us == nil || other.ShortP99us == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s vs %s, median of %d runs (ratio %sx to %sx)%s.",
			comparedBy(s.ShortLabel(), r.Baseline, r.Config, r.P99.Median), fmtLatency(base.ShortP99us.Median), fmtLatency(other.ShortP99us.Median),
			r.Repetitions, fmtNum(r.P99.Min), fmtNum(r.P99.Max), atParams(paramsKey(Experiment{Params: r.Params}, ""))))
	}
	if len(out) > 0 {
		return out
	}
	for _, c := range cs {
		if c.RatioP99 == nil || c.Base.Short.P99us == nil || c.Other.Short.P99us == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s vs %s, one run%s.", comparedBy(s.ShortLabel(), configID(c.Base), configID(c.Other), *c.RatioP99),
			fmtLatency(*c.Base.Short.P99us), fmtLatency(*c.Other.Short.P99us), atParams(c.Params)))
	}
	return out
}

// comparedBy is the sentence's verb: the baseline's P99 was r times lower
// than the other's (or higher, for r below 1).
func comparedBy(label, baseline, other string, r float64) string {
	if r >= 1 {
		return fmt.Sprintf("%s's %s P99 was %sx lower than %s's", baseline, label, fmtNum(r), other)
	}
	return fmt.Sprintf("%s's %s P99 was %sx higher than %s's", baseline, label, fmtNum(1/r), other)
}

func atParams(p string) string {
	if p == "" {
		return ""
	}
	return " (" + p + ")"
}

// setupOf lists what ran, for the setup box: topology, link and switch,
// transports with their settings, workload, times, repetitions and the
// machine; from the manifest's resolved scenario, empty without one.
func setupOf(m *manifest) [][2]string {
	if m == nil {
		return nil
	}
	sc, _ := m.Scenario.(map[string]any)
	if sc == nil {
		return nil
	}
	var kv [][2]string
	add := func(k, v string) {
		if v != "" {
			kv = append(kv, [2]string{k, v})
		}
	}
	if sim := m.Simulation; m.Mode == rundir.ModeSimulated && sim != nil {
		add("mode", fmt.Sprintf("simulated in virtual time (homatb run --simulate): %.0f s simulated in %.1f s, %.2g events/s. %s",
			sim.SimulatedSeconds, sim.WallSeconds, sim.EventsPerSecond, strings.Join(sim.Model, "; ")))
	} else if len(m.Machines) > 0 {
		add("mode", "real machines")
	} else {
		add("mode", "emulated: real packets through this machine's network namespaces and switch")
	}
	topo := mapOf(sc["topology"])
	switch kind := str(topo["kind"]); kind {
	case "leaf-spine":
		add("topology", fmt.Sprintf("leaf-spine: %s leaves of %s hosts, %s spines", str(topo["leaves"]), str(topo["hosts_per_leaf"]), str(topo["spines"])))
	case "":
	default:
		add("topology", fmt.Sprintf("%s, %s hosts", kind, str(topo["hosts"])))
	}
	link := mapOf(sc["link"])
	if m.RateBps() > 0 {
		add("links", fmt.Sprintf("%s, MTU %s, host shaper %s", fmtBitRate(float64(m.RateBps())), str(link["mtu"]), str(link["shaper"])))
	}
	sw := mapOf(sc["switch"])
	if t := str(sw["target"]); t != "" {
		q := fmt.Sprintf("%s switch, 8 strict-priority queues of %s packets per port", t, str(sw["queue_depth_pkts"]))
		if e := str(sw["ecn_threshold_pkts"]); e != "" && e != "0" {
			q += ", ECN marks above " + e + " packets"
		}
		if e := mapOf(sw["ecn"]); len(e) > 0 {
			q += fmt.Sprintf(", ECN marks by RED (Kmin %s, Kmax %s packets, Pmax %s)", str(e["kmin_pkts"]), str(e["kmax_pkts"]), str(e["pmax"]))
		}
		if p := mapOf(sw["pfc"]); len(p) > 0 {
			var prios []string
			for _, v := range listOf(p["priorities"]) {
				prios = append(prios, str(v))
			}
			q += fmt.Sprintf(", PFC on priorities %s (XOFF %s, XON %s, headroom %s packets)", strings.Join(prios, ", "), str(p["xoff_pkts"]), str(p["xon_pkts"]), str(p["headroom_pkts"]))
		}
		add("switch", q)
	}
	for _, t := range listOf(sc["transports"]) {
		tm := mapOf(t)
		name := str(tm["name"])
		if l := str(tm["label"]); l != "" {
			name += " (" + l + ")"
		}
		kv = append(kv, [2]string{"transport " + name, settingsOf(tm)})
	}
	for _, p := range listOf(sc["phases"]) {
		kv = append(kv, [2]string{"workload " + str(mapOf(p)["name"]), phaseOf(mapOf(p))})
	}
	add("time", fmt.Sprintf("warm-up %s, measured %s, drain %s per experiment", orNone(str(sc["warmup"])), str(sc["duration"]), str(sc["drain"])))
	add("repetitions", str(sc["repetitions"]))
	mach := fmt.Sprintf("%d CPUs", m.Machine.CPUs)
	if m.Machine.MemBytes > 0 {
		mach += fmt.Sprintf(", %.0f GiB", float64(m.Machine.MemBytes)/(1<<30))
	}
	if m.Scheduling != "" {
		mach += ", switches and agents " + m.Scheduling
	}
	add("machine", mach)
	return kv
}

// settingsOf lists a transport's settings that differ from the defaults
// (zero values in the resolved scenario), "defaults" for none.
func settingsOf(t map[string]any) string {
	var parts []string
	for _, block := range []string{"homa", "tcp", "pfabric", "ndp", "pias"} {
		b := mapOf(t[block])
		for _, k := range slices.Sorted(maps.Keys(b)) {
			if v := str(b[k]); v != "" && v != "0" && v != "false" && v != "0s" && v != "[]" && v != "map[]" {
				parts = append(parts, k+" "+v)
			}
		}
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, ", ")
}

// phaseOf describes one phase: who sends to whom, sizes and arrivals.
func phaseOf(p map[string]any) string {
	s := fmt.Sprintf("%s → %s, sizes %s, ", hosts(p["clients"]), hosts(p["servers"]), str(p["sizes"]))
	switch {
	case str(p["arrivals"]) == "closed":
		s += str(p["max_outstanding"]) + " outstanding per client (closed loop)"
	case p["incast"] != nil && str(mapOf(p["incast"])["interval"]) != "":
		s += "bursts every " + str(mapOf(p["incast"])["interval"])
	case str(p["load"]) != "" && str(p["load"]) != "0":
		s += "Poisson at load " + str(p["load"]) + " of the link per client"
	default:
		s += "Poisson at " + str(p["rate_rps"]) + " RPC/s per client"
	}
	if r := str(p["response_bytes"]); r != "" && r != "0" {
		s += ", " + r + " B responses"
	} else {
		s += ", echoed responses"
	}
	return s
}

func hosts(v any) string {
	var hs []string
	for _, h := range listOf(v) {
		hs = append(hs, str(h))
	}
	return strings.Join(hs, ", ")
}

func orNone(s string) string {
	if s == "" || s == "0s" {
		return "none"
	}
	return s
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}

// str formats a scalar of generic JSON; "" for nil.
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
