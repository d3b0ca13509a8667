package simulate_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/testbed/scenario"
)

// TestUETSpraying simulates uet-sim.yaml's permutation (16 hosts on 4
// leaves, each sending 2 MB across the spines, per-flow ECMP in the
// switches) with UET's per-packet entropy (in turn, and recycled as REPS
// does) and with one entropy per PDC:
// the entropy, carried as the UDP source port that tor.p4's multipath
// hash reads, spreads the packets over the spines, which reorders them
// (the receivers take them out of sequence) and finishes the permutation
// sooner than one path per PDC; every flow completes, nothing is lost.
func TestUETSpraying(t *testing.T) {
	p := loadWithMatrix(t, "uet-sim.yaml", "perm16.cm")
	if err := p.Only([]string{"uet", "uet-one-path", "uet-reps"}); err != nil {
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
	// In the scenario's order: sprayed in turn, REPS, one path.
	if len(s.Experiments) != 3 {
		t.Fatalf("%d experiments, want 3", len(s.Experiments))
	}
	var done [3]float64
	var ooo [3]uint64
	for i, e := range s.Experiments {
		if len(e.Flows) != 1 || e.Flows[0].Completed != 16 || e.Flows[0].Completion == nil || e.Internals == nil {
			t.Fatalf("%s: flows %+v: want the 16 flows completed", e.Name, e.Flows)
		}
		c := e.Internals.Counters
		// Nothing is lost; sprayed, a packet overtaken by more than
		// uet_reorder_pkts is now and then resent all the same.
		if rtx, data := c["homa_retransmits"], c["homa_tx_data_p3"]; e.Switch.Drops != 0 || rtx*200 > data || (i == 2 && rtx != 0) {
			t.Errorf("%s: %d drops, %d retransmissions of %d data packets: want no drop, and few retransmissions (none on one path)", e.Name, e.Switch.Drops, rtx, data)
		}
		done[i], ooo[i] = *e.Flows[0].Completion, c["homa_out_of_sequence"]
	}
	if ooo[0] == 0 || ooo[1] == 0 || ooo[2] != 0 {
		t.Errorf("packets out of sequence: sprayed %d, REPS %d, one path %d; want some, and none on one path", ooo[0], ooo[1], ooo[2])
	}
	if done[0]*1.3 > done[2] || done[1]*1.3 > done[2] {
		t.Errorf("permutation done in %.0f µs sprayed, %.0f µs with REPS, %.0f µs on one path per PDC: want spraying 1.3x faster", done[0], done[1], done[2])
	}
	t.Logf("permutation: sprayed %.0f µs, REPS %.0f µs, one path %.0f µs; out of sequence %d, %d", done[0], done[1], done[2], ooo[0], ooo[1])
}

// TestUETTrimming simulates uet-trim-sim.yaml's incast with UET without
// and with trim_threshold_pkts: with it, the switch's data queue stays at
// the threshold, the packets above it are trimmed into queue 7, each
// trimmed packet is NACKed by the receiver and resent, and every RPC
// completes; without it, nothing is trimmed and the queue grows past the
// threshold.
func TestUETTrimming(t *testing.T) {
	raw, err := os.ReadFile("../../scenarios/uet-trim-sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := load(t, string(raw))
	if err := p.Only([]string{"uet", "uet-trim"}); err != nil {
		t.Fatal(err)
	}
	s := readSummary(t, runSim(t, p))
	if len(s.Experiments) != 2 {
		t.Fatalf("%d experiments, want 2", len(s.Experiments))
	}
	const threshold = 8 // the scenario's
	for i, e := range s.Experiments {
		if e.RPCs.Issued == 0 || e.RPCs.Completed != e.RPCs.Issued || e.Internals == nil {
			t.Fatalf("%s: rpcs %+v: want every one completed, with the transport's counters", e.Name, e.RPCs)
		}
		c, sw := e.Internals.Counters, e.Switch
		deepest := slices.Max(sw.MaxQueuePkts[:7])
		switch i {
		case 0:
			if sw.TrimmedPkts != 0 || c["homa_trimmed"] != 0 || deepest <= int64(threshold) {
				t.Errorf("%s: %d trimmed by the switch, %d by the hosts' count, deepest data queue %d: want none trimmed and a queue past %d",
					e.Name, sw.TrimmedPkts, c["homa_trimmed"], deepest, threshold)
			}
		case 1:
			if sw.TrimmedPkts == 0 || c["homa_trimmed"] != sw.TrimmedPkts || c["homa_naks_sent"] < sw.TrimmedPkts ||
				c["homa_retransmits"] < sw.TrimmedPkts || deepest > int64(threshold)+1 || sw.MaxQueuePkts[7] == 0 {
				t.Errorf("%s: switch trimmed %d, hosts saw %d trimmed, sent %d NACKs, resent %d; deepest data queue %d, queue 7 %d: "+
					"want every trimmed packet NACKed and resent, the data queue held at %d",
					e.Name, sw.TrimmedPkts, c["homa_trimmed"], c["homa_naks_sent"], c["homa_retransmits"], deepest, sw.MaxQueuePkts[7], threshold)
			}
		}
	}
}

// htsimSummary is what the tests beside htsim's runs read of a summary.
type htsimSummary struct {
	Experiments []struct {
		Name  string `json:"name"`
		Flows []struct {
			Flows, Completed int
			FCT              struct {
				Max float64 `json:"max"`
			} `json:"fct_us"`
		} `json:"flows"`
		Switch struct {
			Drops   int64 `json:"drops"`
			CEMarks int64 `json:"ce_marks"`
			Trimmed int64 `json:"trimmed_pkts"`
		} `json:"switch"`
		Internals *struct {
			Counters map[string]uint64 `json:"counters"`
		} `json:"transport_internals"`
	} `json:"experiments"`
}

// TestUETHtsimIncast runs uet-htsim-incast16-sim.yaml, htsim's 16-node
// incast (15 x 2 MB into one host of a k=4 fat tree at 100 Gbit/s): with
// the switches trimming, the last flow ends within 25% of htsim's ~2.5 ms
// and sooner than with the switches dropping.
func TestUETHtsimIncast(t *testing.T) {
	if testing.Short() {
		t.Skip("a 16-host fat tree at 100 Gbit/s: seconds")
	}
	p := loadWithMatrix(t, "uet-htsim-incast16-sim.yaml", "incast16.cm")
	var s htsimSummary
	decodeSummary(t, runSim(t, p), &s)
	if len(s.Experiments) != 2 {
		t.Fatalf("%d experiments, want 2 (dropping, trimming)", len(s.Experiments))
	}
	var tail [2]float64
	for i, e := range s.Experiments {
		if len(e.Flows) != 1 || e.Flows[0].Completed != 15 {
			t.Fatalf("%s: flows %+v: want the 15 flows completed", e.Name, e.Flows)
		}
		tail[i] = e.Flows[0].FCT.Max
	}
	const htsim = 2500.0 // µs
	if tail[1] < htsim*0.75 || tail[1] > htsim*1.25 || tail[1] >= tail[0] {
		t.Errorf("tail FCT %.0f µs trimming, %.0f µs dropping: want trimming within 25%% of htsim's %.0f µs and sooner than dropping", tail[1], tail[0], htsim)
	}
}

// TestUETHtsimPermutation runs uet-htsim-perm16-sim.yaml, htsim's
// 16-node permutation on a k=4 fat tree whose switches trim UET data when
// full and mark ECN: sprayed over 128 entropies the slowest flow ends
// within 25% of htsim's 194 µs, with packets out of sequence but none
// resent (SLEEK's threshold takes reordering within a window for what it
// is); on one path the flows that share links are slower by half at
// least, and the switches both trim and mark CE there (a trim_above port
// marks as a strict-priority one does).
func TestUETHtsimPermutation(t *testing.T) {
	if testing.Short() {
		t.Skip("a 16-host fat tree at 100 Gbit/s: seconds")
	}
	p := loadWithMatrix(t, "uet-htsim-perm16-sim.yaml", "perm16-random.cm")
	var s htsimSummary
	decodeSummary(t, runSim(t, p), &s)
	if len(s.Experiments) != 2 {
		t.Fatalf("%d experiments, want 2 (128 entropies, one)", len(s.Experiments))
	}
	for _, e := range s.Experiments {
		if len(e.Flows) != 1 || e.Flows[0].Completed != 16 || e.Internals == nil || e.Switch.Drops != 0 {
			t.Fatalf("%s: flows %+v, %d drops: want the 16 flows completed, nothing dropped", e.Name, e.Flows, e.Switch.Drops)
		}
	}
	sprayed, one := s.Experiments[0], s.Experiments[1]
	const htsim = 194.0 // µs, htsim's run of the experiment (validate_outputs)
	tail := sprayed.Flows[0].FCT.Max
	if c := sprayed.Internals.Counters; tail < htsim*0.75 || tail > htsim*1.25 || c["homa_retransmits"] != 0 || c["homa_out_of_sequence"] == 0 {
		t.Errorf("sprayed: tail FCT %.0f µs, %d resent, %d out of sequence: want within 25%% of %.0f µs, none resent, some out of sequence",
			tail, c["homa_retransmits"], c["homa_out_of_sequence"], htsim)
	}
	if one.Flows[0].FCT.Max < 1.5*tail || one.Switch.Trimmed == 0 || one.Switch.CEMarks == 0 {
		t.Errorf("one path: tail FCT %.0f µs (sprayed %.0f), %d trimmed, %d CE marks: want 1.5x slower at least, packets both trimmed and marked",
			one.Flows[0].FCT.Max, tail, one.Switch.Trimmed, one.Switch.CEMarks)
	}
	t.Logf("tail FCT: sprayed %.0f µs, one path %.0f µs; one path: %d trimmed, %d CE marks", tail, one.Flows[0].FCT.Max, one.Switch.Trimmed, one.Switch.CEMarks)
}

// loadWithMatrix loads scenarios/name, whose phase reads the connection
// matrix scenarios/cm, with the matrix's path made absolute.
func loadWithMatrix(t *testing.T, name, cm string) *scenario.Plan {
	t.Helper()
	raw, err := os.ReadFile("../../scenarios/" + name)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("../../scenarios/" + cm)
	if err != nil {
		t.Fatal(err)
	}
	return load(t, strings.Replace(string(raw), "connection_matrix: "+cm, "connection_matrix: "+abs, 1))
}
