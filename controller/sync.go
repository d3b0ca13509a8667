package controller

import (
	"bytes"
	"context"
	"fmt"

	"github.com/homatb/homatb/controller/p4rtclient"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"
)

// Sync brings every switch's tables to the entries of the topology and
// policy without re-pushing the pipeline, so counters and registers keep
// counting: it reads each switch, deletes entries that should not be there,
// modifies those whose action differs, inserts the missing ones, and
// verifies. Use it to change the policy between experiments.
func (f *Switches) Sync(ctx context.Context, policy Policy) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(programParallel) // as Program: each switch searches the topology
	for _, sw := range f.topo.Switches {
		g.Go(func() error {
			if err := f.syncSwitch(gctx, sw.Name, policy); err != nil {
				return fmt.Errorf("switch %q: %w", sw.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func (f *Switches) syncSwitch(ctx context.Context, name string, policy Policy) error {
	c := f.clients[name]
	want, err := f.topo.switchEntries(name, policy)
	if err != nil {
		return err
	}
	got, err := c.ReadEntries(ctx, "")
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	plan, err := planSync(c.Schema(), want, got)
	if err != nil {
		return err
	}
	// Deletes, modifies and inserts go in separate Writes: the spec lets a
	// server reorder the updates of one batch.
	if err := c.Delete(ctx, plan.Delete...); err != nil {
		return err
	}
	if err := c.Modify(ctx, plan.Modify...); err != nil {
		return err
	}
	if err := c.Insert(ctx, plan.Insert...); err != nil {
		return err
	}
	if err := c.SetDefault(ctx, loadBalanceDefault(policy, name)); err != nil {
		return err
	}
	if err := f.programMeters(ctx, name, policy.Defences); err != nil {
		return err
	}
	f.log.Info("switch synced", "switch", name, "deleted", len(plan.Delete), "modified", len(plan.Modify), "inserted", len(plan.Insert))
	if err := f.verifySwitch(ctx, name, want); err != nil {
		return err
	}
	return f.verifyMultipath(ctx, name, policy)
}

// syncPlan is what turns one set of table entries into another.
type syncPlan struct {
	Delete, Modify, Insert []p4rtclient.Entry
}

// planSync compares entries by key (table, match, priority): keys only in got
// are deleted, keys only in want inserted, and keys in both whose action or
// parameters differ modified.
func planSync(s *p4rtclient.Schema, want, got []p4rtclient.Entry) (syncPlan, error) {
	type encoded struct {
		e    p4rtclient.Entry
		full []byte
	}
	index := func(es []p4rtclient.Entry) (map[string]encoded, []string, error) {
		m := map[string]encoded{}
		var order []string
		for _, e := range es {
			te, err := s.TableEntry(e)
			if err != nil {
				return nil, nil, err
			}
			full, err := proto.MarshalOptions{Deterministic: true}.Marshal(te)
			if err != nil {
				return nil, nil, fmt.Errorf("marshal %v: %w", e, err)
			}
			k := p4rtclient.EntryKey(te)
			if _, dup := m[k]; !dup {
				order = append(order, k)
			}
			m[k] = encoded{e, full}
		}
		return m, order, nil
	}
	w, worder, err := index(want)
	if err != nil {
		return syncPlan{}, err
	}
	g, gorder, err := index(got)
	if err != nil {
		return syncPlan{}, fmt.Errorf("entry read back: %w", err)
	}
	var p syncPlan
	for _, k := range gorder {
		if _, keep := w[k]; !keep {
			p.Delete = append(p.Delete, g[k].e)
		}
	}
	for _, k := range worder {
		have, ok := g[k]
		switch {
		case !ok:
			p.Insert = append(p.Insert, w[k].e)
		case !bytes.Equal(have.full, w[k].full):
			p.Modify = append(p.Modify, w[k].e)
		}
	}
	return p, nil
}
