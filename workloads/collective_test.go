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
			for i := range p.NumSends() {
				s := p.Send(i)
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
			if m, crit := CollectiveShape(tc.kind, tc.n, 4096); m != tc.messages || len(crit) == 0 || crit[0] < 4096/tc.n {
				t.Errorf("%d messages an iteration, critical path %v: want %d messages", m, crit, tc.messages)
			}
		})
	}
	root := PlanCollective(KindIncastBarrier, 4, 0, 4096)
	if s := root.Send(0); root.NumSends() != 1 || s.Deps != 3 || len(s.Dests) != 3 || s.Bytes != MinCollectiveMessage {
		t.Errorf("incast-barrier root %+v: want one short release to 3 hosts after 3 inputs", root)
	}
}

// TestAllToAllOrder checks that an all-to-all's members post their
// sends in pairwise-exchange order: at each position of their lists the
// members send to different receivers, so a transport that sends equal
// messages in the order posted never has them all converge on one.
func TestAllToAllOrder(t *testing.T) {
	for _, n := range []int{2, 3, 8} {
		at := make([]map[int]bool, n-1) // receivers seen at each position
		for i := range at {
			at[i] = map[int]bool{}
		}
		for r := range n {
			p := PlanCollective(KindAllToAll, n, r, 4096)
			dests := p.Send(0).Dests
			if len(dests) != n-1 {
				t.Fatalf("n=%d: rank %d sends to %v", n, r, dests)
			}
			for i, d := range dests {
				if d == r || at[i][d] {
					t.Errorf("n=%d: rank %d's send %d goes to rank %d, itself or a receiver another rank sends to at that position", n, r, i, d)
				}
				at[i][d] = true
			}
		}
	}
}

// TestCollectiveRun walks rank 1 of a 3-host ring all-reduce through an
// iteration: an input that arrives before the compute ends waits for it,
// each later step goes when its input arrives, and the part is done once
// the last input is in and every send answered.
func TestCollectiveRun(t *testing.T) {
	c := NewCollectiveRun(PlanCollective(KindRingAllReduce, 3, 1, 3000))
	if done, _ := c.Done(); done {
		t.Fatal("done before the first iteration")
	}
	if ls := c.Arrived(0, 0, 50); len(ls) != 0 {
		t.Fatalf("launched %v before the compute ended", ls)
	}
	ls := c.Begin(0, 100, 80)
	if len(ls) != 2 || ls[0].Step != 0 || ls[0].Ready != 100 || ls[0].ComputeNs != 80 || ls[1].Step != 1 || ls[1].Ready != 100 || ls[1].Input != 50 || ls[1].Dest != 2 || ls[1].Bytes != 1000 {
		t.Fatalf("begin launched %+v: want steps 0 and 1 at the compute's end, step 1's input at 50", ls)
	}
	c.Answered(0, true, 0)
	c.Answered(0, true, 0)
	for step := 1; step < 3; step++ {
		ls := c.Arrived(0, step, int64(200+step))
		if len(ls) != 1 || ls[0].Step != step+1 || ls[0].Ready != int64(200+step) || ls[0].ComputeNs != 0 {
			t.Fatalf("input of step %d launched %+v", step, ls)
		}
		c.Answered(0, true, 0)
	}
	if done, _ := c.Done(); done {
		t.Fatal("done before the last input arrived")
	}
	if ls := c.Arrived(1, 0, 250); len(ls) != 0 {
		t.Fatalf("an input of the next iteration launched %v", ls)
	}
	c.Arrived(0, 3, 300)
	if done, failed := c.Done(); !done || failed {
		t.Fatalf("done %v failed %v after every input and answer", done, failed)
	}
	c.Begin(1, 400, 100)
	c.Answered(1, false, 0)
	if done, failed := c.Done(); !done || !failed {
		t.Fatalf("done %v failed %v after a failed send: want both", done, failed)
	}
}

