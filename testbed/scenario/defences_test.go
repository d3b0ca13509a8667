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
	if m := plan.Base.Switch.Meters[0]; m.Rate != 5e6 || m.Burst != 15000 || m.Exceed != ExceedDrop {
		t.Errorf("meter %+v", m)
	}
}
