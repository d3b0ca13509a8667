package testbed

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/testbed/scenario"
)

// lag is a client whose transport could not keep the open-loop schedule:
// a P99 send lag above a millisecond and above a tenth of the mean
// interarrival time means latencies include time the RPC waited to be sent.
type lag struct {
	host           string
	p99, max, gapU float64 // µs
}

// lagOf reports whether a client fell behind, and by how much.
func lagOf(host string, c *agentpb.Counters, w *agentpb.Workload) (lag, bool) {
	if w == nil || w.GetArrivals() != scenario.ArrivalsPoisson || w.GetRateRps() <= 0 {
		return lag{}, false
	}
	l := lag{host: host, p99: c.GetLagP99Us(), max: c.GetLagMaxUs(), gapU: 1e6 / w.GetRateRps()}
	return l, l.p99 > 1000 && l.p99 > l.gapU/10
}

// lagWarning says which clients fell behind, in one line however many
// (one line per host drowned the other warnings of a busy run).
func lagWarning(ls []lag, clients int) string {
	if len(ls) == 0 {
		return ""
	}
	// h2 before h10: shorter names first, then in order.
	slices.SortFunc(ls, func(a, b lag) int {
		if len(a.host) != len(b.host) {
			return len(a.host) - len(b.host)
		}
		return strings.Compare(a.host, b.host)
	})
	if len(ls) == 1 {
		l := ls[0]
		return fmt.Sprintf("agent %s send lag P99 %.0f µs (max %.0f µs) against a mean gap of %.0f µs: the host fell behind its schedule",
			l.host, l.p99, l.max, l.gapU)
	}
	lo, hi, worst, gLo, gHi := ls[0].p99, ls[0].p99, ls[0].max, ls[0].gapU, ls[0].gapU
	var hosts []string
	for _, l := range ls {
		lo, hi, worst = min(lo, l.p99), max(hi, l.p99), max(worst, l.max)
		gLo, gHi = min(gLo, l.gapU), max(gHi, l.gapU)
		hosts = append(hosts, l.host)
	}
	gap := fmt.Sprintf("%.0f µs", gLo)
	if gHi > gLo*1.01 {
		gap = fmt.Sprintf("%.0f–%.0f µs", gLo, gHi)
	}
	return fmt.Sprintf("%d of %d clients fell behind their schedule (%s): send lag P99 %.0f–%.0f µs (max %.0f µs) against a mean gap of %s",
		len(ls), clients, strings.Join(hosts, " "), lo, hi, worst, gap)
}

// loadWarning flags a client that issued clearly fewer RPCs than its
// open-loop rate asks for over warm-up and measurement: the RPCs it was too
// late to send before it was stopped never ran, so the load the network
// carried was below the configured one.
func loadWarning(host string, c *agentpb.Counters, w *agentpb.Workload) string {
	if w == nil || w.GetArrivals() != scenario.ArrivalsPoisson || w.GetRateRps() <= 0 ||
		w.GetBurstIntervalUs() > 0 || w.GetMaxRpcs() > 0 {
		return ""
	}
	want := w.GetRateRps() * float64(w.GetDurationMs()) / 1e3
	got := float64(c.GetIssued())
	// A Poisson count varies by about its square root: flag only a
	// shortfall well beyond that, and beyond 5%.
	if want < 20 || got >= want-max(4*math.Sqrt(want), 0.05*want) {
		return ""
	}
	return fmt.Sprintf("agent %s issued %d RPCs where its configured rate (%.0f/s over %.1f s) asks for about %.0f (%.0f%%): it could not keep to the configured load",
		host, c.GetIssued(), w.GetRateRps(), float64(w.GetDurationMs())/1e3, want, 100*got/want)
}

// cpuWarning flags an experiment during which the machine was nearly
// always busy: agents and switches then competed for the vCPUs, and
// latencies include waiting to be scheduled.
func cpuWarning(busy float64) string {
	if busy <= 0.95 {
		return ""
	}
	return fmt.Sprintf("CPU saturated: the machine was %.0f%% busy during the experiment; agents and switches competed for the vCPUs", busy*100)
}

// otherLoadWarning says when processes outside the run kept at least a
// quarter of a CPU busy (other CPUs busy on average, with the load
// average at the start): the run then measured the machine's other work
// too.
func otherLoadWarning(other, loadAvg1 float64) string {
	if other < 0.25 {
		return ""
	}
	return fmt.Sprintf("other processes kept %.2f vCPUs busy during the experiment (1-minute load average %.2f at its start): the run competed with them for the CPUs", other, loadAvg1)
}
