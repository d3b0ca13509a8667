package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/homatb/homatb/controller/p4rtclient"

	"github.com/homatb/homatb/p4"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"
)

// Switches is a connection to every switch of a topology: one primary
// Client per switch. It keeps them open so they re-push their state when a
// switch restarts, and so a Poller can read the switches during a run.
type Switches struct {
	topo    *Topology
	clients map[string]*p4rtclient.Client
	log     *slog.Logger

	mu   sync.Mutex
	down map[linkEnd]bool // ends of links SetLinkDown took down
}

// Connect validates the topology, dials every switch (with the given client
// options, e.g. p4rtclient.WithElectionID) and waits until each client is
// primary, at most the dial timeout.
func Connect(ctx context.Context, topo *Topology, opts ...p4rtclient.Option) (*Switches, error) {
	if err := topo.validate(); err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	f := &Switches{topo: topo, clients: map[string]*p4rtclient.Client{}, log: slog.New(slog.DiscardHandler), down: map[linkEnd]bool{}}
	clients := make([]*p4rtclient.Client, len(topo.Switches))
	g, gctx := errgroup.WithContext(ctx)
	for i, sw := range topo.Switches {
		g.Go(func() error {
			c, err := p4rtclient.Dial(gctx, sw.Address, sw.DeviceID, opts...)
			if err != nil {
				return fmt.Errorf("switch %q: %w", sw.Name, err)
			}
			clients[i] = c
			wctx, cancel := context.WithTimeout(gctx, c.DialTimeout())
			defer cancel()
			if err := c.WaitPrimary(wctx); err != nil {
				return fmt.Errorf("switch %q: %w", sw.Name, err)
			}
			return nil
		})
	}
	err := g.Wait()
	for i, c := range clients {
		if c != nil {
			f.clients[topo.Switches[i].Name] = c
			f.log = c.Logger() // every client got the same options
		}
	}
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}

// Client returns the client of the named switch, or nil.
func (f *Switches) Client(name string) *p4rtclient.Client { return f.clients[name] }

