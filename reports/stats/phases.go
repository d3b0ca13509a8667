package stats

import (
	"slices"

	"github.com/homatb/homatb/rundir"
)

// phasesOf lays out an experiment's warm-up, measurement and drain on the
// time axis of its series (seconds since the experiment started), from the
// manifest. Without a start time or a duration there is nothing to shade.
func phasesOf(me rundir.Experiment) []Band {
	if me.Started <= 0 || me.DurationMs <= 0 {
		return nil
	}
	warm := float64(me.WarmupMs) / 1e3
	measured := warm + float64(me.DurationMs)/1e3
	out := []Band{{0, warm, "warm-up"}, {warm, measured, "measurement"}}
	if me.Ended > me.Started {
		if end := float64(me.Ended-me.Started) / 1e9; end > measured {
			out = append(out, Band{measured, end, "drain"})
		}
	}
	return out
}

// scenarioPhases are the phase names of the run's scenario in its order,
// and the phase the scenario's report.headline_phase names ("" for none).
func scenarioPhases(m *Manifest) (names []string, headline string) {
	if m == nil {
		return nil, ""
	}
	sc := MapOf(m.Scenario)
	for _, p := range ListOf(sc["phases"]) {
		names = append(names, Scalar(MapOf(p)["name"]))
	}
	return names, Scalar(MapOf(sc["report"])["headline_phase"])
}

// headlinePhase is the phase experiment me's headline is about: the
// scenario's report.headline_phase when some client of me ran it, else ""
// (the short messages by size).
func headlinePhase(m *Manifest, me rundir.Experiment) string {
	_, h := scenarioPhases(m)
	if h == "" {
		return ""
	}
	for _, p := range me.ClientPhases {
		if p == h {
			return h
		}
	}
	return ""
}

// phaseStats are the percentiles of each phase's samples, in the order
// of order (then any phase it lacks, by name); nil when no sample has a
// phase.
func phaseStats(s []sample, phaseOf func(sample) string, order []string, ideal *idealRTT, conf float64) []PhaseStats {
	rtts := map[string][]int64{}
	slows := map[string][]float64{}
	lo, hi := map[string]int64{}, map[string]int64{}
	for _, x := range s {
		p := phaseOf(x)
		if p == "" {
			continue
		}
		if _, ok := rtts[p]; !ok || x.length < lo[p] {
			lo[p] = x.length
		}
		hi[p] = max(hi[p], x.length)
		rtts[p] = append(rtts[p], x.rtt)
		if ideal != nil {
			slows[p] = append(slows[p], float64(x.rtt)/ideal.at(x.length, int64(x.resp), int(x.links)))
		}
	}
	if len(rtts) == 0 {
		return nil
	}
	var out []PhaseStats
	for _, n := range orderedKeys(order, rtts) {
		r := rtts[n]
		slices.Sort(r)
		ps := PhaseStats{Name: n, Count: int64(len(r)), MinBytes: lo[n], MaxBytes: hi[n],
			P50us: Ptr(estimate(r, 0.5, conf, 1e-3).Value), P99us: Ptr(estimate(r, 0.99, conf, 1e-3).Value),
			P999us: Ptr(estimate(r, 0.999, conf, 1e-3).Value)}
		if sl := slows[n]; sl != nil {
			slices.Sort(sl)
			ps.S50, ps.S99 = Ptr(estimate(sl, 0.5, conf, 1).Value), Ptr(estimate(sl, 0.99, conf, 1).Value)
		}
		out = append(out, ps)
	}
	return out
}

// orderedKeys are m's keys: those order names in its order, then the
// others by name.
func orderedKeys[V any](order []string, m map[string]V) []string {
	names := slices.DeleteFunc(slices.Clone(order), func(n string) bool { _, ok := m[n]; return !ok })
	var rest []string
	for n := range m {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

// Band shades an x range of a chart, such as a warm-up phase.
type Band struct {
	X0, X1 float64
	Label  string
}
