package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

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
}

// createRecords creates path; hosts are the network's, so that every row
// names its server's host.
func createRecords(path string, hosts []topo.Host) (*recordsFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	w, err := rundir.RPCs().NewWriter(f, true)
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
func (r *recordsFile) appendCSV(data io.Reader) error {
	rd, err := rundir.RPCs().NewReader(data, "agent records")
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var rec rundir.RPC
	for {
		if err := rd.Read(&rec); errors.Is(err, io.EOF) {
			return r.w.Flush()
		} else if err != nil {
			return err
		}
		if err := r.put(&rec, ""); err != nil {
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
	w, err := format.NewWriter(f, fi.Size() == 0)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, w, nil
}
