package agent

import (
	"strconv"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// TestCollectivesOverTCP runs each collective kind among four in-process
// agents over loopback TCP and checks the books, that every iteration
// completed, and from the records that no step started before its input
// arrived.
func TestCollectivesOverTCP(t *testing.T) {
	const members, iterations = 4, 5
	for _, kind := range workloads.CollectiveKinds {
		t.Run(kind, func(t *testing.T) {
			start := time.Now().Add(200 * time.Millisecond).UnixNano()
			apis, hosts := startMembers(t, "coll", members, func(i int, targets, hosts []string) *agentpb.Collective {
				return &agentpb.Collective{
					Phase: "train", Kind: kind, Targets: targets, Hosts: hosts, Rank: uint32(i),
					Bytes: 256 << 10, Iterations: iterations, ComputeNs: uint64(time.Millisecond), JitterNs: uint64(500 * time.Microsecond),
					Seed: 7, StartUnixNs: start, DurationMs: 20_000,
				}
			})
			deadline := time.Now().Add(20 * time.Second)
			for i, api := range apis {
				p := workloads.PlanCollective(kind, members, i, 256<<10)
				want := uint64(p.Messages()) * iterations
				for statusOnce(t, api).GetCompleted() < want && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
			}
			rows := stopMembers(t, apis, "coll", hosts)
			steps := map[int64]int{}
			for _, r := range rows {
				if r.Collective != "train" || r.Status != rundir.StatusCompleted || r.ServerHost == r.Client {
					t.Fatalf("row %+v: want a completed step of train to another host", r)
				}
				steps[r.Iteration]++
			}
			perIter := map[string]int{workloads.KindRingAllReduce: 24, workloads.KindTreeAllReduce: 24, workloads.KindAllGather: 12, workloads.KindReduceScatter: 12, workloads.KindAllToAll: 12, workloads.KindIncastBarrier: 6}[kind]
			for i := range int64(iterations) {
				if steps[i] != perIter {
					t.Errorf("iteration %d: %d step messages, want %d", i, steps[i], perIter)
				}
			}
			n, err := rundir.CheckCollectiveOrder(rows, func(string) string { return kind })
			if err != nil {
				t.Fatal(err)
			}
			if kind != workloads.KindAllToAll && n == 0 {
				t.Error("no dependent step checked")
			}
		})
	}
}

// startMembers starts n in-process agents h0.. serving on loopback TCP,
// configures each with experiment exp and the collective part(i, targets,
// hosts) gives it, and starts them.
func startMembers(t *testing.T, exp string, n int, part func(i int, targets, hosts []string) *agentpb.Collective) ([]agentpb.AgentClient, []string) {
	t.Helper()
	ctx := t.Context()
	var apis []agentpb.AgentClient
	var targets, hosts []string
	for i := range n {
		api, _ := startAgent(t, "h"+strconv.Itoa(i))
		apis = append(apis, api)
		targets = append(targets, "127.0.0.1:"+strconv.Itoa(int(freePort(t))))
		hosts = append(hosts, "h"+strconv.Itoa(i))
	}
	for i, api := range apis {
		port, _ := strconv.Atoi(targets[i][len("127.0.0.1:"):])
		if _, err := api.Configure(ctx, &agentpb.ConfigureRequest{
			Experiment: exp, Transport: agentpb.Transport_TRANSPORT_TCP, Host: hosts[i], Address: "127.0.0.1",
			ServerPorts: []uint32{uint32(port)}, Collectives: []*agentpb.Collective{part(i, targets, hosts)},
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, api := range apis {
		if _, err := api.Start(ctx, &agentpb.StartRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	return apis, hosts
}

// stopMembers stops the agents, checks each one's books and that nothing
// failed or stayed in flight, and returns their records of exp.
func stopMembers(t *testing.T, apis []agentpb.AgentClient, exp string, hosts []string) []rundir.RPC {
	t.Helper()
	var rows []rundir.RPC
	for i, api := range apis {
		stop, err := api.Stop(t.Context(), &agentpb.StopRequest{DrainMs: 2000})
		if err != nil {
			t.Fatal(err)
		}
		raw := fetchRecords(t, api, exp)
		checkBooks(t, raw, stop.GetCounters(), "tcp")
		if c := stop.GetCounters(); c.GetFailed() != 0 || c.GetInFlight() != 0 {
			t.Errorf("%s: counters %v, want no failures or RPCs in flight", hosts[i], c)
		}
		rows = append(rows, readRows(t, rundir.RPCs(), raw)...)
	}
	return rows
}
