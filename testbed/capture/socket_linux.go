package capture

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/internal/nsenter"
	"github.com/homatb/homatb/rundir"
)

// pollTimeout bounds how long a blocked read delays Stop.
const pollTimeout = 100 * time.Millisecond

// rcvBuf is a capture socket's receive buffer: room for bursts while the
// writer catches up.
const rcvBuf = 4 << 20

// reorderWindow is how long a frame may wait for an earlier one from
// another socket of its point: frames are written in time order.
const reorderWindow = 200 * time.Millisecond

// capturer is one point's sockets and file.
type capturer struct {
	p        Point
	path     string
	snaplen  int
	fds      []int
	started  bool
	stopping atomic.Bool
	// stoppedAt is when stop began (Unix ns): the readers take what their
	// sockets got before it, and nothing after.
	stoppedAt atomic.Int64
	readers   sync.WaitGroup

	mu sync.Mutex // guards the writer, size, the pending frames and rec's counts
	// pending are frames read but not yet written, earliest first; marks
	// the latest time each socket has read.
	pending frameHeap
	marks   []time.Time
	seq     uint64
	f       *os.File
	cw      *countingWriter
	bw      *bufio.Writer
	w       *pcapgo.NgWriter
	size    int64 // what the file holds once flushed
	werr    error
	rec     rundir.Capture
}

func newCapturer(p Point, path string, snaplen int, maxBytes int64) *capturer {
	var intfs []string
	for _, t := range p.Taps {
		intfs = append(intfs, t.Intf)
	}
	return &capturer{p: p, path: path, snaplen: snaplen,
		rec: rundir.Capture{Point: p.Where, Interface: strings.Join(intfs, ","), Snaplen: snaplen, MaxBytes: maxBytes}}
}

// countingWriter counts what reaches the file.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// start opens the sockets and the file (interface 0 the point's received
// frames, 1 its sent ones) and starts a reader per socket.
func (c *capturer) start() error {
	for _, t := range c.p.Taps {
		fd, err := openIn(t.NetNS, t.Intf)
		if err != nil {
			c.closeSockets()
			return err
		}
		c.fds = append(c.fds, fd)
	}
	if err := c.create(); err != nil {
		c.closeSockets()
		return fmt.Errorf("pcapng %s: %w", c.path, err)
	}
	c.started = true
	c.marks = make([]time.Time, len(c.p.Taps))
	for i, t := range c.p.Taps {
		c.readers.Add(1)
		go c.read(i, c.fds[i], t)
	}
	return nil
}

func (c *capturer) create() error {
	f, err := os.Create(c.path)
	if err != nil {
		return err
	}
	c.f, c.cw = f, &countingWriter{w: f}
	c.bw = bufio.NewWriterSize(c.cw, 1<<16)
	intf := func(name string) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: name, Comment: c.p.Where, LinkType: layers.LinkTypeEthernet,
			SnapLength: uint32(c.snaplen), TimestampResolution: 9}
	}
	c.w, err = pcapgo.NewNgWriterInterface(c.bw, intf(c.p.In), pcapgo.DefaultNgWriterOptions)
	if err == nil {
		_, err = c.w.AddInterface(intf(c.p.Out))
	}
	for _, e := range []error{err, c.w.Flush(), c.bw.Flush()} {
		if e != nil {
			f.Close()
			return e
		}
	}
	c.size = c.cw.n // the section and interface blocks
	return nil
}

func (c *capturer) closeSockets() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
}

// read takes frames off one socket until stop and writes those t keeps.
// Once stopping, it still takes what the socket holds, without waiting:
// frames that reached the socket before the stop belong to the capture.
func (c *capturer) read(i, fd int, t Tap) {
	defer c.readers.Done()
	buf := make([]byte, c.snaplen)
	oob := make([]byte, unix.CmsgSpace(16))
	for {
		flags := unix.MSG_TRUNC
		stopping := c.stopping.Load()
		if stopping {
			flags |= unix.MSG_DONTWAIT
		}
		n, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, flags)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				if stopping {
					return // drained
				}
				continue
			}
			c.fail(fmt.Errorf("read %s: %w", t.Intf, err))
			return
		}
		ts := timestamp(oob[:oobn])
		if stopping && ts.UnixNano() > c.stoppedAt.Load() {
			return // the rest came after the stop
		}
		intf := t.Received
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			intf = t.Sent
		}
		if intf < 0 {
			continue
		}
		caplen := min(n, c.snaplen)
		ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: caplen, Length: n, InterfaceIndex: intf}
		if !c.add(i, ci, append([]byte(nil), buf[:caplen]...)) {
			return
		}
	}
}

