package reports

import (
	"fmt"
	"slices"
)

// anomalies explains numbers of an experiment that would surprise a reader
// who knows the transports only from their papers.
func anomalies(e *Experiment) []string {
	var out []string
	if e.Homa != nil && e.Switch.Present {
		if r := e.Homa.Counters["homa_resends_sent"]; r > 0 && e.Switch.Drops == 0 && e.Switch.FaultDrops == 0 {
			out = append(out, fmt.Sprintf("%s: %d resend requests with no switch drop. Homa asks for a resend when data stops arriving for a while, "+
				"so these are spurious: the packets were waiting in a switch queue (or behind the host's own pacer), not lost.", e.Name, r))
		}
	}
	// Strict priorities starve the low queues while higher ones are busy:
	// the lowest queue's worst delay dwarfs the others'.
	d := e.Switch.MaxDelayUs
	if len(d) > 1 {
		worst := slices.Index(d, slices.Max(d))
		rest := 0.0
		for q, v := range d {
			if q != worst {
				rest = max(rest, v)
			}
		}
		higherBusy := slices.ContainsFunc(d[worst+1:], func(v float64) bool { return v > 0 })
		if d[worst] >= 100_000 && d[worst] > 10*rest && higherBusy {
			out = append(out, fmt.Sprintf("%s: queue %d held a packet for up to %.0f ms, over ten times any other queue's worst. "+
				"The switch serves queues in strict priority, so a low queue starves while higher ones have packets.", e.Name, worst, d[worst]/1e3))
		}
	}
	return out
}
