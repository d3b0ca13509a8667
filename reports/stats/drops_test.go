package stats

import (
	"strings"
	"testing"

	"github.com/homatb/homatb/p4/switchstats"
)

// TestDropsByPeer checks the split of queue drops by what the dropping
// port faces, and the sentence the terminal prints of it.
func TestDropsByPeer(t *testing.T) {
	port := func(n uint16, peer string, drops ...uint64) switchstats.Port {
		p := switchstats.Port{Port: n, Peer: peer}
		for q, d := range drops {
			p.Queues = append(p.Queues, switchstats.Queue{Queue: q, DropPkts: d})
		}
		return p
	}
	isSwitch := map[string]bool{"l1": true, "p1": true, "p2": true}
	for _, tc := range []struct {
		name                string
		ports               []switchstats.Port
		toHosts, toSwitches int64
		want                string // in the sentence; "" for none
		fabricBlamed        bool
	}{
		{"none", []switchstats.Port{port(1, "h1", 0, 0)}, 0, 0, "", false},
		{"a receiver's downlink", []switchstats.Port{port(1, "h1", 3, 4), port(9, "p1", 1)}, 7, 1, "the most at l1/1 toward h1 (7)", false},
		{"only downlinks", []switchstats.Port{port(1, "h1", 3), port(2, "h2", 1)}, 4, 0, "switch drops: 4 packets, all at hosts' downlinks; the most at l1/1 toward h1 (3)", false},
		{"only uplinks", []switchstats.Port{port(9, "p1", 3), port(10, "p2", 1)}, 0, 4, "switch drops: 4 packets, all on links between switches; the most at l1/9 toward p1 (3)", true},
		{"uplinks", []switchstats.Port{port(1, "h1", 2), port(9, "p1", 0, 5)}, 2, 5, "2 at hosts' downlinks and 5 on links between switches; the most at l1/9 toward p1 (5)", true},
		{"peer unknown", []switchstats.Port{port(3, "", 4)}, 0, 0, "switch drops: 4 packets; the most at l1/3 (4)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st SwitchStats
			for _, p := range tc.ports {
				st.countDrops("l1", p, isSwitch)
				for _, q := range p.Queues {
					st.Drops += int64(q.DropPkts)
				}
			}
			if st.DropsTowardHosts != tc.toHosts || st.DropsTowardSwitches != tc.toSwitches {
				t.Errorf("toward hosts %d, switches %d; want %d, %d", st.DropsTowardHosts, st.DropsTowardSwitches, tc.toHosts, tc.toSwitches)
			}
			got := DropsSentence(st)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("DropsSentence = %q, want one containing %q", got, tc.want)
			}
			if blamed := strings.Contains(got, "the fabric, not the receivers' links"); blamed != tc.fabricBlamed {
				t.Errorf("DropsSentence = %q: fabric blamed %v, want %v", got, blamed, tc.fabricBlamed)
			}
		})
	}
}
