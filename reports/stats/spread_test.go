package stats

import (
	"fmt"
	"math"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// TestFabricSpread checks what a collective's first step puts on the
// links above the switches against the host links.
func TestFabricSpread(t *testing.T) {
	// 4 leaves of 4 hosts (h1-h4 on l1, ...) and spines spines.
	leafSpine := func(spines int, uplinkBps uint64) *rundir.FabricRecord {
		f := &rundir.FabricRecord{LinkBps: 100, UplinkBps: uplinkBps, EdgeUplinks: spines}
		for i := range 16 {
			f.Hosts = append(f.Hosts, rundir.FabricHost{Name: fmt.Sprintf("h%d", i+1), Switch: fmt.Sprintf("l%d", i/4+1)})
		}
		return f
	}
	h := func(i int) string { return fmt.Sprintf("h%d", i%16+1) }
	ring, alltoall := [][2]string{}, [][2]string{}
	for i := range 16 {
		ring = append(ring, [2]string{h(i), h(i + 1)})
		for j := range 16 {
			if j != i {
				alltoall = append(alltoall, [2]string{h(i), h(j)})
			}
		}
	}
	// A ring of rank order crosses each leaf once: never the bottleneck.
	// All to all: 4 x 12 messages leave a leaf against 15 on a host link.
	for _, tc := range []struct {
		name string
		f    *rundir.FabricRecord
		msgs [][2]string
		want float64
	}{
		{"no fabric", nil, alltoall, 1},
		{"star", &rundir.FabricRecord{LinkBps: 100}, alltoall, 1},
		{"ring, one spine", leafSpine(1, 0), ring, 1},
		{"all to all, 4:1", leafSpine(1, 0), alltoall, 48.0 / 15},
		{"all to all, 2:1", leafSpine(2, 0), alltoall, 24.0 / 15},
		{"all to all, 1:1", leafSpine(4, 0), alltoall, 1},
		{"all to all, fast uplink", leafSpine(1, 400), alltoall, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := newFabricSpread(tc.f).factor(tc.msgs); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("factor = %.4f, want %.4f", got, tc.want)
			}
		})
	}
	// A fat tree's pods: two pods of two edges of two hosts, one core link
	// a pod; all to all, 4 x 4 messages leave a pod against 7 on a host link.
	ft := &rundir.FabricRecord{LinkBps: 100, EdgeUplinks: 2, PodUplinks: 1, PodLinks: 2, SwitchPods: map[string]int{"e1": 1, "e2": 1, "e3": 2, "e4": 2}}
	var a2a [][2]string
	for i := range 8 {
		ft.Hosts = append(ft.Hosts, rundir.FabricHost{Name: fmt.Sprintf("h%d", i+1), Switch: fmt.Sprintf("e%d", i/2+1)})
		for j := range 8 {
			if j != i {
				a2a = append(a2a, [2]string{fmt.Sprintf("h%d", i+1), fmt.Sprintf("h%d", j+1)})
			}
		}
	}
	if got, want := newFabricSpread(ft).factor(a2a), 16.0/7; math.Abs(got-want) > 1e-9 {
		t.Errorf("fat tree pods: factor = %.4f, want %.4f", got, want)
	}
}
