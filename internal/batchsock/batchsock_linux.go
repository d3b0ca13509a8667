//go:build linux

package batchsock

import (
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kind is what a Batch's slots carry besides their buffers.
type Kind uint8

// The kinds of batches.
const (
	// Frames: buffers only, for sockets whose datagrams carry their own
	// addresses (AF_PACKET).
	Frames Kind = iota
	// IPv4: each slot also has an IPv4 socket address, the source of a
	// datagram read or the destination of one written.
	IPv4
	// IPv4TOS is IPv4 with an IP_TOS control message per slot, which sets
	// the TOS byte of each datagram written (SetDest), or on a socket with
	// IP_RECVTOS carries the TOS byte of each datagram read (TOS).
	IPv4TOS
)

// cmsgTOSSpace is the control buffer of one IP_TOS message carrying an int.
var cmsgTOSSpace = unix.CmsgSpace(4)

// Batch is the vector of one recvmmsg or sendmmsg: Size slots, each a
// buffer (SetBuf) and, for IPv4 kinds, an address. A Batch is used by one
// goroutine at a time; it holds the state of the call in progress, so the
// callbacks the netpoller runs are made once and calls allocate nothing.
type Batch struct {
	kind Kind
	h    []unix.Mmsghdr
	iov  []unix.Iovec            // two a slot: SetBufs' header and buffer
	name []unix.RawSockaddrInet4 // IPv4 kinds
	oob  []byte                  // IPv4TOS: one IP_TOS message per slot

	// The call in progress.
	n, done, sent int
	flags         int  // recvmmsg flags
	wait          bool // Read: park on EAGAIN; TryRead: report 0 datagrams
	skipRefused   bool
	errno         syscall.Errno
	recvFn        func(uintptr) bool
	tryFn         func(uintptr)
	sendFn        func(uintptr) bool
}

// NewBatch makes a batch of size slots of kind.
func NewBatch(size int, kind Kind) *Batch {
	b := &Batch{kind: kind, h: make([]unix.Mmsghdr, size), iov: make([]unix.Iovec, 2*size)}
	if kind != Frames {
		b.name = make([]unix.RawSockaddrInet4, size)
	}
	if kind == IPv4TOS {
		b.oob = make([]byte, size*cmsgTOSSpace)
	}
	for i := range size {
		h := &b.h[i].Hdr
		h.Iov, h.Iovlen = &b.iov[2*i], 1
		if kind == Frames {
			continue
		}
		b.name[i].Family = unix.AF_INET
		h.Name, h.Namelen = (*byte)(unsafe.Pointer(&b.name[i])), unix.SizeofSockaddrInet4
		if kind == IPv4TOS {
			oob := b.oob[i*cmsgTOSSpace : (i+1)*cmsgTOSSpace]
			c := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
			c.Level, c.Type = unix.IPPROTO_IP, unix.IP_TOS
			c.SetLen(unix.CmsgLen(4))
			h.Control = &oob[0]
			h.SetControllen(cmsgTOSSpace)
		}
	}
	// Method values allocate once here, not per call.
	b.recvFn, b.sendFn = b.recv, b.send
	b.tryFn = func(fd uintptr) { b.recv(fd) }
	return b
}

// Size is the number of slots.
func (b *Batch) Size() int { return len(b.h) }

// SetBuf makes buf slot i's buffer: all of it is offered to a read, or it
// is the datagram to write. buf must not be empty.
func (b *Batch) SetBuf(i int, buf []byte) {
	b.iov[2*i].Base = &buf[0]
	b.iov[2*i].SetLen(len(buf))
	h := &b.h[i].Hdr
	h.Iovlen = 1
	b.reset(h)
}

// SetBufs makes head followed by buf slot i's datagram to write, without
// copying them into one buffer (a header the caller writes per datagram,
// before a payload it does not own). Both must not be empty.
func (b *Batch) SetBufs(i int, head, buf []byte) {
	b.iov[2*i].Base, b.iov[2*i+1].Base = &head[0], &buf[0]
	b.iov[2*i].SetLen(len(head))
	b.iov[2*i+1].SetLen(len(buf))
	h := &b.h[i].Hdr
	h.Iovlen = 2
	b.reset(h)
}

// reset readies slot header h for the next call.
func (b *Batch) reset(h *unix.Msghdr) {
	h.Flags = 0
	if b.kind != Frames {
		h.Namelen = unix.SizeofSockaddrInet4 // a read overwrites it
	}
	if b.kind == IPv4TOS {
		h.SetControllen(cmsgTOSSpace) // a read shortens it
	}
}

// SetDest sets slot i's destination for a write, and with IPv4TOS the TOS
// byte it goes out with. Not for Frames batches.
func (b *Batch) SetDest(i int, addr [4]byte, port uint16, tos uint8) {
	n := &b.name[i]
	n.Addr = addr
	p := (*[2]byte)(unsafe.Pointer(&n.Port))
	p[0], p[1] = byte(port>>8), byte(port) // network byte order
	if b.kind == IPv4TOS {
		*(*int32)(unsafe.Pointer(&b.oob[i*cmsgTOSSpace+unix.CmsgLen(0)])) = int32(tos)
	}
}

// Len is the length of the datagram read into slot i; on a Conn with
// Options.Trunc, its length before truncation to the buffer.
func (b *Batch) Len(i int) int { return int(b.h[i].Len) }

// Src is the source address of the datagram read into slot i. Not for
// Frames batches.
func (b *Batch) Src(i int) [4]byte { return b.name[i].Addr }

// TOS is the TOS byte of the datagram read into slot i of an IPv4TOS
// batch, from the IP_TOS control message a socket with IP_RECVTOS
// delivers; 0 without one.
func (b *Batch) TOS(i int) uint8 {
	if b.h[i].Hdr.Controllen < uint64(unix.CmsgLen(1)) {
		return 0
	}
	oob := b.oob[i*cmsgTOSSpace : (i+1)*cmsgTOSSpace]
	c := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	if c.Level != unix.IPPROTO_IP || c.Type != unix.IP_TOS {
		return 0
	}
	return oob[unix.CmsgLen(0)]
}

// recv reads up to b.n datagrams without blocking; false parks the caller
// on the netpoller until the socket is readable.
func (b *Batch) recv(fd uintptr) bool {
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.h[0])), uintptr(b.n),
			uintptr(b.flags), 0, 0)
		switch e {
		case 0:
			b.done = int(r)
			return true
		case unix.EINTR:
		case unix.EAGAIN:
			b.done = 0
			return !b.wait
		default:
			b.errno = e
			return true
		}
	}
}

