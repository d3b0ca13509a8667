// Package agent is the homatb host agent: it runs inside one host's network
// namespace, serves the agentpb.Agent control API (gRPC on a Unix socket,
// optionally TCP), drives client workloads through a Transport (kernel TCP
// or Homa), answers as a server, and streams one record per RPC to a CSV
// file in the rpcs.csv format of docs/formats.md.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/homatb/homatb/hostagent/agentpb"
)

// Options configures Run.
type Options struct {
	// Socket is the Unix socket path of the control API (required unless
	// Listen is set).
	Socket string
	// Listen is an optional TCP address ("host:port") for the control API.
	Listen string
	// Name is the host name used in records.
	Name string
	// RecordsDir receives one records file per experiment.
	RecordsDir string
	Logger     *slog.Logger
	// Ready, if set, is called once the control API is listening.
	Ready func()
}

// gracePeriod is how long exit waits for open control calls.
const gracePeriod = 2 * time.Second

// Run serves the control API until ctx ends or a Shutdown RPC arrives.
func Run(ctx context.Context, o Options) error {
	if o.Socket == "" && o.Listen == "" {
		return errors.New("agent: need a control socket (--socket) or TCP address (--listen)")
	}
	if o.Name == "" {
		return errors.New("agent: need a host name (--name)")
	}
	if o.RecordsDir == "" {
		o.RecordsDir = os.TempDir()
	}
	if err := os.MkdirAll(o.RecordsDir, 0o755); err != nil {
		return fmt.Errorf("agent: records directory: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	if o.Socket != "" {
		ln, err := listenUnix(o.Socket)
		if err != nil {
			return err
		}
		lns = append(lns, ln)
	}
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("agent: control listen %s: %w", o.Listen, err)
		}
		lns = append(lns, ln)
	}

	svc := NewService(ctx, o.Name, o.RecordsDir, log, cancel)
	defer svc.Close()
	gs := grpc.NewServer()
	agentpb.RegisterAgentServer(gs, svc)
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		log.Info("control API listening", "addr", ln.Addr().String(), "name", o.Name)
		go func() { errc <- gs.Serve(ln) }()
	}
	if o.Ready != nil {
		o.Ready()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("agent: control API: %w", err)
	}
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(gracePeriod):
		gs.Stop()
	}
	if o.Socket != "" {
		os.Remove(o.Socket)
	}
	log.Info("agent exiting")
	return err
}

// listenUnix binds the control socket. A socket file left by a dead agent
// is removed; one that still answers belongs to a live agent and is kept.
func listenUnix(path string) (net.Listener, error) {
	if _, err := os.Stat(path); err == nil {
		c, derr := net.DialTimeout("unix", path, time.Second)
		if derr == nil {
			c.Close()
			return nil, fmt.Errorf("agent: socket %s is served by a live agent", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("agent: removing stale socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("agent: control socket %s: %w", path, err)
	}
	return ln, nil
}
