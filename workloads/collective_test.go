package workloads

import "testing"

func TestPlanCollective(t *testing.T) {
	tests := []struct {
		kind          string
		n             int
		sends, expect int // messages rank 1 sends, inputs it waits for
		messages      int // in one iteration, all ranks
	}{
		{KindRingAllReduce, 4, 6, 1, 24},
		{KindAllGather, 4, 3, 1, 12},
		{KindReduceScatter, 3, 2, 1, 6},
		{KindAllToAll, 4, 3, 3, 12},
		{KindIncastBarrier, 4, 1, 1, 6},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			p := PlanCollective(tc.kind, tc.n, 1, 4096)
			msgs, expect := 0, 0
			for i, s := range p.Sends {
				msgs += len(s.Dests)
				if (s.Dep < 0) != (i == 0) || (s.Dep >= 0 && s.Dep != s.Step-1) {
					t.Errorf("send %d (step %d) depends on step %d: want only the first on compute alone, the others on the step before", i, s.Step, s.Dep)
				}
				for _, d := range s.Dests {
					if d == 1 || d < 0 || d >= tc.n {
						t.Errorf("send to rank %d", d)
					}
				}
			}
			for _, n := range p.Expect {
				expect += n
			}
			if msgs != tc.sends || expect != tc.expect {
				t.Errorf("rank 1 sends %d messages and waits for %d inputs, want %d and %d", msgs, expect, tc.sends, tc.expect)
			}
			if m, _ := CollectiveShape(tc.kind, tc.n); m != tc.messages {
				t.Errorf("%d messages an iteration, want %d", m, tc.messages)
			}
		})
	}
	root := PlanCollective(KindIncastBarrier, 4, 0, 4096)
	if len(root.Sends) != 1 || root.Sends[0].Deps != 3 || len(root.Sends[0].Dests) != 3 || root.Sends[0].Bytes != MinCollectiveMessage {
		t.Errorf("incast-barrier root %+v: want one short release to 3 hosts after 3 inputs", root)
	}
}
