package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/homatb/homatb/hostagent/agentpb"
)

// agent is one host agent reached over its Unix socket.
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
func (a *agent) fetch(ctx context.Context, exp string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, agentFetchTimeout)
	defer cancel()
	st, err := a.api.FetchRecords(ctx, &agentpb.FetchRecordsRequest{Experiment: exp})
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

// agents is the set of a run's agents by host name.
type agents struct {
	mu sync.Mutex
	m  map[string]*agent
}

func (as *agents) add(a *agent) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.m == nil {
		as.m = map[string]*agent{}
	}
	as.m[a.host] = a
}

func (as *agents) get(host string) *agent {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.m[host]
}

// each runs f on the named hosts in parallel and returns the first error.
func (as *agents) each(ctx context.Context, hosts []string, f func(context.Context, *agent) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, h := range hosts {
		a := as.get(h)
		if a == nil {
			return fmt.Errorf("no agent on %s", h)
		}
		g.Go(func() error { return f(gctx, a) })
	}
	return g.Wait()
}

// shutdown asks every agent to exit, briefly, and closes the connections;
// the runner kills whatever does not go.
func (as *agents) shutdown(ctx context.Context) {
	as.mu.Lock()
	list := make([]*agent, 0, len(as.m))
	for _, a := range as.m {
		list = append(list, a)
	}
	as.m = nil
	as.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, _ = a.api.Shutdown(sctx, &agentpb.ShutdownRequest{})
			_ = a.conn.Close()
		}()
	}
	wg.Wait()
}
