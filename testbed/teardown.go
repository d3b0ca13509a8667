package testbed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/homatb/homatb/testbed/cleanup"
)

// teardown stops agents, the network and every process, and then checks by
// tag that nothing is left, removing what is. It is bounded by
// TeardownTimeout however the run ended.
func (r *run) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.opt.TeardownTimeout)
	defer cancel()
	var errs []error
	if r.simRecords != nil {
		// An experiment that failed or was interrupted leaves rows with
		// the writer goroutine, which the records keep as an emulated
		// run's do.
		errs = append(errs, r.simRecords.Close())
	}
	if r.records != nil {
		errs = append(errs, r.records.close())
	}
	if r.ctl != nil {
		if err := r.ctl.Close(); err != nil {
			r.log.Warn("controller close", "err", err)
		}
	}
	if r.sim != nil {
		return errors.Join(errs...) // nothing of the host's to remove
	}
	actx, acancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	r.agents.shutdown(actx)
	acancel()
	if r.runner != nil {
		// Leave two seconds of the budget for the sweep below.
		sctx, scancel := context.WithTimeout(ctx, max(r.opt.TeardownTimeout-3500*time.Millisecond, time.Second))
		if err := r.runner.Stop(sctx); err != nil {
			r.log.Warn("runner stop", "err", err)
		}
		scancel()
	}
	// After the agents: their sockets keep a control until they close.
	if err := r.ccs.Close(); err != nil {
		errs = append(errs, err)
	}
	left, err := cleanup.Find(r.opt.Registry, r.tag)
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range left {
		l.Alive = false // ours: the owner is this process
		l.Files = nil   // the registration is removed by Run
		if l.Empty() {
			continue
		}
		r.log.Warn("removing leftovers", "what", l.String())
		if err := cleanup.Remove(ctx, l, 500*time.Millisecond, true); err != nil {
			errs = append(errs, err)
		}
	}
	if r.sockDir != filepath.Join(r.dir, "agents") {
		_ = os.RemoveAll(r.sockDir)
	}
	return errors.Join(errs...)
}
