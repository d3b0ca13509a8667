package simulate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUETSpraying simulates uet-sim.yaml's permutation (16 hosts on 4
// leaves, each sending 2 MB across the spines, per-flow ECMP in the
// switches) with UET's per-packet entropy and with one entropy per PDC:
// the entropy, carried as the UDP source port that tor.p4's multipath
// hash reads, spreads the packets over the spines, which reorders them
// (the receivers take them out of sequence) and finishes the permutation
// sooner than one path per PDC; every flow completes, nothing is lost.
func TestUETSpraying(t *testing.T) {
	raw, err := os.ReadFile("../../scenarios/uet-sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := filepath.Abs("../../scenarios/perm16.cm")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(raw), "connection_matrix: perm16.cm", "connection_matrix: "+cm, 1)
	p := load(t, src)
	if err := p.Only([]string{"uet", "uet-one-path"}); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Experiments []struct {
			Name  string `json:"name"`
			Flows []struct {
				Flows, Completed int
				Completion       *float64 `json:"completion_us"`
			} `json:"flows"`
			Switch struct {
				Drops int64 `json:"drops"`
			} `json:"switch"`
			Internals *struct {
				Counters map[string]uint64 `json:"counters"`
			} `json:"transport_internals"`
		} `json:"experiments"`
	}
	decodeSummary(t, runSim(t, p), &s)
	if len(s.Experiments) != 2 {
		t.Fatalf("%d experiments, want 2", len(s.Experiments))
	}
	var done [2]float64
	var ooo [2]uint64
	for i, e := range s.Experiments {
		if len(e.Flows) != 1 || e.Flows[0].Completed != 16 || e.Flows[0].Completion == nil || e.Internals == nil {
			t.Fatalf("%s: flows %+v: want the 16 flows completed", e.Name, e.Flows)
		}
		c := e.Internals.Counters
		if e.Switch.Drops != 0 || c["homa_retransmits"] != 0 {
			t.Errorf("%s: %d drops, %d retransmissions: want none", e.Name, e.Switch.Drops, c["homa_retransmits"])
		}
		done[i], ooo[i] = *e.Flows[0].Completion, c["homa_out_of_sequence"]
	}
	if ooo[0] == 0 || ooo[1] != 0 {
		t.Errorf("packets out of sequence: sprayed %d, one path %d; want some, and none on one path", ooo[0], ooo[1])
	}
	if done[0]*1.3 > done[1] {
		t.Errorf("permutation done in %.0f µs sprayed, %.0f µs on one path per PDC: want spraying 1.3x faster", done[0], done[1])
	}
	t.Logf("permutation: sprayed %.0f µs, one path %.0f µs; out of sequence %d", done[0], done[1], ooo[0])
}
