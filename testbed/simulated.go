package testbed

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/homatb/homatb/rundir"
)

// simulate runs the experiment in virtual time on the run's simulated
// network, with the roles and manifest entry newExperiment made, and
// records it as an emulated one is: its rows in rpcs.csv and served.csv,
// written as each becomes final (a long experiment's records do not fit
// in memory), its entry in the manifest.
func (x *experimentRun) simulate(ctx context.Context) error {
	r := x.r
	out := &simRecords{records: r.records, servedPath: filepath.Join(r.dir, rundir.ServedRPCs().File)}
	err := r.sim.Experiment(ctx, x.e, x.roles, &x.rec, out)
	if err = errors.Join(err, out.close()); err != nil {
		return err
	}
	if err := x.compactRecords(); err != nil {
		return err
	}
	x.rec.Incomplete = false
	return x.record(ctx)
}

// simRecords writes a simulated experiment's records to the run's
// rpcs.csv and served.csv (simulate.Records); served.csv is opened at the
// first answer, so an experiment without any leaves no file.
type simRecords struct {
	records    *recordsFile
	servedPath string
	served     *os.File
	servedW    *rundir.CSVWriter[rundir.Served]
}

func (s *simRecords) RPC(row *rundir.RPC) error {
	s.records.mu.Lock()
	defer s.records.mu.Unlock()
	return s.records.put(row, "")
}

func (s *simRecords) Served(row *rundir.Served) error {
	if s.served == nil {
		f, w, err := openAppend(s.servedPath, rundir.ServedRPCs())
		if err != nil {
			return err
		}
		s.served, s.servedW = f, w
	}
	return s.servedW.Write(row)
}

// close flushes both files' rows and closes served.csv.
func (s *simRecords) close() error {
	s.records.mu.Lock()
	err := s.records.w.Flush()
	s.records.mu.Unlock()
	if s.served != nil {
		err = errors.Join(err, s.servedW.Flush(), s.served.Close())
	}
	return err
}
