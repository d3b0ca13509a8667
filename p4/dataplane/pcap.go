package dataplane

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// pcapRecord is one captured frame waiting for the writer.
type pcapRecord struct {
	ts  time.Time
	n   int
	buf []byte
}

// capture writes one pcap file off the hot path: the port goroutine copies a
// frame into a preallocated record and hands it over a channel; the writer
// goroutine encodes it. When the writer falls behind, frames are left out of
// the capture and counted, never delaying forwarding.
type capture struct {
	path    string
	free    chan *pcapRecord
	full    chan *pcapRecord
	dropped atomic.Uint64
	f       *os.File
	w       *bufio.Writer
	pw      *pcapgo.Writer
}

func newCapture(dir, name string, records, snaplen int) (*capture, error) {
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("pcap: %w", err)
	}
	c := &capture{
		path: path,
		free: make(chan *pcapRecord, records),
		full: make(chan *pcapRecord, records),
		f:    f,
		w:    bufio.NewWriterSize(f, 1<<16),
	}
	c.pw = pcapgo.NewWriter(c.w)
	if err := c.pw.WriteFileHeader(uint32(snaplen), layers.LinkTypeEthernet); err != nil {
		f.Close()
		return nil, fmt.Errorf("pcap %s: header: %w", path, err)
	}
	slab := make([]byte, records*snaplen)
	recs := make([]pcapRecord, records)
	for i := range recs {
		recs[i].buf = slab[i*snaplen : (i+1)*snaplen : (i+1)*snaplen]
		c.free <- &recs[i]
	}
	return c, nil
}

// add copies frame into the capture queue, or counts it as left out.
func (c *capture) add(frame []byte, ts time.Time) {
	select {
	case r := <-c.free:
		r.ts = ts
		r.n = copy(r.buf, frame)
		c.full <- r
	default:
		c.dropped.Add(1)
	}
}

// run writes queued frames until stop is closed (after every producer
// stopped), then writes what is left and
// closes the file.
func (c *capture) run(stop <-chan struct{}) error {
	flush := time.NewTicker(200 * time.Millisecond)
	defer flush.Stop()
	for {
		select {
		case r := <-c.full:
			if err := c.write(r); err != nil {
				return err
			}
		case <-flush.C:
			if err := c.w.Flush(); err != nil {
				return fmt.Errorf("pcap %s: %w", c.path, err)
			}
		case <-stop:
			return c.close()
		}
	}
}

func (c *capture) write(r *pcapRecord) error {
	ci := gopacket.CaptureInfo{Timestamp: r.ts, CaptureLength: r.n, Length: r.n}
	err := c.pw.WritePacket(ci, r.buf[:r.n])
	c.free <- r
	if err != nil {
		return fmt.Errorf("pcap %s: %w", c.path, err)
	}
	return nil
}

// close writes the frames still queued; producers must have stopped.
func (c *capture) close() error {
	for {
		select {
		case r := <-c.full:
			if err := c.write(r); err != nil {
				c.f.Close()
				return err
			}
		default:
			if err := c.w.Flush(); err != nil {
				c.f.Close()
				return fmt.Errorf("pcap %s: %w", c.path, err)
			}
			if err := c.f.Close(); err != nil {
				return fmt.Errorf("pcap %s: %w", c.path, err)
			}
			return nil
		}
	}
}
