package workloads

import (
	"os"
	"strings"
	"testing"
)

const ringMatrix = `# a 3-node chain, as htsim's generators write one
Nodes 3
Connections 3
Triggers 2
0->1 id 1 start 0 size 1000 send_done_trigger 1
1->2 id 2 trigger 1 size 1000 send_done_trigger 2
2->0 id 3 trigger 2 size 1000 prio 3
trigger id 1 oneshot
trigger id 2 oneshot
`

func TestParseMatrix(t *testing.T) {
	m, err := ParseMatrix("ring.cm", []byte(ringMatrix))
	if err != nil {
		t.Fatal(err)
	}
	if m.Nodes != 3 || len(m.Flows) != 3 || len(m.Triggers) != 2 {
		t.Fatalf("got %d nodes, %d flows, %d triggers", m.Nodes, len(m.Flows), len(m.Triggers))
	}
	f := m.Flows[1]
	if f.Src != 1 || f.Dst != 2 || f.ID != 2 || f.Trigger != 1 || f.SendDone != 2 || f.Size != 1000 || f.Line != 6 {
		t.Errorf("flow 2 = %+v", f)
	}
	if m.Flows[2].Prio != 3 || m.Flows[0].StartPs != 0 {
		t.Errorf("flows = %+v", m.Flows)
	}
	if got := m.TriggerNodes(2); len(got) != 1 || got[0] != 2 {
		t.Errorf("TriggerNodes(2) = %v, want [2]", got)
	}
}

