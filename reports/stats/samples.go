package stats

import (
	"fmt"
	"math"
)

// minTailSamples is the fewest samples a P99 needs to be more than one of
// the largest few: with n samples the nearest-rank P99 is the
// (n - ceil(0.99 n) + 1)-th largest, the maximum below 100.
const minTailSamples = 100

// sampleWarnings says which of the experiment's reported P99s rest on too
// few samples, with how long a measurement (or how much more load) would
// give enough at the rate this one collected them over dur seconds.
func (e *Experiment) sampleWarnings(dur float64) []string {
	var out []string
	warn := func(what string, n int64) {
		if n <= 0 || n >= minTailSamples {
			return
		}
		s := fmt.Sprintf("the %s P99 rests on %d samples: below %d it is one of the largest few (here the %s), not a tail estimate", what, n, minTailSamples, largest(n))
		if dur > 0 {
			need := math.Ceil(float64(minTailSamples) / float64(n) * dur)
			s += fmt.Sprintf("; at this rate (%d in %.0f s) a measurement of about %.0f s, or about %.0fx as many RPCs a second, would give %d", n, dur, need, math.Ceil(float64(minTailSamples)/float64(n)), minTailSamples)
		}
		out = append(out, s)
	}
	switch {
	case e.Short.Count > 0:
		warn(e.shortLabel(), e.Short.Count)
	case e.ShortestHalf != nil:
		warn("shortest half's slowdown", e.ShortestHalf.Count)
	}
	if e.RPCs.Completed != e.Short.Count {
		warn("all-RPC", e.RPCs.Completed)
	}
	return out
}

// largest names the rank from the top of the nearest-rank P99 of n samples.
func largest(n int64) string {
	k := n - int64(math.Ceil(0.99*float64(n))) + 1
	if k == 1 {
		return "largest"
	}
	return fmt.Sprintf("%d-largest", k)
}

// shortLabel names the experiment's headline RPCs, as Summary.ShortLabel
// does for a run.
func (e *Experiment) shortLabel() string {
	if e.Short.Phase != "" {
		return e.Short.Phase
	}
	return "short-message"
}

// HalfFallback is the headline of an experiment in which no RPC was short
// both ways (W5's smallest messages are larger): the Homa papers' own
// measure, the P99 slowdown of the shortest half of the messages, in one
// sentence; "" when the experiment has short RPCs or no slowdown.
func HalfFallback(e *Experiment) string {
	h := e.ShortestHalf
	if e.Short.Count > 0 || e.Short.Phase != "" || e.RPCs.Completed == 0 || h == nil || h.S99 == nil {
		return ""
	}
	return fmt.Sprintf("no RPC was short both ways (request and response at most %d B), so the headline is the Homa papers' measure instead: the P99 slowdown of the shortest half of the messages (requests up to %d B, %d RPCs) was %.3g",
		e.Short.MaxLength, h.MaxLength, h.Count, *h.S99)
}
