package agent

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"time"
)

// RecordHeader is the column list of rpcs.csv (docs/formats.md).
func RecordHeader() []string {
	return []string{"experiment", "transport", "phase", "client", "server", "req_bytes", "resp_bytes",
		"intended_ns", "sent_ns", "done_ns", "rtt_ns", "status", "error", "retries",
		"req_out_ns", "first_resp_ns", "grants_in", "grants_out"}
}

// RPC statuses in records.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusInflight  = "inflight"
)

// Record is one issued RPC, exactly one per RPC.
type Record struct {
	Experiment, Transport, Phase, Client, Server string
	ReqBytes, RespBytes                          int
	IntendedNs, SentNs, DoneNs                   int64
	Status, Error                                string
	Retries                                      int
	// ReqOutNs and FirstRespNs are the transport's times of the request's
	// last byte leaving and the response's first byte arriving, 0 when
	// it does not say; GrantsIn and GrantsOut its GRANT counts.
	ReqOutNs, FirstRespNs int64
	GrantsIn, GrantsOut   int
}

// fields renders the record as rpcs.csv columns.
func (r *Record) fields(buf []string) []string {
	var rtt int64
	if r.Status == StatusCompleted {
		rtt = r.DoneNs - r.IntendedNs
	}
	return append(buf[:0], r.Experiment, r.Transport, r.Phase, r.Client, r.Server,
		strconv.Itoa(r.ReqBytes), strconv.Itoa(r.RespBytes),
		strconv.FormatInt(r.IntendedNs, 10), strconv.FormatInt(r.SentNs, 10),
		strconv.FormatInt(r.DoneNs, 10), strconv.FormatInt(rtt, 10),
		r.Status, r.Error, strconv.Itoa(r.Retries),
		strconv.FormatInt(r.ReqOutNs, 10), strconv.FormatInt(r.FirstRespNs, 10),
		strconv.Itoa(r.GrantsIn), strconv.Itoa(r.GrantsOut))
}

// recordQueue bounds the records waiting for the disk: a full queue makes
// completions wait rather than drop a record or grow memory.
const recordQueue = 8192

// flushEvery bounds how stale the records file may be during a run.
const flushEvery = 200 * time.Millisecond

// recordWriter streams records to a CSV file from one goroutine, so memory
// stays bounded however long the run.
type recordWriter struct {
	path string
	f    *os.File
	ch   chan Record
	done chan error
}

func newRecordWriter(path string) (*recordWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating records file: %w", err)
	}
	w := &recordWriter{path: path, f: f, ch: make(chan Record, recordQueue), done: make(chan error, 1)}
	go w.loop()
	return w, nil
}

// Write queues a record; it blocks while the queue is full.
func (w *recordWriter) Write(r Record) { w.ch <- r }

func (w *recordWriter) loop() {
	bw := bufio.NewWriterSize(w.f, 256<<10)
	cw := csv.NewWriter(bw)
	err := cw.Write(RecordHeader())
	var buf []string
	lastFlush := time.Now()
	for r := range w.ch {
		if err == nil {
			buf = r.fields(buf)
			err = cw.Write(buf)
		}
		// Flush to the file when the queue runs dry, at most every
		// flushEvery, so the file follows the run and a crash loses little
		// without a system call per record.
		if err == nil && len(w.ch) == 0 && time.Since(lastFlush) > flushEvery {
			cw.Flush()
			if err = cw.Error(); err == nil {
				err = bw.Flush()
			}
			lastFlush = time.Now()
		}
	}
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		err = fmt.Errorf("writing records %s: %w", w.path, err)
	}
	w.done <- err
}

// Close writes out every queued record; no Write may follow.
func (w *recordWriter) Close() error {
	close(w.ch)
	return <-w.done
}