// TestMatrixIDsAndStart: lines without an id get ids above every given
// one, in file order; start is read as picoseconds.
func TestMatrixIDsAndStart(t *testing.T) {
	m, err := ParseMatrix("x.cm", []byte("Nodes 2\nConnections 3\n0->1 start 2500000.4 size 5\n1->0 id 7 start 0 size 5\n0->1 start 1e6 size 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Flows[0].ID != 8 || m.Flows[2].ID != 9 || m.Flows[0].StartPs != 2_500_000 || m.Flows[2].StartPs != 1_000_000 {
		t.Errorf("flows = %+v", m.Flows)
	}
	if got := NewMatrixRun(m, 0).Start(100); len(got) != 2 || got[0].Ready != 100+2500 || got[1].Ready != 100+1000 {
		t.Errorf("Start = %+v", got)
	}
}

func TestBadMatrices(t *testing.T) {
	h := "Nodes 4\nConnections 1\n"
	for _, c := range []struct{ name, text, want string }{
		{"no nodes", "Connections 1\n0->1 start 0 size 1\n", "no Nodes line"},
		{"no connections", "Nodes 2\n0->1 start 0 size 1\n", "no Connections line"},
		{"count mismatch", "Nodes 2\nConnections 2\n0->1 start 0 size 1\n", "x.cm:2: Connections 2, but the file has 1 flow lines"},
		{"trigger count", "Nodes 2\nConnections 1\nTriggers 1\n0->1 start 0 size 1\n", "x.cm:3: Triggers 1, but the file has 0"},
		{"bad nodes", "Nodes many\n", "x.cm:1: Nodes: expected a count"},
		{"unknown key", h + "0->1 start 0 size 1 colour red\n", `x.cm:3: unknown key "colour"`},
		{"no size", h + "0->1 start 0\n", "x.cm:3: no size"},
		{"zero size", h + "0->1 start 0 size 0\n", `x.cm:3: size "0"`},
		{"no start", h + "0->1 id 1 size 1\n", "x.cm:3: no start method"},
		{"start and trigger", h + "Triggers 1\n0->1 id 1 start 0 trigger 1 size 1\ntrigger id 1 oneshot\n", "x.cm:4: both a start time and a trigger"},
		{"trigger without id", h + "Triggers 1\n0->1 trigger 1 size 1\ntrigger id 1 oneshot\n", "x.cm:4: a flow started by a trigger needs an id"},
		{"flow id 0", h + "0->1 id 0 start 0 size 1\n", "x.cm:3: id \"0\""},
		{"self", h + "1->1 start 0 size 1\n", "x.cm:3: \"1->1\": a flow from a node to itself"},
		{"outside", h + "0->4 start 0 size 1\n", "x.cm:3: destination node 4 is outside the matrix's 4 nodes"},
		{"bad node", h + "a->1 start 0 size 1\n", "x.cm:3: \"a->1\": source"},
		{"negative start", h + "0->1 start -5 size 1\n", "x.cm:3: start \"-5\""},
		{"missing value", h + "0->1 start 0 size\n", "x.cm:3: size: expected a number after it"},
		{"twice", h + "0->1 start 0 size 1 size 2\n", "x.cm:3: size given twice"},
		{"dup id", "Nodes 4\nConnections 2\n0->1 id 3 start 0 size 1\n1->2 id 3 start 0 size 1\n", "x.cm:4: flow id 3 is already the id of line 3's flow"},
		{"addon", h + "0->1 start 0 size 1 addon\n", `x.cm:3: "addon": a key of other htsim versions`},
		{"garbage", h + "0->1 start 0 size 1\nhello world\n", `x.cm:4: unknown line "hello"`},
		{"failure", h + "Failures 1\n", "x.cm:3: Failures 1: homatb does not run"},
		{"undefined trigger", h + "0->1 start 0 size 1 send_done_trigger 5\n", "x.cm:3: trigger 5 is named but never defined"},
		{"trigger no id", h + "Triggers 1\n0->1 start 0 size 1\ntrigger oneshot\n", "x.cm:5: trigger with no id"},
		{"trigger no kind", h + "Triggers 1\n0->1 start 0 size 1\ntrigger id 1\n", "x.cm:5: trigger 1 has no kind"},
		{"trigger two kinds", h + "Triggers 1\n0->1 start 0 size 1\ntrigger id 1 oneshot barrier\n", "x.cm:5: trigger is both oneshot and barrier"},
		{"trigger unknown", h + "Triggers 1\n0->1 start 0 size 1\ntrigger id 1 oneshot soon\n", `x.cm:5: unknown key "soon"`},
		{"barrier no count", h + "Triggers 1\n0->1 start 0 size 1\ntrigger id 1 barrier\n", "x.cm:5: barrier trigger 1: expected \"count N\""},
		{"trigger twice", "Nodes 4\nConnections 1\nTriggers 2\n0->1 start 0 size 1\ntrigger id 1 oneshot\ntrigger id 1 oneshot\n", "x.cm:6: trigger id 1 is already defined at line 5"},
		{"oneshot twice", "Nodes 4\nConnections 3\nTriggers 1\n0->1 start 0 size 1 send_done_trigger 1\n1->2 start 0 size 1 recv_done_trigger 1\n2->3 id 9 trigger 1 size 1\ntrigger id 1 oneshot\n",
			"x.cm:7: oneshot trigger 1 is activated by 2"},
		{"oneshot no target", h + "Triggers 1\n0->1 start 0 size 1 send_done_trigger 1\ntrigger id 1 oneshot\n", "x.cm:5: oneshot trigger 1 is activated but no flow waits on it"},
		{"barrier over", h + "Triggers 1\n0->1 start 0 size 1 send_done_trigger 1 recv_done_trigger 1\ntrigger id 1 barrier count 1\n", "x.cm:5: barrier trigger 1 has count 1 but 2"},
		{"barrier never", "Nodes 4\nConnections 2\nTriggers 1\n0->1 start 0 size 1 send_done_trigger 1\n1->2 id 2 trigger 1 size 1\ntrigger id 1 barrier count 2\n",
			"x.cm:5: flow 2 never starts: its barrier trigger 1 (line 6) needs 2 activations and gets at most 1"},
		{"multishot short", "Nodes 4\nConnections 3\nTriggers 1\n0->1 start 0 size 1 send_done_trigger 1\n1->2 id 2 trigger 1 size 1\n2->3 id 3 trigger 1 size 1\ntrigger id 1 multishot\n",
			"x.cm:6: flow 3 never starts: its multishot trigger 1 (line 7) needs 2 activations"},
		{"cycle", "Nodes 4\nConnections 2\nTriggers 2\n0->1 id 1 trigger 2 size 1 send_done_trigger 1\n1->2 id 2 trigger 1 size 1 send_done_trigger 2\ntrigger id 1 oneshot\ntrigger id 2 oneshot\n",
			"x.cm:4: flow 1 never starts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseMatrix("x.cm", []byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestMatrixTriggers runs each trigger kind's activations at one node.
func TestMatrixTriggers(t *testing.T) {
	const text = `Nodes 4
Connections 7
Triggers 3
1->0 id 1 start 0 size 10 recv_done_trigger 1 send_done_trigger 2
2->0 id 2 start 0 size 10 recv_done_trigger 2 send_done_trigger 3
3->0 id 3 start 0 size 10 send_done_trigger 3
0->1 id 4 trigger 1 size 10
0->2 id 5 trigger 2 size 10
0->3 id 6 trigger 3 size 10
0->1 id 7 trigger 3 size 10
trigger id 1 oneshot
trigger id 2 barrier count 2
trigger id 3 multishot
`
	m, err := ParseMatrix("t.cm", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	r := NewMatrixRun(m, 0)
	if got := r.Start(0); len(got) != 0 {
		t.Fatalf("node 0 starts %v, want none", got)
	}
	ids := func(ls []MatrixLaunch) []int {
		var out []int
		for _, l := range ls {
			out = append(out, m.Flows[l.Flow].ID)
		}
		return out
	}
	for _, step := range []struct {
		trigger int
		want    []int
	}{
		{1, []int{4}}, // oneshot: its first activation starts its flows
		{2, nil},      // barrier: not at the first of two
		{3, []int{6}}, // multishot: the first activation starts the first flow
		{2, []int{5}}, // barrier: the second starts it
		{3, []int{7}}, // multishot: the second starts the second flow
		{3, nil},      // multishot: past its flows, nothing
	} {
		got := r.Activate(step.trigger, 42)
		if len(got) != len(step.want) || (len(got) == 1 && ids(got)[0] != step.want[0]) {
			t.Fatalf("activating %d: started %v, want %v", step.trigger, ids(got), step.want)
		}
		for _, l := range got {
			if l.Ready != 42 || l.Input != 42 {
				t.Errorf("launch %+v, want ready and input 42", l)
			}
		}
	}
}

// TestGenerateMatrix parses what each generator writes and runs its
// triggers: every flow starts, and the ring's chains follow the ring.
func TestGenerateMatrix(t *testing.T) {
	for _, c := range []struct {
		kind            string
		release         int64
		flows, triggers int
	}{
		{GenRingAllReduce, 0, 8 * 14, 8 * 13},
		{GenIncast, 0, 7, 0},
		{GenIncast, 64, 14, 1},
	} {
		text, err := GenerateMatrix(c.kind, 8, 1<<20, c.release)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseMatrix(c.kind+".cm", text)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.kind, err, text)
		}
		if len(m.Flows) != c.flows || len(m.Triggers) != c.triggers {
			t.Errorf("%s: %d flows, %d triggers; want %d, %d", c.kind, len(m.Flows), len(m.Triggers), c.flows, c.triggers)
		}
		perNode := map[int]int{}
		for _, f := range m.Flows {
			perNode[f.Src]++
			if f.Size != 1<<20/8 && f.Size != c.release {
				t.Errorf("%s: flow %d of %d bytes", c.kind, f.ID, f.Size)
			}
			if c.kind == GenRingAllReduce && f.Dst != (f.Src+1)%8 {
				t.Errorf("flow %d goes %d->%d, not to the next in the ring", f.ID, f.Src, f.Dst)
			}
		}
		if c.kind == GenRingAllReduce {
			for n := range 8 {
				if perNode[n] != 14 {
					t.Errorf("node %d sends %d flows, want 2(N-1) = 14", n, perNode[n])
				}
			}
		}
	}
	for _, bad := range []struct {
		kind  string
		nodes int
		bytes int64
	}{{"tree", 8, 1 << 20}, {GenIncast, 1, 1 << 20}, {GenRingAllReduce, 8, 7}} {
		if _, err := GenerateMatrix(bad.kind, bad.nodes, bad.bytes, 0); err == nil {
			t.Errorf("GenerateMatrix(%q, %d, %d): no error", bad.kind, bad.nodes, bad.bytes)
		}
	}
}

// TestCommittedMatrices: the scenarios' matrices are what `homatb cm`
// writes today (regenerate them with the commands in
// scenarios/ai-cluster-cm.yaml).
func TestCommittedMatrices(t *testing.T) {
	for _, c := range []struct {
		file    string
		kind    string
		release int64
	}{{"../scenarios/ring8.cm", GenRingAllReduce, 0}, {"../scenarios/incast8.cm", GenIncast, 64}} {
		want, err := GenerateMatrix(c.kind, 8, 1_000_000, c.release)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from what homatb cm %s writes now", c.file, c.kind)
		}
	}
}

// TestPermutation: every node sends one flow and receives one, all at 0,
// none inside its pod; the seed picks the permutation and repeats it; the
// committed 1,024-node matrix is what the command in its scenario writes.
func TestPermutation(t *testing.T) {
	for _, c := range []struct{ nodes, pod int }{{16, 4}, {1024, 64}, {6, 0}, {4, 2}} {
		p := Permutation{Nodes: c.nodes, PodSize: c.pod, Bytes: 2_000_000, Seed: 1}
		text, err := p.Generate()
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		m, err := ParseMatrix("perm.cm", text)
		if err != nil {
			t.Fatal(err)
		}
		in := map[int]int{}
		pod := max(c.pod, 1)
		for _, f := range m.Flows {
			in[f.Dst]++
			if f.Src/pod == f.Dst/pod || f.Trigger != 0 || f.StartPs != 0 || f.Size != 2_000_000 {
				t.Errorf("%d nodes in pods of %d: flow %+v", c.nodes, c.pod, f)
			}
		}
		if len(m.Flows) != c.nodes || len(in) != c.nodes {
			t.Errorf("%d nodes: %d flows into %d nodes", c.nodes, len(m.Flows), len(in))
		}
		again, _ := p.Generate()
		p.Seed = 2
		other, _ := p.Generate()
		if string(again) != string(text) || (c.nodes > 4 && string(other) == string(text)) {
			t.Errorf("%d nodes: seed 1 twice differs, or seed 2 repeats it", c.nodes)
		}
	}
	for _, bad := range []Permutation{{Nodes: 1, Bytes: 1}, {Nodes: 8, PodSize: 3, Bytes: 1}, {Nodes: 8, PodSize: 8, Bytes: 1}, {Nodes: 8, Bytes: 0}} {
		if _, err := bad.Generate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	want, err := Permutation{Nodes: 1024, PodSize: 64, Bytes: 2_000_000, Seed: 1}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("../scenarios/perm1024.cm"); err != nil || string(got) != string(want) {
		t.Errorf("scenarios/perm1024.cm is not what homatb cm permutation writes (%v)", err)
	}
}
