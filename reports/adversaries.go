package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/homatb/homatb/reports/stats"
	"github.com/homatb/homatb/rundir"
)

// adversaryRow is one experiment of a run with adversaries, as the
// report's "Adversaries" section lists it: what the sweep set, what the
// adversaries sent (kept apart from the books), and how the victims
// fared.
type adversaryRow struct {
	Experiment string
	// Params are the experiment's swept parameters, "key=value" each.
	Params string
	// Attacks says what each adversary sent: kind, hosts, packets, rate.
	Attacks string
	// ShortP99us is the victims' short-message P99; GoodputGbps their
	// goodput (in an incast, the long messages' almost entirely).
	ShortP99us  *float64
	GoodputGbps float64
	Failed      int64
	Issued      int64
	// Drops are the victims' engine drops by reason (homa_drop_*), the
	// nonzero ones.
	Drops string
	// Switch is what the switch's defences did: packets re-marked,
	// metered and dropped as spoofed ("" when the target cannot say).
	Switch string
}

// adversaryRows lists every experiment when any experiment of the run had
// an adversary (a sweep's attack-free baseline, kind none, has none but is
// listed for comparison), in summary order; nil otherwise.
func adversaryRows(s *stats.Summary) []adversaryRow {
	if s.Manifest == nil {
		return nil
	}
	attacks := map[string][]rundir.Adversary{}
	for _, e := range s.Manifest.Experiments {
		if len(e.Adversaries) > 0 {
			attacks[e.Name] = e.Adversaries
		}
	}
	if len(attacks) == 0 {
		return nil
	}
	var rows []adversaryRow
	for i := range s.Experiments {
		e := &s.Experiments[i]
		row := adversaryRow{Experiment: e.Name, ShortP99us: e.Short.P99us, GoodputGbps: e.GoodputGbps,
			Failed: e.RPCs.Failed, Issued: e.RPCs.Issued, Params: paramString(e.Params), Attacks: "none"}
		if as := attacks[e.Name]; len(as) > 0 {
			var parts []string
			for _, a := range as {
				mbps := 0.0
				if a.Seconds > 0 {
					mbps = float64(a.Bytes) * 8 / a.Seconds / 1e6
				}
				parts = append(parts, fmt.Sprintf("%s %s→%s: %d packets, %.1f Mbit/s", a.Kind, a.Host, a.TargetHost, a.Packets, mbps))
			}
			row.Attacks = strings.Join(parts, "; ")
		}
		if e.Homa != nil {
			row.Drops = dropString(e.Homa.Counters)
		}
		if sw := e.Switch; sw.Present && !sw.Lacks("spoof_drops") {
			row.Switch = fmt.Sprintf("re-marked %d, metered %d, spoofed %d", sw.RemarkedPkts, sw.MeteredPkts, sw.SpoofDrops)
		}
		rows = append(rows, row)
	}
	return rows
}

// paramString is params as sorted "key=value" pairs.
func paramString(params map[string]any) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, params[k])
	}
	return strings.Join(parts, " ")
}

// dropString is the nonzero homa_drop_<reason> counters, "reason n" each.
func dropString(c map[string]uint64) string {
	var parts []string
	for k, v := range c {
		if r, ok := strings.CutPrefix(k, "homa_drop_"); ok && v > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, v))
		}
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
