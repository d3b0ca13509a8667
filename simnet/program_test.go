package simnet

import (
	"testing"

	"github.com/homatb/homatb/controller"
)

// TestUnchangedPolicySkipsSync: only a policy equal to the installed one
// and without meters leaves the switches unsynced (a sync refills meters).
func TestUnchangedPolicySkipsSync(t *testing.T) {
	installed := controller.Policy{LoadBalancing: controller.LoadBalanceSpray}
	meters := controller.Defences{Meters: []controller.Meter{{Queues: []uint8{7}, RateBytes: 1e6, BurstBytes: 1e4}}}
	for _, tc := range []struct {
		name      string
		installed controller.Policy
		pol       controller.Policy
		want      bool
	}{
		{"same", installed, installed, true},
		{"no port modes, nil or empty", installed, func() controller.Policy { p := installed; p.PortModes = []controller.PortMode{}; return p }(), true},
		{"port modes differ", installed, func() controller.Policy {
			p := installed
			p.PortModes = []controller.PortMode{{Mode: controller.ModeTrimAbove, Ports: controller.PortsAll, ThresholdPkts: 8}}
			return p
		}(), false},
		{"defences differ", installed, func() controller.Policy { p := installed; p.Defences.AntiSpoofing = true; return p }(), false},
		{"meters, unchanged", func() controller.Policy { p := installed; p.Defences = meters; return p }(),
			func() controller.Policy { p := installed; p.Defences = meters; return p }(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Switches{policy: tc.installed}
			if got := s.unchanged(tc.pol); got != tc.want {
				t.Errorf("unchanged = %v, want %v", got, tc.want)
			}
		})
	}
}
