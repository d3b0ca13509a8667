package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/homatb/homatb/hostagent/agentpb"
)

// agent is one host agent reached over its Unix socket: the gRPC client
// of the control API (hostagent/agentpb) the orchestrator uses.
type agent struct {
	host   string
	socket string
	conn   *grpc.ClientConn
	api    agentpb.AgentClient
}

// dialAgent waits for the agent's socket to appear and answer Status; the
// agent process is started by the Mininet runner inside the host's
// namespace, and a filesystem socket crosses namespaces.
func dialAgent(ctx context.Context, host, socket string, exited <-chan struct{}) (*agent, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("agent %s: no socket %s: %w", host, socket, ctx.Err())
		case <-exited:
			return nil, fmt.Errorf("agent %s exited before serving", host)
		case <-time.After(20 * time.Millisecond):
		}
	}
	conn, err := grpc.NewClient("unix:"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", host, err)
	}
	a := &agent{host: host, socket: socket, conn: conn, api: agentpb.NewAgentClient(conn)}
	for {
		if _, err := a.status(ctx); err == nil {
			return a, nil
		} else if ctx.Err() != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("agent %s not answering on %s: %w", host, socket, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Every call to an agent is bounded: an agent that stops answering must
// end the run (and be reported), not hang it.
const (
	agentCallTimeout  = 10 * time.Second
	agentFetchTimeout = time.Minute
)

func (a *agent) status(ctx context.Context) (*agentpb.StatusReply, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := a.api.Status(ctx, &agentpb.StatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("agent %s status: %w", a.host, err)
	}
	rep, err := st.Recv()
	if err != nil {
		return nil, fmt.Errorf("agent %s status: %w", a.host, err)
	}
	return rep, nil
}

func (a *agent) configure(ctx context.Context, req *agentpb.ConfigureRequest) error {
	ctx, cancel := context.WithTimeout(ctx, agentCallTimeout)
	defer cancel()
	if _, err := a.api.Configure(ctx, req); err != nil {
		return fmt.Errorf("configure %s on %s: %w", req.GetExperiment(), a.host, err)
	}
	return nil
}

func (a *agent) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, agentCallTimeout)
	defer cancel()
	if _, err := a.api.Start(ctx, &agentpb.StartRequest{}); err != nil {
		return fmt.Errorf("start on %s: %w", a.host, err)
	}
	return nil
}

func (a *agent) stop(ctx context.Context, drain time.Duration) (*agentpb.Counters, error) {
	ctx, cancel := context.WithTimeout(ctx, drain+agentCallTimeout)
	defer cancel()
	rep, err := a.api.Stop(ctx, &agentpb.StopRequest{DrainMs: uint32(drain / time.Millisecond)})
	if err != nil {
		return nil, fmt.Errorf("stop on %s: %w", a.host, err)
	}
	return rep.GetCounters(), nil
}

// fetch streams an experiment's records into w.
func (a *agent) fetch(ctx context.Context, exp, file string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, agentFetchTimeout)
	defer cancel()
	st, err := a.api.FetchRecords(ctx, &agentpb.FetchRecordsRequest{Experiment: exp, File: file})
	if err != nil {
		return fmt.Errorf("agent %s: fetch %s: %w", a.host, exp, err)
	}
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("agent %s: fetch %s: %w", a.host, exp, err)
		}
		if _, err := w.Write(c.GetData()); err != nil {
			return err
		}
	}
}

// shutdown asks the agent to exit, briefly, and closes the connection; the
// runner kills it if it does not go.
func (a *agent) shutdown(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, _ = a.api.Shutdown(ctx, &agentpb.ShutdownRequest{})
	_ = a.conn.Close()
}