// Close closes every client.
func (f *Switches) Close() error {
	var errs []error
	for _, c := range f.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Program pushes the pipeline to every switch, applies BMv2 queue settings,
// installs every switch's entries (see Topology.switchEntries) and reads
// them back to verify that each switch holds exactly those entries.
func (f *Switches) Program(ctx context.Context, policy Policy) error {
	if err := policy.Validate(); err != nil {
		return err
	}
	info, err := f.topo.Pipeline.loadP4Info()
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	// Each switch's routes come from a search of the whole topology: a
	// thousand at once (a fat tree of k=32 has 1,280 switches) would hold
	// a thousand searches' maps, gigabytes.
	g.SetLimit(programParallel)
	for _, sw := range f.topo.Switches {
		g.Go(func() error {
			if err := f.programSwitch(gctx, sw, info, policy); err != nil {
				return fmt.Errorf("switch %q: %w", sw.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// programParallel is how many switches Program programs at once.
const programParallel = 32

func (f *Switches) programSwitch(ctx context.Context, sw Switch, info *p4configv1.P4Info, policy Policy) error {
	c := f.clients[sw.Name]
	var devConfig []byte
	if sw.Target == TargetBMv2 {
		var err error
		if devConfig, err = f.topo.Pipeline.loadBMv2JSON(); err != nil {
			return err
		}
	}
	// Each switch gets its own copy: the client keeps it for re-pushing.
	if err := c.SetPipeline(ctx, proto.Clone(info).(*p4configv1.P4Info), devConfig); err != nil {
		return err
	}
	if sw.Target == TargetBMv2 {
		if err := applyBMv2Queues(ctx, sw, f.topo.switchPorts(sw.Name), f.log); err != nil {
			return err
		}
	}
	entries, err := f.topo.switchEntries(sw.Name, policy)
	if err != nil {
		return err
	}
	if err := f.programMultipath(ctx, sw.Name, policy); err != nil {
		return err
	}
	if err := c.Insert(ctx, entries...); err != nil {
		return err
	}
	if err := f.programMeters(ctx, sw.Name, policy.Defences); err != nil {
		return err
	}
	f.log.Info("switch programmed", "switch", sw.Name, "addr", sw.Address, "entries", len(entries))
	if err := f.verifySwitch(ctx, sw.Name, entries); err != nil {
		return err
	}
	return f.verifyMultipath(ctx, sw.Name, policy)
}

// Verify reads every switch's tables and checks they hold exactly the
// entries the topology and policy call for.
func (f *Switches) Verify(ctx context.Context, policy Policy) error {
	var errs []error
	for _, sw := range f.topo.Switches {
		entries, err := f.topo.switchEntries(sw.Name, policy)
		if err == nil {
			err = f.verifySwitch(ctx, sw.Name, entries)
		}
		if err == nil {
			err = f.verifyMultipath(ctx, sw.Name, policy)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("switch %q: %w", sw.Name, err))
		}
	}
	return errors.Join(errs...)
}

// verifyError lists how a switch's tables differ from what was written.
type verifyError struct {
	Switch     string
	Missing    []p4rtclient.Entry // written, not read back
	Unexpected []p4rtclient.Entry // read back, not written (or different)
}

func (e *verifyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verify %s: %d entries missing, %d unexpected", e.Switch, len(e.Missing), len(e.Unexpected))
	list := func(what string, es []p4rtclient.Entry) {
		for i, x := range es {
			if i == 5 {
				fmt.Fprintf(&b, "; ...")
				return
			}
			fmt.Fprintf(&b, "; %s %v", what, x)
		}
	}
	list("missing", e.Missing)
	list("unexpected", e.Unexpected)
	return b.String()
}

func (f *Switches) verifySwitch(ctx context.Context, name string, want []p4rtclient.Entry) error {
	c := f.clients[name]
	got, err := c.ReadEntries(ctx, "")
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	return diffEntries(c.Schema(), name, want, got)
}

// diffEntries compares two sets of entries by their canonical encoding (so
// value padding, name aliases and field order do not matter) and returns a
// *verifyError naming each difference, or nil when they are equal.
func diffEntries(s *p4rtclient.Schema, name string, want, got []p4rtclient.Entry) error {
	key := func(e p4rtclient.Entry) (string, error) {
		te, err := s.TableEntry(e)
		if err != nil {
			return "", err
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(te)
		return string(b), err
	}
	count := map[string]int{}
	byKey := map[string]p4rtclient.Entry{}
	for _, e := range want {
		k, err := key(e)
		if err != nil {
			return err
		}
		count[k]++
		byKey[k] = e
	}
	ve := &verifyError{Switch: name}
	for _, e := range got {
		k, err := key(e)
		if err != nil {
			return fmt.Errorf("entry read back: %w", err)
		}
		if count[k] == 0 {
			ve.Unexpected = append(ve.Unexpected, e)
			continue
		}
		count[k]--
	}
	for _, k := range slices.Sorted(maps.Keys(count)) {
		for range count[k] {
			ve.Missing = append(ve.Missing, byKey[k])
		}
	}
	if len(ve.Missing)+len(ve.Unexpected) > 0 {
		return ve
	}
	return nil
}

func (p Pipeline) loadP4Info() (*p4configv1.P4Info, error) {
	if p.P4Info == "" {
		return p4.P4Info()
	}
	return p4rtclient.LoadP4Info(p.P4Info)
}

func (p Pipeline) loadBMv2JSON() ([]byte, error) {
	if p.BMv2JSON == "" {
		return nil, errors.New("target bmv2 needs pipeline.bmv2_json (p4c's output for p4/tor.p4: make p4c)")
	}
	b, err := os.ReadFile(p.BMv2JSON)
	if err != nil {
		return nil, fmt.Errorf("bmv2 json: %w", err)
	}
	return b, nil
}

// ResetQueuePeaks zeroes tor.p4's queue_peak register on every switch
// whose target reads registers over P4Runtime (the embedded one).
func (f *Switches) ResetQueuePeaks(ctx context.Context) error {
	var errs []error
	for _, sw := range f.topo.Switches {
		if sw.Target == TargetBMv2 {
			continue // telemetry does not read its registers either
		}
		if err := f.clients[sw.Name].ResetRegister(ctx, registerQueuePeak); err != nil {
			errs = append(errs, fmt.Errorf("switch %s: reset %s: %w", sw.Name, registerQueuePeak, err))
		}
	}
	return errors.Join(errs...)
}
