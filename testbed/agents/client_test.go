package agents

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/homatb/homatb/hostagent/agentpb"
)

// configureRecorder is an AgentClient that keeps the Configure requests.
type configureRecorder struct {
	agentpb.AgentClient
	got []*agentpb.ConfigureRequest
}

func (c *configureRecorder) Configure(_ context.Context, req *agentpb.ConfigureRequest, _ ...grpc.CallOption) (*agentpb.ConfigureReply, error) {
	c.got = append(c.got, req)
	return &agentpb.ConfigureReply{}, nil
}

// TestConfigureMovesStartByClockOffset: an agent whose clock runs ahead
// gets the clients' shared start instant on its own clock; the caller's
// request is left alone, and a request without a start is passed as is.
func TestConfigureMovesStartByClockOffset(t *testing.T) {
	rec := &configureRecorder{}
	a := &Client{host: "h2", api: rec, clockOffset: 250 * time.Microsecond}
	req := &agentpb.ConfigureRequest{Experiment: "x", Client: &agentpb.Workload{StartUnixNs: 1_000_000_000}}
	if err := a.Configure(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := rec.got[0].GetClient().GetStartUnixNs(); got != 1_000_250_000 {
		t.Errorf("start sent %d, want 1000250000 (250 µs later on the agent's clock)", got)
	}
	if req.GetClient().GetStartUnixNs() != 1_000_000_000 {
		t.Error("the caller's request was changed")
	}
	server := &agentpb.ConfigureRequest{Experiment: "x-server"}
	if err := a.Configure(t.Context(), server); err != nil {
		t.Fatal(err)
	}
	if rec.got[1] != server {
		t.Error("a request without a client start was copied or changed")
	}
}
