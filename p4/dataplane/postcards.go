package dataplane

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/homatb/homatb/p4/switchstats"
)

// The writer drains the rings every period, which adapts between these
// bounds: short at high rates, so a ring of Config.PostcardRing records
// does not fill, and long at the testbed's usual rates, so the switch
// process wakes rarely (each wake-up competes with forwarding and the
// agents for the vCPUs).
const (
	postcardFlushMin = time.Millisecond
	postcardFlushMax = 50 * time.Millisecond
)

// postcardRing is one egress port's records on their way to the file: a
// single-producer single-consumer ring. The producer is whoever holds the
// port's tx lock (send); the consumer is the recorder's writer goroutine.
type postcardRing struct {
	slots []byte // PostcardLen bytes a slot, so the writer writes runs of them at once
	mask  uint64
	head  atomic.Uint64 // next slot the writer reads
	tail  atomic.Uint64 // next slot the producer fills
	pc    switchstats.Postcard
}

// recorder streams per-packet records to one file, with memory bounded by
// its rings whatever the recording's length.
type recorder struct {
	path  string
	rings []postcardRing // by portState.idx
	f     *os.File
	stop  chan struct{}
	done  chan error
	bytes int64
	// dropsBefore is the ports' postcard_drops when the recording began.
	dropsBefore uint64
}

// add records p, which is leaving port ps with its serialization starting
// at deqNs. The caller holds ps.tx.mu, which makes it the ring's only
// producer. A full ring drops the record, never the frame.
func (r *recorder) add(ps *portState, p *packet, deqNs int64) {
	ring := &r.rings[ps.idx]
	t := ring.tail.Load()
	if t-ring.head.Load() > ring.mask {
		ps.postcardDrops.Add(1)
		return
	}
	pc := &ring.pc
	pc.ArrivalNs, pc.EnqueueNs, pc.DequeueNs = p.arrNs, p.enqNs, deqNs
	pc.IngressPort, pc.EgressPort, pc.Queue = p.inPort, ps.num, p.queue
	pc.FrameLen = uint16(min(p.n, 0xffff))
	pc.ParseKey(p.frame())
	off := (t & ring.mask) * switchstats.PostcardLen
	pc.Encode((*[switchstats.PostcardLen]byte)(ring.slots[off:]))
	ring.tail.Store(t + 1) // counted into ps.postcards when the recording stops
}

// StartPostcards starts recording every forwarded frame into a new file at
// path (format: switchstats.Postcard, docs/formats.md), until
// StopPostcards. It is safe to call while Run is forwarding.
func (d *Dataplane) StartPostcards(path string) error {
	d.recMu.Lock()
	defer d.recMu.Unlock()
	if cur := d.rec.Load(); cur != nil {
		return fmt.Errorf("postcards: already recording to %s", cur.path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("postcards: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("postcards: %w", err)
	}
	r := &recorder{path: path, f: f, stop: make(chan struct{}), done: make(chan error, 1)}
	if _, err := f.Write(switchstats.AppendPostcardHeader(nil, d.epoch.UnixNano())); err != nil {
		f.Close()
		return fmt.Errorf("postcards %s: %w", path, err)
	}
	size := uint64(1) << bits.Len(uint(d.cfg.PostcardRing-1))
	r.rings = make([]postcardRing, len(d.ports))
	for i := range r.rings {
		r.rings[i].slots = make([]byte, size*switchstats.PostcardLen)
		r.rings[i].mask = size - 1
	}
	for _, ps := range d.ports {
		r.dropsBefore += ps.postcardDrops.Load()
	}
	go r.run()
	d.rec.Store(r)
	d.log.Info("postcards started", "path", path, "ring", size)
	return nil
}

// StopPostcards stops the recording, writes out every record taken and
// closes the file.
func (d *Dataplane) StopPostcards() (switchstats.PostcardSummary, error) {
	d.recMu.Lock()
	defer d.recMu.Unlock()
	r := d.rec.Swap(nil)
	if r == nil {
		return switchstats.PostcardSummary{}, errors.New("postcards: not recording")
	}
	// A sender that loaded r before the swap may still be adding to it;
	// it holds its port's tx lock while it does, so taking every lock once
	// waits for the last of them.
	for _, ps := range d.ports {
		ps.tx.mu.Lock()
		//lint:ignore SA2001 an empty critical section is the barrier
		ps.tx.mu.Unlock()
	}
	close(r.stop)
	err := <-r.done
	s := switchstats.PostcardSummary{Path: r.path, Records: uint64(r.bytes / switchstats.PostcardLen)}
	for _, ps := range d.ports {
		ps.postcards.Add(r.rings[ps.idx].tail.Load())
		s.Dropped += ps.postcardDrops.Load()
	}
	s.Dropped -= r.dropsBefore
	d.log.Info("postcards stopped", "path", r.path, "records", s.Records, "dropped", s.Dropped, "err", err)
	return s, err
}

// run is the writer: it drains the rings every period and, when stopped,
// once more before closing the file. The period halves when a drain found
// a ring over a quarter full and doubles when every ring held under a
// sixteenth.
func (r *recorder) run() {
	period := postcardFlushMin
	timer := time.NewTimer(period)
	defer timer.Stop()
	slots := r.rings[0].mask + 1
	var err error
	for {
		select {
		case <-timer.C:
			most, derr := r.drain(err != nil)
			err = errors.Join(err, derr)
			switch {
			case most > slots/4:
				period = max(period/2, postcardFlushMin)
			case most < slots/16:
				period = min(period*2, postcardFlushMax)
			}
			timer.Reset(period)
		case <-r.stop:
			_, derr := r.drain(err != nil)
			err = errors.Join(err, derr)
			if cerr := r.f.Close(); err == nil && cerr != nil {
				err = cerr
			}
			if err != nil {
				err = fmt.Errorf("postcards %s: %w", r.path, err)
			}
			r.done <- err
			return
		}
	}
}

// drain writes every record the rings hold, straight from the ring in at
// most two runs per ring (it wraps once), and returns the most records one
// ring held; after a write error it only empties them (failed), so that
// senders keep going.
func (r *recorder) drain(failed bool) (most uint64, err error) {
	for i := range r.rings {
		ring := &r.rings[i]
		h, t := ring.head.Load(), ring.tail.Load()
		most = max(most, t-h)
		for h < t && !failed {
			from := h & ring.mask
			n := min(t-h, ring.mask+1-from)
			nw, werr := r.f.Write(ring.slots[from*switchstats.PostcardLen : (from+n)*switchstats.PostcardLen])
			r.bytes += int64(nw)
			if werr != nil {
				ring.head.Store(t)
				return most, werr
			}
			h += n
		}
		ring.head.Store(t)
	}
	return most, nil
}

// recorded is how many records port ps has taken in the recording in
// progress, if any.
func (d *Dataplane) recorded(ps *portState) uint64 {
	if r := d.rec.Load(); r != nil {
		return r.rings[ps.idx].tail.Load()
	}
	return 0
}
