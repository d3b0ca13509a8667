package agent

import (
	"bufio"
	"fmt"
	"os"
	"time"

	"github.com/homatb/homatb/runfmt"
)

// Record is one issued RPC, exactly one per RPC: a row of rpcs.csv.
type Record = runfmt.RPC

// RPC statuses in records.
const (
	StatusCompleted = runfmt.StatusCompleted
	StatusFailed    = runfmt.StatusFailed
	StatusInflight  = runfmt.StatusInflight
)

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
	cw, err := runfmt.RPCs().NewWriter(bw, true)
	lastFlush := time.Now()
	for r := range w.ch {
		if err == nil {
			err = cw.Write(&r)
		}
		// Flush to the file when the queue runs dry, at most every
		// flushEvery, so the file follows the run and a crash loses little
		// without a system call per record.
		if err == nil && len(w.ch) == 0 && time.Since(lastFlush) > flushEvery {
			if err = cw.Flush(); err == nil {
				err = bw.Flush()
			}
			lastFlush = time.Now()
		}
	}
	if err == nil {
		err = cw.Flush()
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
