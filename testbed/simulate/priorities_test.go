package simulate_test

import (
	"os"
	"strings"
	"testing"
)

// TestPrioritiesCutTheShortTail runs scenarios/priorities-sim.yaml for a
// quarter of its measured time: one priority level to two must cut the P99
// slowdown of the shortest half of the messages at least fivefold, and
// four and eight levels must keep it there (within a fifth of two levels'),
// as in the Homa papers.
func TestPrioritiesCutTheShortTail(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 4 experiments of 100 ms at 10 Gbit/s (about 4 s)")
	}
	src, err := os.ReadFile("../../scenarios/priorities-sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(src), "duration: 400ms", "duration: 100ms", 1)
	if yaml == string(src) {
		t.Fatal("priorities-sim.yaml has no 'duration: 400ms' to shorten")
	}
	s := readSummary(t, runSim(t, load(t, yaml)))
	if len(s.Experiments) != 4 {
		t.Fatalf("%d experiments, want 4 (1, 2, 4, 8 levels)", len(s.Experiments))
	}
	var p99 []float64
	for _, e := range s.Experiments {
		if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued {
			t.Errorf("%s: %d of %d RPCs completed", e.Name, e.RPCs.Completed, e.RPCs.Issued)
		}
		if e.ShortestHalf == nil || e.ShortestHalf.S99 == nil {
			t.Fatalf("%s: no shortest-half slowdown", e.Name)
		}
		p99 = append(p99, *e.ShortestHalf.S99)
	}
	t.Logf("shortest half's P99 slowdown with 1, 2, 4, 8 levels: %.2f", p99)
	if p99[0] < 5*p99[1] {
		t.Errorf("1 -> 2 levels: %.2f -> %.2f, want at least a fivefold cut", p99[0], p99[1])
	}
	for i, levels := range []int{4, 8} {
		if v := p99[2+i]; v > 1.2*p99[1] {
			t.Errorf("%d levels: %.2f, want at most 1.2x two levels' %.2f", levels, v, p99[1])
		}
	}
}
