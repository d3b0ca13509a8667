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
	rows, served, err := r.sim.Experiment(ctx, x.e, x.roles, &x.rec)
	if err != nil {
		return err
	}
	x.rec.Incomplete = false
	if err := r.records.write(rows, ""); err != nil {
		return err
	}
	if len(served) > 0 {
		err := appendRows(filepath.Join(r.dir, rundir.ServedRPCs().File), rundir.ServedRPCs(), func(w *rundir.CSVWriter[rundir.Served]) error {
			for i := range served {
				if err := w.Write(&served[i]); err != nil {
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
