package agent

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestMatrixOverTCP runs workloads/testdata/triggers.cm (every trigger
// kind, fired across hosts) among four in-process agents over
// loopback TCP: every flow ends, the notifications are booked, and the
// records show no triggered flow started before its trigger fired.
func TestMatrixOverTCP(t *testing.T) {
	text, err := os.ReadFile("../../workloads/testdata/triggers.cm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := workloads.ParseMatrix("triggers.cm", text)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(200 * time.Millisecond).UnixNano()
	apis, hosts := startMembers(t, "cm", m.Nodes, func(i int, targets, hosts []string) *agentpb.Collective {
		return &agentpb.Collective{
			Phase: "graph", Kind: workloads.KindConnectionMatrix, Targets: targets, Hosts: hosts, Rank: uint32(i),
			Matrix: text, MatrixFile: "triggers.cm", Iterations: 1, StartUnixNs: start, DurationMs: 20_000,
		}
	})
	// Every flow and the 4 notifications (counted in the agents' RPCs too)
	// answered.
	completed := func() (n uint64) {
		for _, api := range apis {
			n += statusOnce(t, api).GetCompleted()
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); completed() < uint64(len(m.Flows)+4) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	rows := stopMembers(t, apis, "cm", hosts)
	flows, notes := map[int64]rundir.RPC{}, map[int64]int{}
	for _, r := range rows {
		if r.Matrix != "graph" || r.Status != rundir.StatusCompleted {
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
	if got := flows[4].SentNs - start; got < int64(time.Millisecond) {
		t.Errorf("flow 4 sent %v after the start, want its start time of 1 ms (1e9 ps)", time.Duration(got))
	}
	n, err := rundir.CheckMatrixOrder(rows, m)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("checked %d triggered flows, want 5", n)
	}
}

// TestBadMatrixPart: a part whose matrix does not parse, does not fit its
// members or carries a flow over the transport's limit is refused with
// one line naming the field and, for the matrix, its FILE:LINE.
func TestBadMatrixPart(t *testing.T) {
	svc := NewService(t.Context(), "h1", t.TempDir(), nil, nil)
	t.Cleanup(svc.Close)
	two := []string{"10.0.0.1:4000", "10.0.0.2:4000"}
	for _, c := range []struct {
		name, matrix string
		targets      []string
		want         string
	}{
		{"bad line", "Nodes 2\nConnections 1\n0->1 start 0 size 10 colour red\n", two, `collectives[0].matrix = "x.cm": x.cm:3: unknown key "colour"`},
		{"nodes and members", "Nodes 3\nConnections 1\n0->1 start 0 size 10\n", two, "expected one member per node of the matrix's 3"},
		{"too large", "Nodes 2\nConnections 1\n0->1 start 0 size 2000000000\n", two, "x.cm:3: flow 1 is 2000000000 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.Configure(t.Context(), &agentpb.ConfigureRequest{
				Experiment: "bad", Transport: agentpb.Transport_TRANSPORT_TCP, ServerPorts: []uint32{4000},
				Collectives: []*agentpb.Collective{{Phase: "g", Kind: workloads.KindConnectionMatrix, Targets: c.targets,
					Hosts: []string{"h1", "h2"}, Matrix: []byte(c.matrix), MatrixFile: "x.cm", Iterations: 1}},
			})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("error %v, want InvalidArgument", err)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, c.want)
			}
		})
	}
}
