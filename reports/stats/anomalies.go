package stats

import (
	"fmt"
	"slices"

	"github.com/homatb/homatb/anatomy"
)

// Anomalies explains numbers of an experiment that would surprise a reader
// who knows the transports only from their papers.
func Anomalies(e *Experiment) []string {
	var out []string
	if e.Homa != nil && e.Switch.Present {
		if r := e.Homa.Counters["homa_resends_sent"]; r > 0 && e.Switch.Drops == 0 && e.Switch.FaultDrops == 0 {
			out = append(out, fmt.Sprintf("%s: %d resend requests with no switch drop. Homa asks for a resend when data stops arriving for a while, "+
				"so these are spurious: the packets were waiting in a switch queue (or behind the host's own pacer), not lost.", e.Name, r))
		}
	}
	// A collective is as slow as its slowest step: one lost packet holds
	// its message until the transport's loss recovery, and every step
	// after it waits.
	if lost := e.Switch.Drops + e.Switch.FaultDrops; lost > 0 && e.Transport == "homa" && e.Homa != nil && e.Homa.Retries > 0 {
		for _, c := range e.Collectives {
			if c.CCT.P50 == nil || c.IdealCCT == nil || *c.IdealCCT <= 0 || *c.CCT.P50 < 3**c.IdealCCT {
				continue
			}
			out = append(out, fmt.Sprintf("%s: collective %s took %.1fx its ideal while the switches dropped %d packets (%d retries in the records): "+
				"a step message that loses a packet waits for Homa's loss recovery, whose resend timer counts in ticks of a millisecond by default, "+
				"and every step that needs its input waits with it.", e.Name, c.Phase, *c.CCT.P50 / *c.IdealCCT, lost, e.Homa.Retries))
		}
		// The same for a connection matrix's flows, and the flows their
		// completion triggers.
		for _, m := range e.Flows {
			if m.Slowdown.Max == nil || *m.Slowdown.Max < 3 {
				continue
			}
			out = append(out, fmt.Sprintf("%s: the slowest flow of %s took %.1fx its ideal while the switches dropped %d packets (%d retries in the records): "+
				"beyond the links it shares, a flow that loses a packet waits for Homa's loss recovery, whose resend timer counts in ticks of a millisecond by default, "+
				"and the flows its completion triggers wait with it.", e.Name, m.Phase, *m.Slowdown.Max, lost, e.Homa.Retries))
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

// anatomyWarning says when host software, not the switch, makes up most
// of an experiment's short-message tail; empty otherwise.
func anatomyWarning(a *anatomy.Summary) string {
	if a == nil || a.TailRPCs == 0 || a.Tail.RTT <= 0 {
		return ""
	}
	// Time a TCP message waited behind its connection's bytes in a
	// switch queue is the switch's doing, though spent on the host.
	hosts := a.Tail.Host - a.Tail.HostHOL + a.Tail.SendLag
	if hosts <= a.Tail.RTT/2 {
		return ""
	}
	return fmt.Sprintf("latency anatomy: time on the hosts (their software, and the transport's own waits there: grants, congestion window, retransmissions), not switch queueing, makes up most of the short-message tail: of a mean %s at or above the P99, host %s and send lag %s against switch queueing %s (including waits behind the same connection's queued bytes; docs/reports.md, \"Latency anatomy\")",
		MicrosLabel(a.Tail.RTT), MicrosLabel(a.Tail.Host-a.Tail.HostHOL), MicrosLabel(a.Tail.SendLag), MicrosLabel(a.Tail.Queue+a.Tail.HostHOL))
}

// MicrosLabel writes a mean RTT in µs or ms.
func MicrosLabel(us float64) string {
	if us >= 10_000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}
