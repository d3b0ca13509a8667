package external

import (
	"strings"
	"testing"

	"github.com/homatb/homatb/rundir"
)

// TestClockNote: hosts on several machines get the bound of their clocks'
// distance (largest |offset| + bound) and the anatomy's caveat; hosts on
// one machine (namespaces) are said to share its clock.
func TestClockNote(t *testing.T) {
	tests := []struct {
		name  string
		hosts map[string]rundir.HostMachine
		want  []string
	}{
		{"namespaces of one machine", map[string]rundir.HostMachine{
			"h1": {Hostname: "vm", Kernel: "6.1", ClockOffsetUs: 3, ClockBoundUs: 40},
			"h2": {Hostname: "vm", Kernel: "6.1", ClockOffsetUs: -5, ClockBoundUs: 50},
		}, []string{"share one machine's clock", "within 55 µs"}},
		{"two machines", map[string]rundir.HostMachine{
			"h1": {Hostname: "node1", Kernel: "6.1", ClockOffsetUs: 3, ClockBoundUs: 40},
			"h2": {Hostname: "node2", Kernel: "6.1", ClockOffsetUs: -900, ClockBoundUs: 100},
		}, []string{"2 machines", "within 1000 µs", "largest on h2", "latency anatomy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := clockNote(tc.hosts)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("note %q lacks %q", got, w)
				}
			}
		})
	}
}

// TestMachinesNote: one line for the fidelity box, alike machines together.
func TestMachinesNote(t *testing.T) {
	got := machinesNote(map[string]rundir.HostMachine{
		"h1": {Hostname: "node1", CPUs: 32, CPUModel: "EPYC 7543", Kernel: "6.1", NICDriver: "mlx5_core", NICSpeedMbps: 100000},
		"h2": {Hostname: "node2", CPUs: 32, CPUModel: "EPYC 7543", Kernel: "6.1", NICDriver: "mlx5_core", NICSpeedMbps: 100000},
		"h3": {Hostname: "node3", CPUs: 16, CPUModel: "Xeon", Kernel: "6.8", NICDriver: "ice"},
	})
	want := "machines (manifest.json has each): h1@node1 h2@node2: 32 x EPYC 7543, kernel 6.1, NIC mlx5_core at 100000 Mbit/s; h3@node3: 16 x Xeon, kernel 6.8, NIC ice"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
