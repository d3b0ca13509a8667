package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/runfmt"
)

// pollTimeout bounds how long a blocked read delays Stop.
const pollTimeout = 100 * time.Millisecond

// rcvBuf is the capture socket's receive buffer: room for bursts while
// the writer catches up.
const rcvBuf = 4 << 20

// capturer is one point's socket and file.
type capturer struct {
	p        Point
	path     string
	snaplen  int
	fd       int
	started  bool
	stopping atomic.Bool
	done     chan struct{}
	rec      runfmt.Capture
}

func newCapturer(p Point, path string, snaplen int, maxBytes int64) *capturer {
	return &capturer{p: p, path: path, snaplen: snaplen, fd: -1, done: make(chan struct{}),
		rec: runfmt.Capture{Point: p.Where, Interface: p.Intf, Snaplen: snaplen, MaxBytes: maxBytes}}
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

// start opens the socket and the file and starts the reader.
func (c *capturer) start() error {
	fd, err := openIn(c.p.NetNS, c.p.Intf)
	if err != nil {
		return err
	}
	f, err := os.Create(c.path)
	if err != nil {
		unix.Close(fd)
		return err
	}
	cw := &countingWriter{w: f}
	bw := bufio.NewWriterSize(cw, 1<<16)
	w, err := pcapgo.NewNgWriterInterface(bw, pcapgo.NgInterface{Name: c.p.Intf, Comment: c.p.Where,
		LinkType: layers.LinkTypeEthernet, SnapLength: uint32(c.snaplen)}, pcapgo.DefaultNgWriterOptions)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		unix.Close(fd)
		f.Close()
		return fmt.Errorf("pcapng %s: %w", c.path, err)
	}
	c.fd, c.started = fd, true
	go c.run(f, cw, bw, w)
	return nil
}

// run reads frames until stop, writing each while the file stays within
// its bound, then closes the file.
func (c *capturer) run(f *os.File, cw *countingWriter, bw *bufio.Writer, w *pcapgo.NgWriter) {
	defer close(c.done)
	size := cw.n // the section and interface blocks
	buf := make([]byte, c.snaplen)
	oob := make([]byte, unix.CmsgSpace(16))
	var werr error
	for !c.stopping.Load() {
		n, oobn, _, _, err := unix.Recvmsg(c.fd, buf, oob, unix.MSG_TRUNC)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			werr = fmt.Errorf("read: %w", err)
			break
		}
		caplen := min(n, c.snaplen)
		block := int64(32 + (caplen+3)&^3) // an enhanced packet block without options
		if size+block > c.rec.MaxBytes {
			c.rec.LeftOut++
			continue
		}
		ci := gopacket.CaptureInfo{Timestamp: timestamp(oob[:oobn]), CaptureLength: caplen, Length: n}
		if err := w.WritePacket(ci, buf[:caplen]); err != nil {
			werr = err
			break
		}
		size += block
		c.rec.Packets++
	}
	for _, err := range []error{w.Flush(), bw.Flush(), f.Close()} {
		if werr == nil && err != nil {
			werr = err
		}
	}
	if werr != nil {
		c.rec.Error = werr.Error()
	}
	c.rec.Bytes = cw.n
}

// stop ends the reader, waits for the file to close and reads the
// socket's drop count.
func (c *capturer) stop() {
	if !c.started {
		return
	}
	c.stopping.Store(true)
	<-c.done
	if st, err := unix.GetsockoptTpacketStats(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
		c.rec.KernelDrops = uint64(st.Drops)
	}
	unix.Close(c.fd)
	c.fd = -1
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
func openIn(netns, intf string) (int, error) {
	if netns == "" {
		return open(intf)
	}
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		ns, err := unix.Open(netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- result{-1, fmt.Errorf("namespace %s: %w", netns, err)}
			return
		}
		defer unix.Close(ns)
		if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
			ch <- result{-1, fmt.Errorf("enter namespace %s: %w", netns, err)}
			return
		}
		fd, err := open(intf)
		ch <- result{fd, err}
	}()
	r := <-ch
	return r.fd, r.err
}

// open makes an AF_PACKET socket that sees every frame intf sends and
// receives, with kernel receive timestamps and a read timeout so Stop is
// noticed.
func open(intf string) (int, error) {
	ifi, err := net.InterfaceByName(intf)
	if err != nil {
		return -1, fmt.Errorf("interface %s: %w", intf, err)
	}
	proto := htons(unix.ETH_P_ALL)
	// Protocol 0 until bound: the socket sees no frame of another
	// interface meanwhile.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("capture socket on %s: %w (capturing needs root or CAP_NET_RAW)", intf, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
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
