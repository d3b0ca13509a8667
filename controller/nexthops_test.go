package controller

import (
	"testing"

	"github.com/homatb/homatb/internal/clos"
)

// BenchmarkNextHops is one switch's route search on a fat tree of k=32
// (1,280 switches, 8,192 hosts), from an edge switch: what programming
// and syncing each switch of such a fabric runs.
func BenchmarkNextHops(b *testing.B) {
	l, err := clos.FatTree(32, 16)
	if err != nil {
		b.Fatal(err)
	}
	topo := &Topology{}
	for _, s := range l.Switches {
		topo.Switches = append(topo.Switches, Switch{Name: s.Name, DeviceID: s.DeviceID})
	}
	for _, k := range l.Links {
		topo.Links = append(topo.Links, Link{A: k.A, APort: k.APort, B: k.B, BPort: k.BPort})
	}
	from := l.Hosts[0].Switch
	for b.Loop() {
		if hops := topo.nextHops(from); len(hops) != len(l.Switches)-1 {
			b.Fatalf("%d switches reached from %s, want %d", len(hops), from, len(l.Switches)-1)
		}
	}
}
