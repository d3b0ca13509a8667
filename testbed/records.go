package testbed

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
)

// recordsFile is the run's rpcs.csv, appended to as each experiment's
// records arrive from the agents, so an interrupted run keeps them.
type recordsFile struct {
	mu     sync.Mutex
	f      *os.File
	w      *csv.Writer
	header []string
}

func createRecords(path string) (*recordsFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	return &recordsFile{f: f, w: csv.NewWriter(f)}, nil
}

// appendCSV adds one agent's records. rename, when set, replaces the
// experiment column (calibration sizes run as separate agent experiments but
// are one experiment, calibrate-<transport>, in the run). It returns the rows
// added and the RTTs (µs) of completed rows.
func (r *recordsFile) appendCSV(data []byte, rename string) (int, []float64, error) {
	rd := csv.NewReader(bytes.NewReader(data))
	rd.ReuseRecord = true
	hdr, err := rd.Read()
	if errors.Is(err, io.EOF) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("records header: %w", err)
	}
	hdr = slices.Clone(hdr)
	col := func(name string) int { return slices.Index(hdr, name) }
	expCol, rttCol, statusCol := col("experiment"), col("rtt_ns"), col("status")
	if expCol < 0 || rttCol < 0 || statusCol < 0 {
		return 0, nil, fmt.Errorf("records: header %v lacks experiment, rtt_ns or status", hdr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.header == nil {
		r.header = hdr
		if err := r.w.Write(hdr); err != nil {
			return 0, nil, err
		}
	} else if !slices.Equal(r.header, hdr) {
		return 0, nil, fmt.Errorf("records: header %v differs from %v", hdr, r.header)
	}
	n := 0
	var rtts []float64
	for {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, rtts, fmt.Errorf("records row %d: %w", n+2, err)
		}
		if rename != "" {
			rec[expCol] = rename
		}
		if rec[statusCol] == "completed" {
			if v, err := strconv.ParseFloat(rec[rttCol], 64); err == nil {
				rtts = append(rtts, v/1e3)
			}
		}
		if err := r.w.Write(rec); err != nil {
			return n, rtts, err
		}
		n++
	}
	r.w.Flush()
	return n, rtts, r.w.Error()
}

func (r *recordsFile) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w.Flush()
	return errors.Join(r.w.Error(), r.f.Close())
}

// median of a sample (which it sorts); 0 when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}
