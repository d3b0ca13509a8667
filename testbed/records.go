package testbed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/homatb/homatb/anatomy"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/topo"
)

// recordsFile is the run's rpcs.csv, appended to as each experiment's
// records arrive from the agents, so an interrupted run keeps them.
type recordsFile struct {
	mu sync.Mutex
	f  *os.File
	w  *rundir.CSVWriter[rundir.RPC]
	// hostOf names the host of each address, for the server_host column
	// (agents know their servers by address only).
	hostOf map[string]string
	// sieve, while an experiment keeps sampled switch records, sees each
	// row (postcards.go).
	sieve *anatomy.Sieve
}

// recordsBuffer is the buffer of the writers of rpcs.csv and served.csv
// (and the other files openAppend opens): the twin writes two rows of
// about 150 bytes a message, and CSVWriter's own 4 KiB buffer made a
// write system call every 27 rows, 5% of the event loop's time in a
// simulated collective. CSVWriter writes into a *bufio.Writer it is given
// (bufio.NewWriter returns it as it is), so Flush still reaches the file.
const recordsBuffer = 256 << 10

// createRecords creates path; hosts are the network's, so that every row
// names its server's host.
func createRecords(path string, hosts []topo.Host) (*recordsFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	w, err := rundir.RPCs().NewWriter(bufio.NewWriterSize(f, recordsBuffer), true)
	if err != nil {
		f.Close()
		return nil, err
	}
	r := &recordsFile{f: f, w: w, hostOf: make(map[string]string, len(hosts))}
	for _, h := range hosts {
		r.hostOf[h.IP.String()] = h.Name
	}
	return r, nil
}

// appendCSV adds one agent's records (an rpcs.csv of its own), row by
// row: an agent's file may be long.
func (r *recordsFile) appendCSV(data io.Reader) error { return r.appendMerged([]io.Reader{data}) }

// appendFiles adds the records of the agents' files at paths, merged as
// appendMerged merges them, reading each as it goes.
func (r *recordsFile) appendFiles(paths []string) error {
	rds := make([]io.Reader, 0, len(paths))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rds = append(rds, bufio.NewReader(f))
	}
	return r.appendMerged(rds)
}

// appendMerged adds the records of several agents (each an rpcs.csv of
// its own, in the order it issued them) as one sequence in issue order:
// by send time, a tie to the agent listed first. A simulated run writes
// its rows in that order as they become final.
func (r *recordsFile) appendMerged(files []io.Reader) error {
	rds := make([]*rundir.CSVReader[rundir.RPC], len(files))
	heads := make([]*rundir.RPC, len(files))
	next := func(i int) error {
		var row rundir.RPC
		err := rds[i].Read(&row)
		if errors.Is(err, io.EOF) {
			heads[i] = nil
			return nil
		}
		heads[i] = &row
		return err
	}
	for i, data := range files {
		var err error
		if rds[i], err = rundir.RPCs().NewReader(data, "agent records"); err != nil {
			return err
		}
		if err := next(i); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		first := -1
		for i, h := range heads {
			if h != nil && (first < 0 || h.SentNs < heads[first].SentNs) {
				first = i
			}
		}
		if first < 0 {
			return r.w.Flush()
		}
		if err := r.put(heads[first], ""); err != nil {
			return err
		}
		if err := next(first); err != nil {
			return err
		}
	}
}

// parse reads one agent's records (an rpcs.csv of its own).
func (r *recordsFile) parse(data []byte) ([]rundir.RPC, error) {
	rd, err := rundir.RPCs().NewReader(bytes.NewReader(data), "agent records")
	if err != nil {
		return nil, err
	}
	var rows []rundir.RPC
	for {
		var rec rundir.RPC
		if err := rd.Read(&rec); errors.Is(err, io.EOF) {
			return rows, nil
		} else if err != nil {
			return rows, err
		}
		rows = append(rows, rec)
	}
}

// write adds rows to the run's records. rename, when set, replaces the
// experiment (calibration sizes run as separate agent experiments but are
// one experiment in the run, rundir.CalibrationExperiment).
func (r *recordsFile) write(rows []rundir.RPC, rename string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range rows {
		if err := r.put(&rows[i], rename); err != nil {
			return err
		}
	}
	return r.w.Flush()
}

// put writes one row, naming its server's host where it has none (agents
// know their servers by address only); r.mu held.
func (r *recordsFile) put(rec *rundir.RPC, rename string) error {
	if rename != "" {
		rec.Experiment = rename
	}
	if ip, _, ok := strings.Cut(rec.Server, ":"); ok && rec.ServerHost == "" {
		rec.ServerHost = r.hostOf[ip]
	}
	if r.sieve != nil {
		r.sieve.Add(rec)
	}
	return r.w.Write(rec)
}

func (r *recordsFile) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.w.Flush(), r.f.Close())
}

// median of a sample (which it sorts); 0 when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// appendCSVRows appends the rows of an agent's file of one format (data,
// with its own header) to the run's file of that format at path.
func appendCSVRows[T any](path string, format *rundir.CSVFormat[T], data io.Reader) error {
	rd, err := format.NewReader(data, "agent "+format.File)
	if err != nil {
		return err
	}
	return appendRows(path, format, func(w *rundir.CSVWriter[T]) error {
		var row T
		for {
			if err := rd.Read(&row); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if err := w.Write(&row); err != nil {
				return err
			}
		}
	})
}

// appendRows opens the run-directory file path for appending, writes its
// header when the file is new, and lets fill write rows.
func appendRows[T any](path string, format *rundir.CSVFormat[T], fill func(*rundir.CSVWriter[T]) error) error {
	f, w, err := openAppend(path, format)
	if err != nil {
		return err
	}
	if err := fill(w); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return errors.Join(w.Flush(), f.Close())
}

// openAppend opens the run-directory file path for appending rows of
// format, its header written when the file is new.
func openAppend[T any](path string, format *rundir.CSVFormat[T]) (*os.File, *rundir.CSVWriter[T], error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	w, err := format.NewWriter(bufio.NewWriterSize(f, recordsBuffer), fi.Size() == 0)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, w, nil
}
