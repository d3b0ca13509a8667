package rundir

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

// streamQueue bounds the rows waiting for the disk: a full queue makes
// completions wait rather than drop a record or grow memory.
const streamQueue = 8192

// streamFlushEvery bounds how stale a streamed file may be during a run.
const streamFlushEvery = 200 * time.Millisecond

// CSVStream streams rows of one format to a new CSV file from one
// goroutine, so memory stays bounded however long the run (an agent's
// records as the RPCs end).
type CSVStream[T any] struct {
	path   string
	f      *os.File
	format *CSVFormat[T]
	ch     chan T
	flush  chan chan error
	done   chan error
	exited chan struct{} // closed when loop returns
}

// NewCSVStream creates path and starts writing rows of format to it.
func NewCSVStream[T any](path string, format *CSVFormat[T]) (*CSVStream[T], error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating records file: %w", err)
	}
	w := &CSVStream[T]{path: path, f: f, format: format, ch: make(chan T, streamQueue),
		flush: make(chan chan error), done: make(chan error, 1), exited: make(chan struct{})}
	go w.loop()
	return w, nil
}

// Write queues a row; it blocks while the queue is full.
func (w *CSVStream[T]) Write(r T) { w.ch <- r }

func (w *CSVStream[T]) loop() {
	defer close(w.exited)
	bw := bufio.NewWriterSize(w.f, 256<<10)
	cw, err := w.format.NewWriter(bw, true)
	lastFlush := time.Now()
	for {
		var r T
		var ok bool
		select {
		case r, ok = <-w.ch:
		case reply := <-w.flush:
			// Rows queued before the request are written first.
			for n := len(w.ch); n > 0 && err == nil; n-- {
				r = <-w.ch
				err = cw.Write(&r)
			}
			if err == nil {
				if err = cw.Flush(); err == nil {
					err = bw.Flush()
				}
			}
			reply <- err
			continue
		}
		if !ok {
			break
		}
		if err == nil {
			err = cw.Write(&r)
		}
		// Flush to the file when the queue runs dry, at most every
		// streamFlushEvery, so the file follows the run and a crash loses little
		// without a system call per record.
		if err == nil && len(w.ch) == 0 && time.Since(lastFlush) > streamFlushEvery {
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

// Flush writes every row queued so far to the file, so that it can be read
// while the stream stays open.
func (w *CSVStream[T]) Flush() error {
	reply := make(chan error, 1)
	select {
	case w.flush <- reply:
		return <-reply
	case <-w.exited: // closed: the file is complete
		return nil
	}
}

// Close writes out every queued row; no Write may follow.
func (w *CSVStream[T]) Close() error {
	close(w.ch)
	return <-w.done
}
