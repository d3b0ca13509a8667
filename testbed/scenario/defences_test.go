package scenario

import (
	"slices"
	"testing"
)

// TestDefenceScenario: dscp.trust leaves the other hosts untrusted, and a
// sweep of switch.defences makes one experiment with the switch's
// defences and one without, per transport.
func TestDefenceScenario(t *testing.T) {
	src, err := Parse("def.yaml", []byte(good+`dscp:
  trust: [h1-h3]
  untrusted: {remark: 8}
switch:
  anti_spoofing: true
  meters:
    - {priorities: [6, 7], rate: 5Mbit, burst: 15KB, exceed: drop}
sweep:
  - param: switch.defences
    values: [true, false]
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Base.UntrustedHosts(); !slices.Equal(got, []string{"h4"}) {
		t.Errorf("untrusted %v, want [h4]", got)
	}
	var on []bool
	for _, e := range plan.Experiments {
		on = append(on, e.Scenario.Switch.DefencesOn())
	}
	if want := []bool{true, true, false, false}; !slices.Equal(on, want) {
		t.Errorf("defences on %v, want %v", on, want)
	}
	for _, e := range plan.Experiments[1:] {
		if e.Seed != plan.Experiments[0].Seed {
			t.Errorf("%s: seed %d, want %d: the defences are compared on the same traffic", e.Name, e.Seed, plan.Experiments[0].Seed)
		}
	}
	if m := plan.Base.Switch.Meters[0]; m.Rate != 5e6 || m.Burst != 15000 || m.Exceed != ExceedDrop {
		t.Errorf("meter %+v", m)
	}
}

// TestAdversaryPeers: a spoofing adversary's peers are the hosts that
// exchange messages with its target, both ways.
func TestAdversaryPeers(t *testing.T) {
	src, err := Parse("p.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string
		want   []string
	}{{"h1", []string{"h2", "h3"}}, {"h2", []string{"h1"}}, {"h4", nil}} {
		if got := (Adversary{Target: tc.target}).Peers(plan.Base); !slices.Equal(got, tc.want) {
			t.Errorf("peers of %s: %v, want %v", tc.target, got, tc.want)
		}
	}
}
