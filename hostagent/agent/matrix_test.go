package agent

import (
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/runfmt"
	"github.com/homatb/homatb/workloads"
)

// testMatrix has every trigger kind fire across hosts: node 0's flow to 1
// starts a chain by send_done (oneshot, at node 1: a notification from
// 0), an incast into node 0 releases node 0's flows by recv_done (a
// barrier, heard at node 0 itself), and node 3's two flows to 2 and 1
// start one per activation of a multishot trigger activated by two flows'
// send_done at nodes 1 and 2.
const testMatrix = `Nodes 4
Connections 9
Triggers 4
0->1 id 1 start 0 size 20000 send_done_trigger 1
1->2 id 2 trigger 1 size 30000 send_done_trigger 2
2->3 id 3 trigger 2 size 20
1->0 id 4 start 100000000000 size 40000 recv_done_trigger 3 send_done_trigger 4
2->0 id 5 start 0 size 40000 recv_done_trigger 3 send_done_trigger 4
3->0 id 6 start 0 size 40000 recv_done_trigger 3
0->2 id 7 trigger 3 size 1000
3->2 id 8 trigger 4 size 1000
3->1 id 9 trigger 4 size 1000
trigger id 1 oneshot
trigger id 2 oneshot
trigger id 3 barrier count 3
trigger id 4 multishot
`

// TestMatrixOverTCP runs testMatrix among four in-process agents over
// loopback TCP: every flow ends, the notifications are booked, and the
// records show no triggered flow started before its trigger fired.
func TestMatrixOverTCP(t *testing.T) {
	m, err := workloads.ParseMatrix("test.cm", []byte(testMatrix))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(200 * time.Millisecond).UnixNano()
	apis, hosts := startMembers(t, "cm", m.Nodes, func(i int, targets, hosts []string) *agentpb.Collective {
		return &agentpb.Collective{
			Phase: "graph", Kind: workloads.KindConnectionMatrix, Targets: targets, Hosts: hosts, Rank: uint32(i),
			Matrix: []byte(testMatrix), MatrixFile: "test.cm", Iterations: 1, StartUnixNs: start, DurationMs: 20_000,
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for i, api := range apis {
		for statusOnce(t, api).GetCompleted() < uint64(m.FlowsOf(i)) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	rows := stopMembers(t, apis, "cm", hosts)
	flows, notes := map[int64]runfmt.RPC{}, map[int64]int{}
	for _, r := range rows {
		if r.Matrix != "graph" || r.Status != runfmt.StatusCompleted {
			t.Fatalf("row %+v: want a completed message of graph", r)
		}
		if r.Flow == 0 {
			notes[r.Trigger]++
			continue
		}
		flows[r.Flow] = r
	}
	for _, f := range m.Flows {
		r, ok := flows[int64(f.ID)]
		switch {
		case !ok:
			t.Errorf("flow %d has no row", f.ID)
		case r.Client != hosts[f.Src] || r.ServerHost != hosts[f.Dst] || r.ReqBytes != max(f.Size, workloads.MinCollectiveMessage):
			t.Errorf("flow %d: row %+v", f.ID, r)
		}
	}
	// Trigger 1: flow 1's send_done at node 0, told to node 1. Trigger 2:
	// at node 1, told to node 2. Trigger 3: recv_done at node 0, its own.
	// Trigger 4: send_done at nodes 1 and 2, each told to node 3.
	if want := map[int64]int{1: 1, 2: 1, 4: 2}; len(notes) != len(want) || notes[1] != 1 || notes[2] != 1 || notes[4] != 2 {
		t.Errorf("notifications by trigger %v, want %v", notes, want)
	}
	if got := flows[4].SentNs - start; got < int64(100*time.Millisecond) {
		t.Errorf("flow 4 sent %v after the start, want its start time of 100 ms (1e11 ps)", time.Duration(got))
	}
	n, err := runfmt.CheckMatrixOrder(rows, m)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("checked %d triggered flows, want 5", n)
	}
}
