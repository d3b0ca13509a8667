package testbed

import (
	"context"
	"path/filepath"

	"github.com/homatb/homatb/rundir"
)

// simulate runs the experiment in virtual time on the run's simulated
// network, with the roles and manifest entry newExperiment made, and
// records it as an emulated one is: its rows in rpcs.csv and served.csv,
// its entry in the manifest.
func (x *experimentRun) simulate(ctx context.Context) error {
	r := x.r
	out, err := r.sim.Experiment(ctx, x.e, x.roles)
	if err != nil {
		return err
	}
	x.rec.Started, x.rec.Ended, x.rec.Fidelity = out.Started, out.Ended, out.Fidelity
	x.rec.RPCs, x.rec.TransportCounters, x.rec.Hosts = out.RPCs, out.Counters, out.Hosts
	x.rec.Incomplete = false
	if err := r.records.write(out.Rows, ""); err != nil {
		return err
	}
	if len(out.Served) > 0 {
		err := appendRows(filepath.Join(r.dir, rundir.ServedRPCs().File), rundir.ServedRPCs(), func(w *rundir.CSVWriter[rundir.Served]) error {
			for i := range out.Served {
				if err := w.Write(&out.Served[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return x.record(ctx)
}