// add queues a frame socket i read and writes the queued frames no
// socket can still precede: those up to the earliest time every socket
// has reached, and any older than reorderWindow. False when writing
// failed.
func (c *capturer) add(i int, ci gopacket.CaptureInfo, frame []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ci.Timestamp.After(c.marks[i]) {
		c.marks[i] = ci.Timestamp
	}
	c.seq++
	heap.Push(&c.pending, pendingFrame{ci, frame, c.seq})
	c.release(false)
	return c.werr == nil
}

// release writes pending frames in time order: all of them, or those no
// socket can still precede.
func (c *capturer) release(all bool) {
	mark := c.marks[0]
	for _, m := range c.marks[1:] {
		if m.Before(mark) {
			mark = m
		}
	}
	horizon := time.Now().Add(-reorderWindow)
	for c.pending.Len() > 0 && c.werr == nil {
		ts := c.pending[0].ci.Timestamp
		if !all && ts.After(mark) && ts.After(horizon) {
			return
		}
		f := heap.Pop(&c.pending).(pendingFrame)
		c.write(f.ci, f.data)
	}
}

// pendingFrame is a frame waiting in time order; seq keeps a socket's
// frames with equal times in the order read.
type pendingFrame struct {
	ci   gopacket.CaptureInfo
	data []byte
	seq  uint64
}

// frameHeap orders pending frames by time (container/heap).
type frameHeap []pendingFrame

func (h frameHeap) Len() int { return len(h) }
func (h frameHeap) Less(i, j int) bool {
	if !h[i].ci.Timestamp.Equal(h[j].ci.Timestamp) {
		return h[i].ci.Timestamp.Before(h[j].ci.Timestamp)
	}
	return h[i].seq < h[j].seq
}
func (h frameHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *frameHeap) Push(x any)   { *h = append(*h, x.(pendingFrame)) }
func (h *frameHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	*h = old[:len(old)-1]
	return f
}

// write adds one frame while the file stays within its bound; c.mu held.
func (c *capturer) write(ci gopacket.CaptureInfo, frame []byte) {
	block := int64(32 + (len(frame)+3)&^3) // an enhanced packet block without options
	if c.size+block > c.rec.MaxBytes {
		c.rec.LeftOut++
		return
	}
	if err := c.w.WritePacket(ci, frame); err != nil {
		c.werr = err
		return
	}
	c.size += block
	c.rec.Packets++
}

func (c *capturer) fail(err error) {
	c.mu.Lock()
	if c.werr == nil {
		c.werr = err
	}
	c.mu.Unlock()
}

// stop ends the readers, closes the file and reads the sockets' drop
// counts.
func (c *capturer) stop() {
	if !c.started {
		return
	}
	c.stoppedAt.Store(time.Now().UnixNano())
	c.stopping.Store(true)
	c.readers.Wait()
	c.mu.Lock()
	c.release(true)
	c.mu.Unlock()
	for _, fd := range c.fds {
		if st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			c.rec.KernelDrops += uint64(st.Drops)
		}
	}
	c.closeSockets()
	for _, err := range []error{c.w.Flush(), c.bw.Flush(), c.f.Close()} {
		if c.werr == nil && err != nil {
			c.werr = err
		}
	}
	if c.werr != nil {
		c.rec.Error = c.werr.Error()
	}
	c.rec.Bytes = c.cw.n
}

// timestamp is the kernel's receive time of a frame (SO_TIMESTAMPNS), or
// now when the control message is missing.
func timestamp(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				return time.Unix(int64(binary.NativeEndian.Uint64(m.Data)), int64(binary.NativeEndian.Uint64(m.Data[8:])))
			}
		}
	}
	return time.Now()
}

// openIn opens a capture socket on intf in the network namespace netns
// ("" for the caller's own). The socket stays in the namespace it was
// made in, so a thread enters netns, makes it and the thread is then
// discarded: its goroutine ends locked to it, which ends the thread.
func openIn(ns, intf string) (int, error) {
	if ns == "" {
		return open(intf)
	}
	fd := -1
	err := nsenter.Do(ns, func() error {
		var err error
		fd, err = open(intf)
		return err
	})
	return fd, err
}

// open makes an AF_PACKET socket that sees every frame intf sends and
// receives, with kernel receive timestamps and a read timeout so Stop is
// noticed.
func open(intf string) (int, error) {
	ifi, err := net.InterfaceByName(intf)
	if err != nil {
		return -1, fmt.Errorf("interface %s: %w", intf, err)
	}
	// Protocol 0 until bound: the socket sees no frame of another
	// interface meanwhile.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("capture socket on %s: %w (capturing needs root or CAP_NET_RAW)", intf, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind capture socket to %s: %w", intf, err)
	}
	tv := unix.NsecToTimeval(pollTimeout.Nanoseconds())
	for _, err := range []error{
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1),
	} {
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("capture socket on %s: %w", intf, err)
		}
	}
	// A larger buffer only helps; the default still works.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
	}
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