// send writes slots b.done..b.n-1 without blocking; false parks the caller
// until the socket is writable.
func (b *Batch) send(fd uintptr) bool {
	for b.done < b.n {
		r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&b.h[b.done])), uintptr(b.n-b.done),
			unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == 0:
			b.done += int(r)
			b.sent += int(r)
		case e == unix.EINTR:
		case e == unix.EAGAIN:
			return false
		case e == unix.ENOBUFS && b.skipRefused:
			b.done++ // refused by the device or its queue: dropped
		default:
			b.errno = e
			return true
		}
	}
	return true
}

// Options are a Conn's policies.
type Options struct {
	// Trunc reads with MSG_TRUNC: Batch.Len is a datagram's real length,
	// so a caller tells a truncated one by its size (AF_PACKET).
	Trunc bool
	// SkipRefused drops a datagram the device refuses (ENOBUFS, as a
	// full veth peer answers) and sends the rest; Write counts only those
	// accepted. Otherwise ENOBUFS is an error.
	SkipRefused bool
}

// Conn is a non-blocking socket read and written in batches.
type Conn struct {
	f      *os.File
	rc     syscall.RawConn
	flags  int
	opt    Options
	closed atomic.Bool
}

// NewConn takes over fd, a non-blocking datagram socket (SOCK_NONBLOCK),
// and registers it with the netpoller; name appears in the file's name.
// On error fd is closed.
func NewConn(fd int, name string, opt Options) (*Conn, error) {
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("batchsock %s: %w", name, err)
	}
	c := &Conn{f: f, rc: rc, opt: opt, flags: unix.MSG_DONTWAIT}
	if opt.Trunc {
		c.flags |= unix.MSG_TRUNC
	}
	return c, nil
}

// Read waits until at least one datagram is queued, then reads up to n
// (at most b.Size()) into b's slots 0..n-1 and returns how many. After
// Close its error wraps net.ErrClosed.
func (c *Conn) Read(b *Batch, n int) (int, error) {
	return c.read(b, n, true)
}

// TryRead is Read without waiting: 0 datagrams when none is queued. It
// runs outside the read lock a parked Read holds (only the descriptor is
// pinned), so another goroutine can poll while a reader sleeps.
func (c *Conn) TryRead(b *Batch, n int) (int, error) {
	return c.read(b, n, false)
}

func (c *Conn) read(b *Batch, n int, wait bool) (int, error) {
	b.n, b.done, b.errno, b.flags, b.wait = min(n, len(b.h)), 0, 0, c.flags, wait
	var err error
	if wait {
		err = c.rc.Read(b.recvFn)
	} else {
		err = c.rc.Control(b.tryFn)
	}
	switch {
	case err != nil:
		return 0, c.wrap("read", err)
	case b.errno != 0:
		return 0, fmt.Errorf("recvmmsg: %w", b.errno)
	}
	return b.done, nil
}

// Write sends b's slots 0..n-1 (n at most b.Size()) in order, waiting
// while the socket is full, and returns how many the kernel accepted: all
// n unless Options.SkipRefused dropped some, or an error stopped it.
func (c *Conn) Write(b *Batch, n int) (int, error) {
	b.n, b.done, b.sent, b.errno, b.skipRefused = min(n, len(b.h)), 0, 0, 0, c.opt.SkipRefused
	if err := c.rc.Write(b.sendFn); err != nil {
		return b.sent, c.wrap("write", err)
	}
	if b.errno != 0 {
		return b.sent, fmt.Errorf("sendmmsg: %w", b.errno)
	}
	return b.sent, nil
}

// Control runs f with the socket's descriptor, for socket options.
func (c *Conn) Control(f func(fd uintptr)) error { return c.rc.Control(f) }

// Close closes the socket and wakes a parked Read, which then fails with
// an error wrapping net.ErrClosed.
func (c *Conn) Close() error {
	c.closed.Store(true)
	return c.f.Close()
}

// wrap names op in err, and after Close makes it wrap net.ErrClosed, which
// ends readers (the netpoller's own error does not).
func (c *Conn) wrap(op string, err error) error {
	if c.closed.Load() {
		return fmt.Errorf("%s: %w (%v)", op, net.ErrClosed, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
