package testbed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/simulate"
)

// startSimulated programs the simulated switches and takes the simulated
// network's parts for the run's: its controller, its switches'
// statistics, an agent per host and its clock. The experiments then run
// as emulated ones do.
func (r *run) startSimulated(ctx context.Context) error {
	out := &simRecords{records: r.records, servedPath: filepath.Join(r.dir, rundir.ServedRPCs().File)}
	r.simRecords = out
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
//
// A goroutine of its own formats and writes the rows (rowWriter), started
// at an experiment's first row and ended by Close: the event loop, which
// runs on one core, hands them over in batches and goes on. Formatting and
// writing two rows a step message were a tenth of a simulated
// collective's event loop.
type simRecords struct {
	records    *recordsFile
	servedPath string
	served     *os.File
	servedW    *rundir.CSVWriter[rundir.Served]
	w          *rowWriter // nil between experiments
}

// batchRows is how many rows of either file a batch holds: a batch is a
// few hundred kB, and the event loop sends one every few hundred steps.
const batchRows = 1024

// rowBatch is rows handed to the writer goroutine: rpcs.csv's in the order
// issued, served.csv's in the order served.
type rowBatch struct {
	rpcs   []*rundir.RPC
	served []rundir.Served
}

// rowWriter is an experiment's writer goroutine and the batch being
// filled for it.
type rowWriter struct {
	cur  *rowBatch
	full chan *rowBatch // to the goroutine
	free chan *rowBatch // written, back for reuse
	done chan error     // the goroutine's first error, once full is closed
	// err is the goroutine's first error, as soon as it has one: the rows
	// after it are not written, and RPC and Served return it.
	err atomic.Pointer[error]
}

// writerBatches is how many batches the event loop may be ahead of the
// writer goroutine before it waits for it.
const writerBatches = 4

func (s *simRecords) writer() *rowWriter {
	if s.w == nil {
		w := &rowWriter{full: make(chan *rowBatch, writerBatches), free: make(chan *rowBatch, writerBatches+1), done: make(chan error, 1)}
		w.cur = &rowBatch{}
		s.w = w
		go s.write(w)
	}
	return s.w
}

// write writes the batches w is sent, until it closes full.
func (s *simRecords) write(w *rowWriter) {
	var err error
	for b := range w.full {
		if err == nil {
			if err = s.writeBatch(b); err != nil {
				w.err.Store(&err)
			}
		}
		clear(b.rpcs)
		b.rpcs, b.served = b.rpcs[:0], b.served[:0]
		w.free <- b
	}
	w.done <- err
}

func (s *simRecords) writeBatch(b *rowBatch) error {
	if len(b.rpcs) > 0 {
		s.records.mu.Lock()
		for _, row := range b.rpcs {
			if err := s.records.put(row, ""); err != nil {
				s.records.mu.Unlock()
				return err
			}
		}
		s.records.mu.Unlock()
	}
	for i := range b.served {
		if s.served == nil {
			f, w, err := openAppend(s.servedPath, rundir.ServedRPCs())
			if err != nil {
				return err
			}
			s.served, s.servedW = f, w
		}
		if err := s.servedW.Write(&b.served[i]); err != nil {
			return err
		}
	}
	return nil
}

// send hands the batch being filled to the goroutine if it is full (or,
// with always, if it holds any row).
func (w *rowWriter) send(always bool) {
	if n := max(len(w.cur.rpcs), len(w.cur.served)); n >= batchRows || (always && n > 0) {
		w.full <- w.cur
		select {
		case w.cur = <-w.free:
		default:
			w.cur = &rowBatch{}
		}
	}
}

// failed returns the writer goroutine's error, once it has one, and then
// ends the goroutine: the experiment's later rows are not written (as
// its caller stops at the error), and the next experiment's start a
// writer afresh.
func (s *simRecords) failed() error {
	err := s.w.err.Load()
	if err == nil {
		return nil
	}
	_ = s.stop()
	return *err
}

// stop hands over the rows not yet sent and waits for the goroutine to
// write them and end; it returns the goroutine's error.
func (s *simRecords) stop() error {
	w := s.w
	if w == nil {
		return nil
	}
	w.send(true)
	close(w.full)
	s.w = nil
	return <-w.done
}

// RPC takes row, which the caller does not touch again.
func (s *simRecords) RPC(row *rundir.RPC) error {
	w := s.writer()
	w.cur.rpcs = append(w.cur.rpcs, row)
	w.send(false)
	return s.failed()
}

// Served copies row.
func (s *simRecords) Served(row *rundir.Served) error {
	w := s.writer()
	w.cur.served = append(w.cur.served, *row)
	w.send(false)
	return s.failed()
}

// Close waits for the experiment's rows to be written, flushes both
// files' rows and closes served.csv. A run's teardown calls it too, for
// an experiment that ended without it.
func (s *simRecords) Close() error {
	err := s.stop()
	s.records.mu.Lock()
	err = errors.Join(err, s.records.w.Flush())
	s.records.mu.Unlock()
	if s.served != nil {
		err = errors.Join(err, s.servedW.Flush(), s.served.Close())
		s.served = nil
	}
	return err
}
