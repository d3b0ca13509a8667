package testbed

import (
	"context"
	"path/filepath"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
)

// simExperiment runs one experiment in virtual time on the run's simulated
// network and records it as an emulated one is: its rows in rpcs.csv and
// served.csv, its entry in the manifest.
func (r *run) simExperiment(ctx context.Context, e *scenario.Experiment) error {
	r.prog.begin(e.Name)
	rec, rows, served, err := r.sim.Experiment(ctx, e)
	if err != nil {
		return err
	}
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
	x := experimentRun{r: r, rec: rec}
	return x.record(ctx)
}
