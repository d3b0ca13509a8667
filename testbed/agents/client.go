// Package agents is the orchestrator's side of the host agents
// (hostagent/agent): the gRPC client of their control API, over a Unix
// socket into a host's namespace or over (mutual) TLS to another machine,
// every call bounded; the Configure requests a run sends (transport
// parameters with the calibrated values); and the BPF TCP congestion
// controls a run registers in the kernel its agents share.
package agents

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
	"github.com/homatb/homatb/rundir"
)

// Client is one host agent reached over its Unix socket (Dial) or over
// the network (DialRemote): the gRPC client
// of the control API (hostagent/agentpb) the orchestrator uses.
type Client struct {
	host   string
	socket string
	conn   *grpc.ClientConn
	api    agentpb.AgentClient
	// clockOffset is the agent's clock less the orchestrator's, for an
	// agent on another machine (DialRemote): Configure moves the clients'
	// shared start instant onto the agent's clock by it.
	clockOffset time.Duration
	// remote agents were started by a person (or systemd) and serve run
	// after run: the run closes its connection and leaves them running.
	remote bool
}

// Dial waits for the agent's socket to appear and answer Status; the
// agent process is started by the Mininet runner inside the host's
// namespace, and a filesystem socket crosses namespaces.
func Dial(ctx context.Context, host, socket string, exited <-chan struct{}) (*Client, error) {
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
	a := &Client{host: host, socket: socket, conn: conn, api: agentpb.NewAgentClient(conn)}
	for {
		if _, err := a.Status(ctx); err == nil {
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
	// CallTimeout bounds one call (a Stop, besides its drain).
	CallTimeout = 10 * time.Second
	// FetchTimeout bounds handing over one experiment's file.
	FetchTimeout = time.Minute
)

// Status is the agent's state and counters now.
func (a *Client) Status(ctx context.Context) (*agentpb.StatusReply, error) {
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

// Configure sets the agent up for an experiment; a client's start instant
// is moved onto the agent's clock (Probe measured its offset).
func (a *Client) Configure(ctx context.Context, req *agentpb.ConfigureRequest) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
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

// Start starts the configured client workload.
func (a *Client) Start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if _, err := a.api.Start(ctx, &agentpb.StartRequest{}); err != nil {
		return fmt.Errorf("start on %s: %w", a.host, err)
	}
	return nil
}

// Stop ends the client workload after drain and returns its books.
func (a *Client) Stop(ctx context.Context, drain time.Duration) (*agentpb.Counters, error) {
	ctx, cancel := context.WithTimeout(ctx, drain+CallTimeout)
	defer cancel()
	rep, err := a.api.Stop(ctx, &agentpb.StopRequest{DrainMs: uint32(drain / time.Millisecond)})
	if err != nil {
		return nil, fmt.Errorf("stop on %s: %w", a.host, err)
	}
	return rep.GetCounters(), nil
}

// Fetch streams an experiment's file into w: file is one of agentpb's
// File* names (records, TCP samples, served RPCs).
func (a *Client) Fetch(ctx context.Context, exp, file string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
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

// Shutdown asks the agent to exit, briefly, and closes the connection; the
// runner kills it if it does not go. A remote agent is only disconnected.
func (a *Client) Shutdown(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if !a.remote {
		_, _ = a.api.Shutdown(ctx, &agentpb.ShutdownRequest{})
	}
	_ = a.conn.Close()
}

// Close closes the connection and leaves the agent as it is.
func (a *Client) Close() error { return a.conn.Close() }

// DialRemote reaches an agent a person started on another machine
// (`homatb agent --listen`) at its control address: with the run's client
// credentials when tlsCfg is set (mutual TLS), else in plain text, which
// validation allows only on loopback. It retries until the agent answers
// Status or ctx ends; a refused handshake says so.
func DialRemote(ctx context.Context, host, addr string, tlsCfg *tls.Config) (*Client, error) {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("agent %s at %s: %w", host, addr, err)
	}
	a := &Client{host: host, socket: addr, conn: conn, api: agentpb.NewAgentClient(conn), remote: true}
	var last error // the most telling error: a refused connection over a timeout
	for {
		_, err := a.Status(ctx)
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

// ClockEstimate is an agent's clock less the orchestrator's, and the bound
// on its error (half the round trip it was measured over).
type ClockEstimate struct {
	Offset, Bound time.Duration
}

// clockSamples is how many Status exchanges a clock estimate takes; the
// one with the shortest round trip wins, as in NTP's clock filter.
const clockSamples = 16

// Probe asks the agent to describe its machine (with the NIC holding
// dataAddr) and estimates its clock offset: in each exchange the agent
// reads its clock just before replying, taken for the midpoint of the
// round trip (t1 = t2 in NTP's ((t1-t0)+(t2-t3))/2). The estimate is kept
// for Configure.
func (a *Client) Probe(ctx context.Context, dataAddr string) (*agentpb.Machine, ClockEstimate, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	first, err := a.api.Status(ctx, &agentpb.StatusRequest{MachineFor: dataAddr})
	if err != nil {
		return nil, ClockEstimate{}, fmt.Errorf("agent %s: describe machine: %w", a.host, err)
	}
	rep, err := first.Recv()
	if err != nil {
		return nil, ClockEstimate{}, fmt.Errorf("agent %s: describe machine: %w", a.host, err)
	}
	best := ClockEstimate{Bound: time.Duration(math.MaxInt64)}
	for range clockSamples {
		t0 := time.Now()
		st, err := a.api.Status(ctx, &agentpb.StatusRequest{})
		if err != nil {
			return nil, ClockEstimate{}, fmt.Errorf("agent %s: clock: %w", a.host, err)
		}
		r, err := st.Recv()
		t3 := time.Now()
		if err != nil {
			return nil, ClockEstimate{}, fmt.Errorf("agent %s: clock: %w", a.host, err)
		}
		rtt := t3.Sub(t0) // monotonic
		if half := rtt / 2; half < best.Bound {
			mid := t0.UnixNano() + rtt.Nanoseconds()/2
			best = ClockEstimate{Offset: time.Duration(r.GetUnixNs() - mid), Bound: half}
		}
	}
	a.clockOffset = best.Offset
	return rep.GetMachine(), best, nil
}

// FollowGauges reads the agent's Status stream until ctx ends and hands
// the Homa gauges of each reply to emit as a hosts.csv row of experiment
// exp, as it arrives: nothing is kept, however long the experiment. An
// error of emit ends the stream and is returned.
func (a *Client) FollowGauges(ctx context.Context, exp string, interval time.Duration, emit func(rundir.HostSample) error) error {
	st, err := a.api.Status(ctx, &agentpb.StatusRequest{IntervalMs: uint32(max(1, interval.Milliseconds()))})
	if err != nil {
		return err
	}
	for {
		rep, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		tr := rep.GetCounters().GetTransport()
		if err := emit(rundir.HostSample{Experiment: exp, Host: a.host, UnixNs: rep.GetUnixNs(),
			Active: tr[rundir.CounterActiveMessages], Incoming: tr[rundir.CounterIncomingBytes]}); err != nil {
			return err
		}
	}
}
