package testbed

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/simulate"
)

// startSimulated programs the simulated switches and takes the simulated
// network's parts for the run's: its controller, its switches'
// statistics, an agent per host and its clock. The experiments then run
// as emulated ones do.
func (r *run) startSimulated(ctx context.Context) error {
	out := &simRecords{records: r.records, servedPath: filepath.Join(r.dir, rundir.ServedRPCs().File)}
	sim, err := simulate.Start(ctx, simulate.Config{Plan: r.plan, Layout: r.layout, Fabric: r.fab, Calibration: r.calib,
		Dir: r.dir, Log: r.log, HostNIC: r.opt.HostNIC, Records: out})
	if err != nil {
		return err
	}
	r.sim, r.ctl, r.time = sim, sim, sim
	for _, h := range r.layout.Hosts {
		r.agents.add(h.Name, sim.Agent(h.Name))
	}
	for _, sw := range r.layout.Switches {
		r.stats[sw.Name] = sim.SwitchStats(sw.Name)
	}
	r.postcards = r.plan.Base.Switch.PostcardsOn()
	return nil
}

// simRecords writes a simulated experiment's records to the run's
// rpcs.csv and served.csv as each becomes final (simulate.Records: a long
// experiment's records do not fit in memory); served.csv is opened at the
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

// Close flushes both files' rows and closes served.csv.
func (s *simRecords) Close() error {
	s.records.mu.Lock()
	err := s.records.w.Flush()
	s.records.mu.Unlock()
	if s.served != nil {
		err = errors.Join(err, s.servedW.Flush(), s.served.Close())
		s.served = nil
	}
	return err
}
