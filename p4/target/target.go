// Package target assembles homatb's embedded P4 switch: the tor.p4
// pipeline, the dataplane that runs it on network ports, and the P4Runtime
// server that programs it. `homatb switch`, the switch tests and the
// controller tests all build their switch here, so they run the same
// assembly.
package target

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/p4/p4rt"
	"github.com/homatb/homatb/p4/pipeline"
	"golang.org/x/sync/errgroup"
)

// Config is what a Switch is built from.
type Config struct {
	// DeviceID is the P4Runtime device_id.
	DeviceID uint64
	// Addr is the P4Runtime listen address, host:port; port 0 picks a free
	// one (see Switch.Addr).
	Addr string
	// Dataplane configures the ports. Nil runs the pipeline and the
	// P4Runtime server alone, for control-plane tests that hand frames to
	// the pipeline themselves.
	Dataplane *dataplane.Config
	// Logger receives the P4Runtime server's logs (the dataplane's go to
	// Dataplane.Logger); nil discards them.
	Logger *slog.Logger
}

// Switch is an embedded switch, listening but not yet serving: call Run.
type Switch struct {
	pl  *pipeline.Pipeline
	dp  *dataplane.Dataplane
	srv *p4rt.Server
	lis net.Listener
}

// New builds the pipeline, opens the P4Runtime listener and, with a
// dataplane config, the ports. The switch starts with no pipeline config,
// like simple_switch_grpc --no-p4: a controller pushes tor.p4's P4Info.
func New(cfg Config) (*Switch, error) {
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("p4runtime listen: %w", err)
	}
	s := &Switch{pl: pipeline.New(), lis: lis}
	if cfg.Dataplane != nil {
		if s.dp, err = dataplane.New(*cfg.Dataplane, s.pl); err != nil {
			return nil, errors.Join(err, lis.Close())
		}
	}
	s.srv = p4rt.NewServer(p4rt.Config{DeviceID: cfg.DeviceID, Pipeline: s.pl, Logger: cfg.Logger})
	return s, nil
}

// Addr is the address the P4Runtime server listens on.
func (s *Switch) Addr() string { return s.lis.Addr().String() }

// Pipeline is the switch's tor.p4 pipeline.
func (s *Switch) Pipeline() *pipeline.Pipeline { return s.pl }

// Dataplane is the switch's dataplane, nil when built without one.
func (s *Switch) Dataplane() *dataplane.Dataplane { return s.dp }

// Run serves P4Runtime and forwards packets until ctx ends or either part
// fails, then stops both and returns the first failure (nil after a plain
// cancel unless the dataplane reports one). It releases the listener and
// the ports.
func (s *Switch) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	if s.dp != nil {
		g.Go(func() error { return s.dp.Run(gctx) })
	}
	g.Go(func() error { return s.srv.Serve(s.lis) })
	g.Go(func() error {
		<-gctx.Done()
		s.srv.Stop()
		return nil
	})
	return g.Wait()
}
