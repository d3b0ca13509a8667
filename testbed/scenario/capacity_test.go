package scenario

import (
	"math"
	"strings"
	"testing"
)

// capacityBase: eight hosts all to all, 1,000 B requests at 500 RPCs a
// second from each, 100 B replies: 8,000 DATA packets a second.
const capacityBase = `name: cap
topology: {kind: star, hosts: 8}
link: {rate: 100Mbit}
transports:
  - name: homa
  - name: tcp
phases:
  - {name: a, clients: [all], servers: [all], sizes: fixed:1000, rate_rps: 500, response_bytes: 100}
duration: 1s
`

func TestEmulationCPUs(t *testing.T) {
	plan := mustPlan(t, capacityBase)
	for _, tc := range []struct {
		exp  string
		want float64
	}{
		{"cap-homa", capFixed + 8000*capPerFrame + 8*capFixedPerEngineHost},
		{"cap-tcp", capFixed + 8000*capPerFrame}, // the kernel's TCP: no engine timers
	} {
		var e *Experiment
		for i := range plan.Experiments {
			if plan.Experiments[i].Name == tc.exp {
				e = &plan.Experiments[i]
			}
		}
		if e == nil {
			t.Fatalf("no experiment %s among %d", tc.exp, len(plan.Experiments))
		}
		got, pps, err := EmulationCPUs(e)
		if err != nil {
			t.Fatal(err)
		}
		if pps != 8000 || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %.3f vCPUs for %.0f packets a second, want %.3f for 8000", tc.exp, got, pps, tc.want)
		}
	}
}

// TestCapacityWarning: a run the model puts beyond the whole machine
// warns; one within it, the twin, real hosts and an unknown machine do
// not.
func TestCapacityWarning(t *testing.T) {
	heavy := strings.Replace(capacityBase, "rate_rps: 500", "rate_rps: 4000", 1) // 64,000 packets a second
	for _, tc := range []struct {
		name, text string
		opt        Options
		warn       bool
	}{
		{"fits", capacityBase, Options{CPUs: 2}, false},
		{"beyond", heavy, Options{CPUs: 2}, true},
		{"a bigger machine", heavy, Options{CPUs: 8}, false},
		{"unknown machine", heavy, Options{}, false},
		{"the twin", strings.Replace(heavy, "  - name: tcp\n", "", 1), Options{CPUs: 2, Simulate: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustPlanWith(t, tc.text, tc.opt)
			var got []string
			for _, w := range plan.Warnings() {
				if strings.Contains(w, "capacity model") {
					got = append(got, w)
				}
			}
			if (len(got) > 0) != tc.warn {
				t.Fatalf("warnings %q, want a capacity warning: %v", got, tc.warn)
			}
			if tc.warn && !strings.Contains(got[0], "about 6.4 vCPUs, more than this machine's 2 (it is faithful within half of them): 64000 DATA packets a second") {
				t.Errorf("warning %q", got[0])
			}
		})
	}
}
