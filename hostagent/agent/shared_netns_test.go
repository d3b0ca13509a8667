package agent

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// TestSharedExperimentInNamespaces configures one experiment on two
// transports in each of two agents (the Homa engine and kernel TCP, as a
// shared experiment runs them), both serving and calling the other at
// once, and checks one set of books covering both: every record's
// transport is one of the two, each transport completed RPCs, both
// transports' counters are in the host's, and a third transport of a kind
// the experiment has is refused, leaving it as it was.
func TestSharedExperimentInNamespaces(t *testing.T) {
	a, b := twoAgents(t)
	ctx := t.Context()
	const port, exp = 4000, "ns-shared"
	legs := []struct {
		tr   agentpb.Transport
		tcp  *agentpb.TcpParams
		homa *agentpb.HomaParams
		w    *agentpb.Workload
	}{
		{tr: agentpb.Transport_TRANSPORT_HOMA, homa: agentpb.NewHomaParams(homaconf.Config{LinkBps: 10_000_000_000}),
			w: &agentpb.Workload{Sizes: "fixed:200", Arrivals: "poisson", RateRps: 1000, DurationMs: 400, Seed: 21}},
		{tr: agentpb.Transport_TRANSPORT_TCP, tcp: &agentpb.TcpParams{Congestion: "cubic", ConnectionsPerPeer: 1},
			w: &agentpb.Workload{Sizes: "fixed:100000", ResponseBytes: 100, Arrivals: "poisson", RateRps: 200, DurationMs: 400, Seed: 22}},
	}
	peers := map[*nsHost]*nsHost{a: b, b: a}
	for _, h := range []*nsHost{b, a} {
		for _, l := range legs {
			w := proto.CloneOf(l.w)
			w.Targets = []string{fmt.Sprintf("%s:%d", peers[h].addr, port)}
			_, err := h.api.Configure(ctx, &agentpb.ConfigureRequest{
				Experiment: exp, Transport: l.tr, Tcp: l.tcp, Homa: l.homa,
				Host: h.ns, Address: h.addr, ServerPorts: []uint32{port}, Client: w,
			})
			if status.Code(err) == codes.Unimplemented {
				t.Skipf("transport %v not available in this build: %v", l.tr, err)
			}
			if err != nil {
				t.Fatalf("%s: configure %v beside the other: %v", h.ns, l.tr, err)
			}
		}
	}
	// A second kernel TCP in the same experiment is refused before
	// anything changes: the experiment stays configured as it was.
	_, err := a.api.Configure(ctx, &agentpb.ConfigureRequest{Experiment: exp, Transport: agentpb.Transport_TRANSPORT_TCP,
		Tcp: &agentpb.TcpParams{Congestion: "dctcp"}, Host: a.ns, Address: a.addr, ServerPorts: []uint32{port + 1}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a second kernel TCP beside the first: got %v, want InvalidArgument", err)
	}
	if st := statusReplyOnce(t, a.api).GetState(); st != StateConfigured {
		t.Fatalf("after the refused Configure the agent is %s, want still configured", st)
	}
	for _, h := range []*nsHost{a, b} {
		if _, err := h.api.Start(ctx, &agentpb.StartRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	got := map[*nsHost]*agentpb.Counters{}
	for _, h := range []*nsHost{a, b} {
		stop, err := h.api.Stop(ctx, &agentpb.StopRequest{DrainMs: 2000})
		if err != nil {
			t.Fatal(err)
		}
		got[h] = stop.GetCounters()
	}
	for _, h := range []*nsHost{a, b} {
		c := got[h]
		rows := fetchRecords(t, h.api, exp)
		col := slices.Index(rows[0], "transport")
		completed := map[string]int{}
		stCol := slices.Index(rows[0], "status")
		for _, row := range rows[1:] {
			if row[stCol] == "completed" {
				completed[row[col]]++
			}
		}
		for _, want := range []string{"homa", "tcp"} {
			if completed[want] == 0 {
				t.Errorf("%s: no %s RPC completed in the shared experiment (completed by transport: %v)", h.ns, want, completed)
			}
		}
		if len(completed) != 2 {
			t.Errorf("%s: transports %v, want homa and tcp only", h.ns, completed)
		}
		if uint64(len(rows)-1) != c.GetIssued() || c.GetIssued() != c.GetCompleted()+c.GetFailed()+c.GetInFlight() {
			t.Errorf("%s: %d records; issued %d, completed %d + failed %d + in flight %d", h.ns, len(rows)-1,
				c.GetIssued(), c.GetCompleted(), c.GetFailed(), c.GetInFlight())
		}
		tc := c.GetTransport()
		if tc["tcp_served"] == 0 || tc["homa_served"] == 0 {
			t.Errorf("%s: the host's counters lack one transport's: tcp_served %d, homa_served %d", h.ns, tc["tcp_served"], tc["homa_served"])
		}
		t.Logf("%s: completed by transport %v, served %d", h.ns, completed, c.GetServed())
	}
	for _, h := range []*nsHost{a, b} {
		if _, err := h.api.Shutdown(ctx, &agentpb.ShutdownRequest{}); err != nil {
			t.Errorf("shutdown %s: %v", h.ns, err)
		}
	}
}