// TestLargeRing walks one rank of an 8,192-rank ring all-reduce through an
// iteration: each input lets exactly the next step go, to the next rank,
// and the part is done after the last; an input of a later step that
// overtakes its predecessor waits for nothing but its own step.
func TestLargeRing(t *testing.T) {
	const n = 8192
	p := PlanCollective(KindRingAllReduce, n, 5, n*1000)
	if p.NumSends() != 2*(n-1) || p.Messages() != 2*(n-1) {
		t.Fatalf("%d sends, %d messages; want %d", p.NumSends(), p.Messages(), 2*(n-1))
	}
	if m, crit := CollectiveShape(KindRingAllReduce, n, n*1000); m != n*2*(n-1) || len(crit) != 2*(n-1) {
		t.Fatalf("shape: %d messages, %d steps", m, len(crit))
	}
	c := NewCollectiveRun(p)
	if ls := c.Begin(0, 0, 0); len(ls) != 1 || ls[0].Step != 0 || ls[0].Dest != 6 || ls[0].Bytes != 1000 {
		t.Fatalf("begin launched %+v", ls)
	}
	c.Answered(0, true, 0)
	// Step 2's input before step 1's: step 3 goes at once, step 2 after.
	if ls := c.Arrived(0, 2, 10); len(ls) != 1 || ls[0].Step != 3 {
		t.Fatalf("input of step 2 launched %+v", ls)
	}
	if ls := c.Arrived(0, 1, 11); len(ls) != 1 || ls[0].Step != 2 {
		t.Fatalf("input of step 1 launched %+v", ls)
	}
	if ls := c.Arrived(0, 0, 12); len(ls) != 1 || ls[0].Step != 1 {
		t.Fatalf("input of step 0 launched %+v", ls)
	}
	c.Answered(0, true, 0)
	c.Answered(0, true, 0)
	c.Answered(0, true, 0)
	for step := 3; step < 2*(n-1); step++ {
		ls := c.Arrived(0, step, int64(step))
		if step+1 < 2*(n-1) && (len(ls) != 1 || ls[0].Step != step+1 || ls[0].Input != int64(step) || ls[0].Ready != int64(step)) {
			t.Fatalf("input of step %d (at %d) launched %+v", step, step, ls)
		}
		if done, _ := c.Done(); done && step+1 < 2*(n-1) {
			t.Fatalf("done after the input of step %d", step)
		}
		for range ls {
			c.Answered(0, true, 0)
		}
		if len(c.in) > 1 {
			t.Fatalf("after the input of step %d the member holds %d inputs, want at most 1", step, len(c.in))
		}
	}
	if done, failed := c.Done(); !done || failed {
		t.Errorf("after every input: done %v failed %v", done, failed)
	}
}

// TestTreeAllReduce checks every member's plan of a tree all-reduce among
// n (heap order): a leaf sends its n chunks up at once, an inner member
// each chunk up once both (or its one) children's have come and down once
// its parent's has, the root down once its children's have; an iteration
// sends 2n(n-1) messages, as a ring's.
func TestTreeAllReduce(t *testing.T) {
	for _, n := range []int{2, 3, 4, 7, 10} {
		msgs := 0
		for r := range n {
			p := PlanCollective(KindTreeAllReduce, n, r, n*1000)
			before := msgs
			children := 0
			for _, c := range []int{2*r + 1, 2*r + 2} {
				if c < n {
					children++
				}
			}
			for i := range p.NumSends() {
				s := p.Send(i)
				msgs += len(s.Dests)
				c, up := s.Step/2, s.Step%2 == 0
				switch {
				case s.Bytes != 1000 || c >= n:
					t.Errorf("n=%d rank %d send %d: %+v", n, r, i, s)
				case up && (r == 0 || len(s.Dests) != 1 || s.Dests[0] != (r-1)/2):
					t.Errorf("n=%d rank %d: up chunk %d to %v, want its parent", n, r, c, s.Dests)
				case up && children == 0 && s.Dep != -1:
					t.Errorf("n=%d leaf %d: up chunk %d waits for step %d", n, r, c, s.Dep)
				case up && children > 0 && (s.Dep != s.Step || s.Deps != children):
					t.Errorf("n=%d rank %d: up chunk %d waits for %d of step %d, want its %d children's", n, r, c, s.Deps, s.Dep, children)
				case !up && len(s.Dests) != children:
					t.Errorf("n=%d rank %d: down chunk %d to %v", n, r, c, s.Dests)
				case !up && r == 0 && (s.Dep != s.Step-1 || s.Deps != children):
					t.Errorf("n=%d root: down chunk %d waits for %d of step %d", n, c, s.Deps, s.Dep)
				case !up && r > 0 && (s.Dep != s.Step || s.Deps != 1):
					t.Errorf("n=%d rank %d: down chunk %d waits for %d of step %d, want its parent's", n, r, c, s.Deps, s.Dep)
				}
				for _, d := range s.Dests {
					received := func(step int) bool { return step%2 == 1 || 2*d+1 < n }
					if dep, ok := CollectiveInputStep(KindTreeAllReduce, s.Step, received); r == d || (ok && dep != s.Step && dep != s.Step-1) {
						t.Errorf("n=%d rank %d sends step %d to %d (input step %d)", n, r, s.Step, d, dep)
					}
				}
			}
			if sent := msgs - before; p.Messages() != sent {
				t.Errorf("n=%d rank %d: Messages %d, but its sends carry %d", n, r, p.Messages(), sent)
			}
		}
		if m, crit := CollectiveShape(KindTreeAllReduce, n, n*1000); msgs != 2*n*(n-1) || m != msgs || len(crit) == 0 {
			t.Errorf("n=%d: %d messages sent, shape %d with critical path %v; want %d", n, msgs, m, crit, 2*n*(n-1))
		}
	}
}

