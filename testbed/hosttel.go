package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/homatb/homatb/runfmt"
)

// startHostTelemetry follows the Homa gauges of hosts through their
// agents' Status streams every interval while the experiment runs; the
// returned func stops it and appends the samples to hosts.csv. A host
// whose stream fails is logged and left out, the experiment goes on.
func (r *run) startHostTelemetry(ctx context.Context, exp string, hosts []string, interval time.Duration) func() {
	if interval <= 0 {
		return func() {}
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	samples := make([][]runfmt.HostSample, len(hosts))
	for i, h := range hosts {
		a := r.agents.get(h)
		if a == nil {
			continue
		}
		wg.Go(func() {
			s, err := a.FollowGauges(sctx, exp, interval)
			if err != nil && sctx.Err() == nil {
				r.log.Warn("host telemetry", "experiment", exp, "host", h, "err", err)
			}
			samples[i] = s
		})
	}
	return func() {
		cancel()
		wg.Wait()
		if err := appendHostsCSV(filepath.Join(r.dir, runfmt.Hosts().File), samples); err != nil {
			r.log.Warn("host telemetry file", "experiment", exp, "err", err)
		}
	}
}

// appendHostsCSV appends samples to path (runfmt.Hosts), writing the
// header when the file is new.
func appendHostsCSV(path string, samples [][]runfmt.HostSample) error {
	return appendRows(path, runfmt.Hosts(), func(w *runfmt.CSVWriter[runfmt.HostSample]) error {
		for _, hs := range samples {
			for i := range hs {
				if err := w.Write(&hs[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// appendTCPSamples appends an agent's tcp.csv rows (data, with its own
// header) to the run's tcp.csv at path.
func appendTCPSamples(path string, data []byte) error {
	return appendCSVRows(path, runfmt.TCPConns(), data)
}

// appendCSVRows appends the rows of an agent's file of one format (data,
// with its own header) to the run's file of that format at path.
func appendCSVRows[T any](path string, format *runfmt.CSVFormat[T], data []byte) error {
	rd, err := format.NewReader(bytes.NewReader(data), "agent "+format.File)
	if err != nil {
		return err
	}
	return appendRows(path, format, func(w *runfmt.CSVWriter[T]) error {
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
func appendRows[T any](path string, format *runfmt.CSVFormat[T], fill func(*runfmt.CSVWriter[T]) error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	w, err := format.NewWriter(f, fi.Size() == 0)
	if err != nil {
		f.Close()
		return err
	}
	if err := fill(w); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return errors.Join(w.Flush(), f.Close())
}
