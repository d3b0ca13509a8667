package reports

import (
	"slices"
	"strings"
	"testing"
)

// TestBMv2StatsMarkedUnavailable: on BMv2 the statistics tor.p4 cannot
// give there (queue peaks, delays, CE marks) read "unavailable", not 0,
// and every experiment says where BMv2 departs from the embedded target;
// an embedded run shows its numbers without the note.
func TestBMv2StatsMarkedUnavailable(t *testing.T) {
	for _, target := range []string{"bmv2", "embedded"} {
		t.Run(target, func(t *testing.T) {
			sum, html := synthRun{seed: 3, lengths: []int64{200, 5000}, target: target,
				exps: []synthExp{{name: "incast-homa", transport: "homa", n: 300, meanNs: 1000}}}.build(t)
			e := sum.Experiments[0]
			bmv2 := target == "bmv2"
			noted := slices.ContainsFunc(e.Fidelity, func(s string) bool { return strings.Contains(s, "switch target bmv2") })
			if noted != bmv2 || e.Switch.Target != target || (len(e.Switch.Unavailable) > 0) != bmv2 {
				t.Errorf("target %s: note %v, switch target %q, unavailable %q", target, noted, e.Switch.Target, e.Switch.Unavailable)
			}
			if bmv2 && (!e.Switch.Lacks("peak_pkts") || !e.Switch.Lacks("ce_marked_pkts") || e.Switch.Lacks("drop_pkts")) {
				t.Errorf("unavailable %q", e.Switch.Unavailable)
			}
			if n := strings.Count(html, "unavailable on bmv2"); (n >= 4) != bmv2 {
				t.Errorf("report.html says \"unavailable on bmv2\" %d times", n)
			}
		})
	}
}