// TestTreeRun walks an inner member (rank 1 of 5: parent 0, children 3
// and 4) through an iteration, answering each message as it goes: a chunk
// goes up once both children's copy of it has arrived, in any order, and
// down once the parent's has; the member keeps only inputs a send waits
// for and is done once every input of the iteration is in and every send
// answered.
func TestTreeRun(t *testing.T) {
	const n = 5
	c := NewCollectiveRun(PlanCollective(KindTreeAllReduce, n, 1, n*1000))
	answer := func(ls []CollectiveLaunch) {
		for range ls {
			if more := c.Answered(0, true, 99); len(more) != 0 {
				t.Fatalf("an answer released %+v with the window not full", more)
			}
		}
	}
	if ls := c.Arrived(0, 0, 5); len(ls) != 0 {
		t.Fatalf("launched %v before the compute ended", ls)
	}
	if ls := c.Begin(0, 10, 10); len(ls) != 0 {
		t.Fatalf("begin launched %+v with one child's chunk 0 in", ls)
	}
	ls := c.Arrived(0, 0, 20)
	if len(ls) != 1 || ls[0].Step != 0 || ls[0].Dest != 0 || ls[0].Input != 20 || ls[0].ComputeNs != 10 {
		t.Fatalf("second child's chunk 0 launched %+v: want chunk 0 up to rank 0", ls)
	}
	answer(ls)
	for ch := 1; ch < n; ch++ {
		c.Arrived(0, 2*ch, 30)
		ls := c.Arrived(0, 2*ch, 31)
		if len(ls) != 1 || ls[0].Step != 2*ch {
			t.Fatalf("chunk %d up: %+v", ch, ls)
		}
		answer(ls)
	}
	for ch := range n {
		ls := c.Arrived(0, 2*ch+1, 40)
		if len(ls) != 2 || ls[0].Dest != 3 || ls[1].Dest != 4 || ls[0].Step != 2*ch+1 {
			t.Fatalf("chunk %d down: %+v", ch, ls)
		}
		if len(c.in) > 1 {
			t.Fatalf("holds %d inputs", len(c.in))
		}
		if ch == n-1 {
			c.Answered(0, true, 99)
			if done, _ := c.Done(); done {
				t.Fatal("done with a send unanswered")
			}
			c.Answered(0, true, 99)
			break
		}
		answer(ls)
	}
	if done, failed := c.Done(); !done || failed {
		t.Fatalf("done %v failed %v after every input and answer", done, failed)
	}
}

// TestTreeWindow: a leaf of a 64-member tree begins with TreeWindow of
// its 64 chunks in flight; each answer lets the next go, ready when the
// answer came; it is done once all are answered and its parent's 64
// chunks are in, keeping none of them.
func TestTreeWindow(t *testing.T) {
	const n = 64
	leaf := NewCollectiveRun(PlanCollective(KindTreeAllReduce, n, n-1, n*1000))
	ls := leaf.Begin(0, 7, 7)
	if len(ls) != TreeWindow || ls[0].Dest != (n-2)/2 || ls[0].Ready != 7 || ls[TreeWindow-1].Step != 2*(TreeWindow-1) {
		t.Fatalf("leaf began with %+v: want chunks 0-%d up at the compute's end", ls, TreeWindow-1)
	}
	for ch := TreeWindow; ch < n; ch++ {
		more := leaf.Answered(0, true, int64(100+ch))
		if len(more) != 1 || more[0].Step != 2*ch || more[0].Ready != int64(100+ch) || more[0].Input != 0 {
			t.Fatalf("answer %d released %+v: want chunk %d, ready at the answer", ch-TreeWindow, more, ch)
		}
		if done, _ := leaf.Done(); done {
			t.Fatalf("done with chunk %d just sent", ch)
		}
	}
	for range TreeWindow {
		if more := leaf.Answered(0, true, 500); len(more) != 0 {
			t.Fatalf("released %+v with every chunk sent", more)
		}
	}
	for ch := range n {
		if done, _ := leaf.Done(); done {
			t.Fatalf("leaf done before chunk %d came down", ch)
		}
		leaf.Arrived(0, 2*ch+1, 600)
	}
	if done, _ := leaf.Done(); !done || len(leaf.in) != 0 {
		t.Fatalf("leaf done %v holding %d inputs", done, len(leaf.in))
	}
}

// TestWindowPerMessage: the window counts messages, not sends: an
// all-to-all member's one send to its n-1 peers goes window messages at a
// time, in its pairwise order, each answer letting the next go.
func TestWindowPerMessage(t *testing.T) {
	const n, w = 6, 2
	p := PlanCollective(KindAllToAll, n, 0, n*100)
	p.SetWindow(w)
	c := NewCollectiveRun(p)
	ls := c.Begin(0, 10, 10)
	if len(ls) != w || ls[0].Dest != 1 || ls[1].Dest != 2 || ls[1].ComputeNs != 10 {
		t.Fatalf("began with %+v: want ranks 1 and 2", ls)
	}
	for d := w + 1; d < n; d++ {
		more := c.Answered(0, true, int64(20+d))
		if len(more) != 1 || more[0].Dest != d || more[0].Ready != int64(20+d) {
			t.Fatalf("answer released %+v: want rank %d, ready at the answer", more, d)
		}
	}
	for range w {
		c.Answered(0, true, 50)
	}
	for r := 1; r < n; r++ {
		c.Arrived(0, 0, 60)
	}
	if done, failed := c.Done(); !done || failed {
		t.Fatalf("done %v failed %v after every message and input", done, failed)
	}
}
