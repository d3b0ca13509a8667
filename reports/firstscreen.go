package reports

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
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
func fmtLatencyCI(iv stats.Interval) string { return ciWith(iv, fmtLatency) }

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
func headlineSentences(s *stats.Summary, cs []stats.Contrast) []string {
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
			r.Repetitions, fmtNum(r.P99.Min), fmtNum(r.P99.Max), atParams(stats.ParamsKey(stats.Experiment{Params: r.Params}, ""))))
	}
	if len(out) > 0 {
		return out
	}
	for _, c := range cs {
		if c.RatioP99 == nil || c.Base.Short.P99us == nil || c.Other.Short.P99us == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s vs %s, one run%s.", comparedBy(s.ShortLabel(), stats.ConfigID(c.Base), stats.ConfigID(c.Other), *c.RatioP99),
			fmtLatency(*c.Base.Short.P99us), fmtLatency(*c.Other.Short.P99us), atParams(c.Params)))
	}
	if len(out) > 0 {
		return out
	}
	return halfSentences(s, cs)
}

// halfSentences are the headline when no RPC was short both ways: the
// shortest half's P99 slowdown of each configuration against the
// baseline's, or of each experiment without a comparison, and why.
func halfSentences(s *stats.Summary, cs []stats.Contrast) []string {
	var out []string
	var first *stats.Experiment
	for _, c := range cs {
		if stats.HalfFallback(c.Base) == "" || stats.HalfFallback(c.Other) == "" {
			continue
		}
		b, o := *c.Base.ShortestHalf.S99, *c.Other.ShortestHalf.S99
		if b <= 0 {
			continue
		}
		if first == nil {
			first = c.Base
		}
		out = append(out, fmt.Sprintf("%s: %s vs %s, one run%s.", comparedBy("shortest-half slowdown", stats.ConfigID(c.Base), stats.ConfigID(c.Other), o/b),
			fmtNum(b), fmtNum(o), atParams(c.Params)))
	}
	if first != nil {
		return append(out, fmt.Sprintf("No RPC was short both ways (request and response at most %d B), so these compare the Homa papers' measure instead: the P99 slowdown of the shortest half of the messages (requests up to %d B).", first.Short.MaxLength, first.ShortestHalf.MaxLength))
	}
	for i := range s.Experiments {
		if f := stats.HalfFallback(&s.Experiments[i]); f != "" {
			out = append(out, fmt.Sprintf("%s: %s.", s.Experiments[i].Name, f))
		}
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
func setupOf(m *stats.Manifest) [][2]string {
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
		add("mode", fmt.Sprintf("simulated in virtual time (homatb run --simulate): %s simulated in %.1f s, %.2g events/s. %s",
			simulatedTime(sim.SimulatedSeconds), sim.WallSeconds, sim.EventsPerSecond, strings.Join(sim.Model, "; ")))
	} else if len(m.Machines) > 0 {
		add("mode", "real machines")
	} else {
		add("mode", "emulated: real packets through this machine's network namespaces and switch")
	}
	add("topology", topologyOf(stats.MapOf(sc["topology"]), m.Fabric))
	link := stats.MapOf(sc["link"])
	if m.RateBps() > 0 {
		l := fmt.Sprintf("%s, MTU %s", fmtBitRate(float64(m.RateBps())), stats.Scalar(link["mtu"]))
		if f := m.Fabric; f != nil && f.UplinkBps > 0 {
			l += ", " + fmtBitRate(float64(f.UplinkBps)) + " between switches"
		}
		if m.Mode != rundir.ModeSimulated { // the twin's NIC is in "mode"
			l += ", host shaper " + stats.Scalar(link["shaper"])
		}
		add("links", l)
	}
	sw := stats.MapOf(sc["switch"])
	if t := stats.Scalar(sw["target"]); t != "" {
		q := fmt.Sprintf("%s switch, 8 strict-priority queues of %s packets per port", t, stats.Scalar(sw["queue_depth_pkts"]))
		if e := stats.Scalar(sw["ecn_threshold_pkts"]); e != "" && e != "0" {
			q += ", ECN marks above " + e + " packets"
		}
		if e := stats.MapOf(sw["ecn"]); len(e) > 0 {
			q += fmt.Sprintf(", ECN marks by RED (Kmin %s, Kmax %s packets, Pmax %s)", stats.Scalar(e["kmin_pkts"]), stats.Scalar(e["kmax_pkts"]), stats.Scalar(e["pmax"]))
		}
		if p := stats.MapOf(sw["pfc"]); len(p) > 0 {
			var prios []string
			for _, v := range stats.ListOf(p["priorities"]) {
				prios = append(prios, stats.Scalar(v))
			}
			q += fmt.Sprintf(", PFC on priorities %s (XOFF %s, XON %s, headroom %s packets)", strings.Join(prios, ", "), stats.Scalar(p["xoff_pkts"]), stats.Scalar(p["xon_pkts"]), stats.Scalar(p["headroom_pkts"]))
		}
		add("switch", q)
	}
	for _, t := range stats.ListOf(sc["transports"]) {
		tm := stats.MapOf(t)
		name := stats.Scalar(tm["name"])
		if l := stats.Scalar(tm["label"]); l != "" {
			name += " (" + l + ")"
		}
		kv = append(kv, [2]string{"transport " + name, settingsOf(tm)})
	}
	for _, p := range stats.ListOf(sc["phases"]) {
		kv = append(kv, [2]string{"workload " + stats.Scalar(stats.MapOf(p)["name"]), phaseOf(stats.MapOf(p))})
	}
	add("time", fmt.Sprintf("warm-up %s, measured %s, drain %s per experiment", orNone(stats.Scalar(sc["warmup"])), stats.Scalar(sc["duration"]), stats.Scalar(sc["drain"])))
	add("repetitions", stats.Scalar(sc["repetitions"]))
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

// simulatedTime is a twin's virtual time, in the unit that fits it.
func simulatedTime(seconds float64) string {
	return time.Duration(math.Round(seconds * 1e9)).String()
}

// topologyOf describes the fabric: its kind, its shape and its hosts
// (counted from the manifest's fabric, which every kind lists).
func topologyOf(topo map[string]any, f *rundir.FabricRecord) string {
	kind := stats.Scalar(topo["kind"])
	if kind == "" {
		return ""
	}
	n := stats.Scalar(topo["hosts"])
	if f != nil && len(f.Hosts) > 0 {
		n = strconv.Itoa(len(f.Hosts))
	}
	var s string
	switch kind {
	case "leaf-spine":
		s = fmt.Sprintf("leaf-spine: %s leaves of %s hosts, %s spines", stats.Scalar(topo["leaves"]), stats.Scalar(topo["hosts_per_leaf"]), stats.Scalar(topo["spines"]))
	case "fat-tree":
		s = fmt.Sprintf("fat tree of k=%s: %s hosts", stats.Scalar(topo["k"]), n)
		if e := stats.Scalar(topo["hosts_per_edge"]); e != "" && e != "0" {
			s += ", " + e + " per edge switch"
		}
	case "rail":
		s = fmt.Sprintf("rail-optimised: %s groups of %s servers with %s NICs each (%s hosts, one per NIC, on per-rail leaves), %s spines",
			orOne(stats.Scalar(topo["groups"])), stats.Scalar(topo["servers"]), stats.Scalar(topo["rails"]), n, stats.Scalar(topo["spines"]))
	default:
		return fmt.Sprintf("%s, %s hosts", kind, n)
	}
	if lb := stats.Scalar(topo["load_balancing"]); lb != "" {
		s += ", " + lb
	}
	if o := oversubscription(f); o != "" {
		s += "; " + o
	}
	return s
}

// oversubscription says how far the top-of-rack switches (and a fat
// tree's pods) take more from their hosts than their uplinks carry, from
// the manifest's fabric; "" when they do not or the manifest does not say.
func oversubscription(f *rundir.FabricRecord) string {
	if f == nil || f.EdgeUplinks == 0 || f.LinkBps == 0 {
		return ""
	}
	perSwitch := map[string]int{}
	most := 0
	for _, h := range f.Hosts {
		perSwitch[h.Switch]++
		most = max(most, perSwitch[h.Switch])
	}
	up, core := f.Uplink(), f.Core()
	var parts []string
	if r := float64(most) * float64(f.LinkBps) / (float64(f.EdgeUplinks) * float64(up)); r > 1 {
		parts = append(parts, fmt.Sprintf("top-of-rack switches %.3g:1 oversubscribed (%d hosts, %d uplinks)", r, most, f.EdgeUplinks))
	}
	if f.PodUplinks > 0 && core < up {
		parts = append(parts, fmt.Sprintf("pods %.3g:1 oversubscribed toward the cores", float64(up)/float64(core)))
	}
	return strings.Join(parts, ", ")
}

func orOne(s string) string {
	if s == "" || s == "0" {
		return "1"
	}
	return s
}

// phaseOf describes one phase: who sends to whom, sizes and arrivals, or
// the collective or connection matrix it runs.
func phaseOf(p map[string]any) string {
	if c := stats.MapOf(p["collective"]); len(c) > 0 {
		s := fmt.Sprintf("%s among %s, %s B buffer, %s iterations, compute %s", stats.Scalar(c["kind"]), hosts(p["hosts"]),
			stats.Scalar(c["bytes"]), stats.Scalar(c["iterations"]), stats.Scalar(c["compute"]))
		if j := stats.Scalar(c["jitter"]); j != "" && j != "0s" {
			s += " + up to " + j
		}
		if w := stats.Scalar(c["window"]); w != "" && w != "0" {
			s += ", window " + w
		}
		return s
	}
	if cm := stats.Scalar(p["connection_matrix"]); cm != "" {
		s := "connection matrix " + filepath.Base(cm)
		if h := hosts(p["hosts"]); h != "" {
			s += " on " + h
		}
		return s
	}
	s := fmt.Sprintf("%s → %s, sizes %s, ", hosts(p["clients"]), hosts(p["servers"]), stats.Scalar(p["sizes"]))
	switch {
	case stats.Scalar(p["arrivals"]) == "closed":
		s += stats.Scalar(p["max_outstanding"]) + " outstanding per client (closed loop)"
	case p["incast"] != nil && stats.Scalar(stats.MapOf(p["incast"])["interval"]) != "":
		s += "bursts every " + stats.Scalar(stats.MapOf(p["incast"])["interval"])
	case stats.Scalar(p["load"]) != "" && stats.Scalar(p["load"]) != "0":
		s += "Poisson at load " + stats.Scalar(p["load"]) + " of the link per client"
	default:
		s += "Poisson at " + stats.Scalar(p["rate_rps"]) + " RPC/s per client"
	}
	switch r := stats.Scalar(p["response_bytes"]); {
	case p["one_way"] == true:
		s += ", one-way messages"
	case r != "" && r != "0":
		s += ", " + r + " B responses"
	default:
		s += ", echoed responses"
	}
	if stats.Scalar(p["load_of"]) == "wire" {
		s += ", load counted on the wire"
	}
	return s
}

func hosts(v any) string {
	var hs []string
	for _, h := range stats.ListOf(v) {
		hs = append(hs, stats.Scalar(h))
	}
	return strings.Join(hs, ", ")
}

func orNone(s string) string {
	if s == "" || s == "0s" {
		return "none"
	}
	return s
}
