package testbed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/homatb/homatb/hostagent/agentpb"
)

// agent is one host agent reached over its Unix socket: the gRPC client
// of the control API (hostagent/agentpb) the orchestrator uses.
type agent struct {
	host   string
	socket string
	conn   *grpc.ClientConn
	api    agentpb.AgentClient
	// clockOffset is the agent's clock less the orchestrator's, for an
	// agent on another machine (external.go): configure moves the clients'
	// shared start instant onto the agent's clock by it.
	clockOffset time.Duration
	// remote agents were started by a person (or systemd) and serve run
	// after run: the run closes its connection and leaves them running.
	remote bool
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
	if start := req.GetClient().GetStartUnixNs(); start != 0 && a.clockOffset != 0 {
		req = proto.CloneOf(req)
		req.Client.StartUnixNs = start + a.clockOffset.Nanoseconds()
	}
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
// runner kills it if it does not go. A remote agent is only disconnected.
func (a *agent) shutdown(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if !a.remote {
		_, _ = a.api.Shutdown(ctx, &agentpb.ShutdownRequest{})
	}
	_ = a.conn.Close()
}

// dialRemoteAgent reaches an agent a person started on another machine
// (`homatb agent --listen`) at its control address: with the run's client
// credentials when tlsCfg is set (mutual TLS), else in plain text, which
// validation allows only on loopback. It retries until the agent answers
// Status or ctx ends; a refused handshake says so.
func dialRemoteAgent(ctx context.Context, host, addr string, tlsCfg *tls.Config) (*agent, error) {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("agent %s at %s: %w", host, addr, err)
	}
	a := &agent{host: host, socket: addr, conn: conn, api: agentpb.NewAgentClient(conn), remote: true}
	var last error // the most telling error: a refused connection over a timeout
	for {
		_, err := a.status(ctx)
		if err == nil {
			return a, nil
		}
		if last == nil || status.Code(errors.Unwrap(err)) != codes.DeadlineExceeded {
			last = err
		}
		if ctx.Err() != nil || strings.Contains(err.Error(), "tls:") {
			_ = conn.Close()
			if strings.Contains(err.Error(), "tls:") {
				return nil, fmt.Errorf("agent %s at %s refused the TLS handshake: is it started with this run's agent.pem and ca.pem, and the scenario's certs the same `homatb certs` output? %w", host, addr, err)
			}
			if tlsCfg == nil {
				// An agent serving TLS drops a plain-text client unanswered.
				return nil, fmt.Errorf("agent %s not answering at %s in plain text (if it listens with --tls-*, name the run's credentials in topology.external.certs): %w", host, addr, last)
			}
			return nil, fmt.Errorf("agent %s not answering at %s: %w", host, addr, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// clockEstimate is an agent's clock less the orchestrator's, and the bound
// on its error (half the round trip it was measured over).
type clockEstimate struct {
	offset, bound time.Duration
}

// clockSamples is how many Status exchanges a clock estimate takes; the
// one with the shortest round trip wins, as in NTP's clock filter.
const clockSamples = 16

// probe asks the agent to describe its machine (with the NIC holding
// dataAddr) and estimates its clock offset: in each exchange the agent
// reads its clock just before replying, taken for the midpoint of the
// round trip (t1 = t2 in NTP's ((t1-t0)+(t2-t3))/2). The estimate is kept
// for configure.
func (a *agent) probe(ctx context.Context, dataAddr string) (*agentpb.Machine, clockEstimate, error) {
	ctx, cancel := context.WithTimeout(ctx, agentCallTimeout)
	defer cancel()
	first, err := a.api.Status(ctx, &agentpb.StatusRequest{MachineFor: dataAddr})
	if err != nil {
		return nil, clockEstimate{}, fmt.Errorf("agent %s: describe machine: %w", a.host, err)
	}
	rep, err := first.Recv()
	if err != nil {
		return nil, clockEstimate{}, fmt.Errorf("agent %s: describe machine: %w", a.host, err)
	}
	best := clockEstimate{bound: time.Duration(math.MaxInt64)}
	for range clockSamples {
		t0 := time.Now()
		st, err := a.api.Status(ctx, &agentpb.StatusRequest{})
		if err != nil {
			return nil, clockEstimate{}, fmt.Errorf("agent %s: clock: %w", a.host, err)
		}
		r, err := st.Recv()
		t3 := time.Now()
		if err != nil {
			return nil, clockEstimate{}, fmt.Errorf("agent %s: clock: %w", a.host, err)
		}
		rtt := t3.Sub(t0) // monotonic
		if half := rtt / 2; half < best.bound {
			mid := t0.UnixNano() + rtt.Nanoseconds()/2
			best = clockEstimate{offset: time.Duration(r.GetUnixNs() - mid), bound: half}
		}
	}
	a.clockOffset = best.offset
	return rep.GetMachine(), best, nil
}
