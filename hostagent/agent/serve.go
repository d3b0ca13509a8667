// Package agent is the homatb host agent: it runs inside one host's network
// namespace, serves the agentpb.Agent control API (gRPC on a Unix socket,
// optionally TCP), drives client workloads through a Transport (kernel TCP
// or Homa), answers as a server, and streams one record per RPC to a CSV
// file in the rpcs.csv format of docs/formats.md.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/internal/runcerts"
)

// Options configures Run.
type Options struct {
	// Socket is the Unix socket path of the control API (required unless
	// Listen is set).
	Socket string
	// Listen is an optional TCP address ("host:port") for the control API.
	// Off loopback it needs TLS: the API starts traffic.
	Listen string
	// TLS, when set, serves Listen with mutual TLS (runcerts.ServerConfig:
	// only clients the run's CA signed get in). The Unix socket, reachable
	// only through the filesystem, stays plain.
	TLS *tls.Config
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
	if o.Listen != "" && o.TLS == nil && !runcerts.IsLoopback(o.Listen) {
		return fmt.Errorf("agent: --listen %s is not a loopback address, and a control API open to the network lets anyone start traffic: "+
			"give the run's credentials (--tls-cert, --tls-key, --tls-ca from `homatb certs`) or listen on 127.0.0.1", o.Listen)
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

	// One server per listener: the Unix socket is plain, TCP may be TLS.
	type served struct {
		ln net.Listener
		gs *grpc.Server
	}
	var srvs []served
	defer func() {
		for _, s := range srvs {
			s.ln.Close()
		}
	}()
	svc := NewService(ctx, o.Name, o.RecordsDir, log, cancel)
	defer svc.Close()
	newServer := func(opts ...grpc.ServerOption) *grpc.Server {
		gs := grpc.NewServer(opts...)
		agentpb.RegisterAgentServer(gs, svc)
		return gs
	}
	if o.Socket != "" {
		ln, err := listenUnix(o.Socket)
		if err != nil {
			return err
		}
		srvs = append(srvs, served{ln, newServer()})
	}
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("agent: control listen %s: %w", o.Listen, err)
		}
		var opts []grpc.ServerOption
		if o.TLS != nil {
			opts = append(opts, grpc.Creds(refusalLogger{credentials.NewTLS(o.TLS), log}))
		}
		srvs = append(srvs, served{ln, newServer(opts...)})
	}

	errc := make(chan error, len(srvs))
	for _, s := range srvs {
		log.Info("control API listening", "addr", s.ln.Addr().String(), "name", o.Name, "tls", s.ln.Addr().Network() == "tcp" && o.TLS != nil)
		go func() { errc <- s.gs.Serve(s.ln) }()
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
	var wg sync.WaitGroup
	for _, s := range srvs {
		wg.Go(func() { stopServer(s.gs) })
	}
	wg.Wait()
	if o.Socket != "" {
		os.Remove(o.Socket)
	}
	log.Info("agent exiting")
	return err
}

// stopServer lets open control calls finish, for a grace period.
func stopServer(gs *grpc.Server) {
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
}

// refusalLogger logs every control connection the TLS handshake refuses
// (no certificate, one from another CA, plain text): gRPC itself drops
// them silently, and the agent's log is where a person looks.
type refusalLogger struct {
	credentials.TransportCredentials
	log *slog.Logger
}

func (r refusalLogger) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := r.TransportCredentials.ServerHandshake(c)
	if err != nil {
		r.log.Warn("refused control connection: not the run's credentials", "remote", c.RemoteAddr().String(), "err", err)
	}
	return conn, info, err
}

// Clone keeps the logger on copies gRPC makes.
func (r refusalLogger) Clone() credentials.TransportCredentials {
	return refusalLogger{r.TransportCredentials.Clone(), r.log}
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
