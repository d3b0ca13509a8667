//go:build linux

package homa

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/hostagent/homa/wire"
)

// rawBatch is the batch size of raw sockets: recvmmsg/sendmmsg vectors.
const rawBatch = 64

// cmsgTOSSpace is the control buffer of one IP_TOS cmsg carrying an int.
var cmsgTOSSpace = unix.CmsgSpace(4)

// RawConn is a raw IPv4 protocol-146 socket. Reads use recvmmsg and take
// the TOS byte from the IP header the kernel delivers with each packet;
// writes use sendmmsg with a per-packet IP_TOS control message. Both go
// through Go's netpoller, so a waiting reader parks instead of holding a
// thread. One goroutine may read while another writes, and one more at a
// time may poll with TryReadBatch.
type RawConn struct {
	f       *os.File
	rc      syscall.RawConn
	local   netip.Addr
	udpPort uint16 // 0: raw Homa socket
	closed  atomic.Bool

	rd, try rxVec // ReadBatch's and TryReadBatch's
	readFn  func(uintptr) bool
	tryFn   func(uintptr)

	// Write side, used only by the writing goroutine.
	wh      []unix.Mmsghdr
	wiov    []unix.Iovec
	wname   []unix.RawSockaddrInet4
	woob    []byte
	wn      int
	wdone   int
	werr    syscall.Errno
	writeFn func(uintptr) bool
}

// rxVec is the recvmmsg state of one reading goroutine.
type rxVec struct {
	h    []unix.Mmsghdr
	iov  []unix.Iovec
	name []unix.RawSockaddrInet4
	n    int
	got  int
	err  syscall.Errno
	// wait: recv reports EAGAIN as "not done", so that the netpoller
	// parks the reader; otherwise as zero packets.
	wait bool
}

func newRxVec(wait bool) rxVec {
	v := rxVec{h: make([]unix.Mmsghdr, rawBatch), iov: make([]unix.Iovec, rawBatch),
		name: make([]unix.RawSockaddrInet4, rawBatch), wait: wait}
	for i := range rawBatch {
		v.h[i].Hdr.Iov, v.h[i].Hdr.Iovlen = &v.iov[i], 1
		v.h[i].Hdr.Name = (*byte)(unsafe.Pointer(&v.name[i]))
	}
	return v
}

// recv reads a batch without blocking (MSG_DONTWAIT), so it is a raw
// system call: unix.Syscall6 would tell the Go scheduler it may block,
// which wakes the runtime's monitor thread whenever the process was idle
// before, a context switch per packet burst on a shared machine.
func (v *rxVec) recv(fd uintptr) bool {
	r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&v.h[0])), uintptr(v.n), unix.MSG_DONTWAIT, 0, 0)
	switch {
	case e == unix.EAGAIN || e == unix.EINTR:
		if v.wait {
			return false
		}
		v.got, v.err = 0, 0
	default:
		v.got, v.err = int(r), e
	}
	return true
}

var _ Conn = (*RawConn)(nil)

// ListenRaw opens a raw socket for protocol 146 bound to local, so it
// receives only Homa packets addressed to local. It needs CAP_NET_RAW.
func ListenRaw(local netip.Addr) (*RawConn, error) { return listenBatch(local, 0) }

// listenBatch opens the raw socket, or with udpPort != 0 a UDP socket on
// that port whose peers use the same port: the baseline the benchmarks
// compare Homa with, through the very same batched code.
func listenBatch(local netip.Addr, udpPort uint16) (*RawConn, error) {
	if !local.Is4() {
		return nil, fmt.Errorf("homa: listen raw %v: not an IPv4 address", local)
	}
	typ, proto := unix.SOCK_RAW, wire.IPProto
	if udpPort != 0 {
		typ, proto = unix.SOCK_DGRAM, unix.IPPROTO_UDP
	}
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, fmt.Errorf("homa: raw socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: local.As4(), Port: int(udpPort)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("homa: bind raw socket to %v: %w", local, err)
	}
	// Large buffers absorb bursts of unscheduled packets; FORCE needs
	// CAP_NET_ADMIN, so fall back to the capped option.
	for _, o := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], 8<<20) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[1], 8<<20)
		}
	}
	f := os.NewFile(uintptr(fd), fmt.Sprintf("homa-raw-%v", local))
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("homa: raw socket: %w", err)
	}
	c := &RawConn{f: f, rc: rc, local: local, udpPort: udpPort, rd: newRxVec(true), try: newRxVec(false),
		wh: make([]unix.Mmsghdr, rawBatch), wiov: make([]unix.Iovec, rawBatch),
		wname: make([]unix.RawSockaddrInet4, rawBatch), woob: make([]byte, rawBatch*cmsgTOSSpace)}
	for i := range rawBatch {
		w := &c.wh[i].Hdr
		w.Iov, w.Iovlen = &c.wiov[i], 1
		w.Name, w.Namelen = (*byte)(unsafe.Pointer(&c.wname[i])), unix.SizeofSockaddrInet4
		oob := c.woob[i*cmsgTOSSpace : (i+1)*cmsgTOSSpace]
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TOS
		h.SetLen(unix.CmsgLen(4))
		w.Control = &oob[0]
		w.SetControllen(cmsgTOSSpace)
		c.wname[i].Family = unix.AF_INET
		port := (*[2]byte)(unsafe.Pointer(&c.wname[i].Port))
		port[0], port[1] = byte(udpPort>>8), byte(udpPort) // network byte order
	}
	// Method values allocate once here, not per syscall.
	c.readFn, c.writeFn = c.rd.recv, c.doWrite
	c.tryFn = func(fd uintptr) { c.try.recv(fd) }
	return c, nil
}

// LocalAddr implements Conn.
func (c *RawConn) LocalAddr() netip.Addr { return c.local }

// BatchSize implements Conn.
func (c *RawConn) BatchSize() int { return rawBatch }

// Close implements Conn.
func (c *RawConn) Close() error {
	c.closed.Store(true)
	return c.f.Close()
}

// ReadBatch implements Conn. The kernel delivers each packet with its IP
// header; the header is stripped after its TOS and source are read.
func (c *RawConn) ReadBatch(pkts []Packet) (int, error) {
	c.rd.prepare(pkts)
	if err := c.rc.Read(c.readFn); err != nil {
		return 0, c.wrap("read", err)
	}
	return c.finish(&c.rd, pkts)
}

// TryReadBatch is ReadBatch without waiting: 0 packets when none is
// queued. It runs outside the read lock that a parked ReadBatch holds
// (Control only pins the descriptor), so it can fetch packets while the
// Endpoint's reader sleeps.
func (c *RawConn) TryReadBatch(pkts []Packet) (int, error) {
	c.try.prepare(pkts)
	if err := c.rc.Control(c.tryFn); err != nil {
		return 0, c.wrap("read", err)
	}
	return c.finish(&c.try, pkts)
}

func (v *rxVec) prepare(pkts []Packet) {
	v.n = min(len(pkts), rawBatch)
	for i := range v.n {
		b := pkts[i].Buf[:cap(pkts[i].Buf)]
		v.iov[i].Base = &b[0]
		v.iov[i].SetLen(len(b))
		v.h[i].Hdr.Namelen = unix.SizeofSockaddrInet4 // the kernel overwrites it
	}
}

// finish reslices pkts to what v's recvmmsg delivered.
func (c *RawConn) finish(v *rxVec, pkts []Packet) (int, error) {
	if v.err != 0 {
		return 0, c.wrap("recvmmsg", v.err)
	}
	if c.udpPort != 0 {
		for i := range v.got {
			pkts[i].Buf = pkts[i].Buf[:v.h[i].Len]
			pkts[i].Addr, pkts[i].TOS = netip.AddrFrom4(v.name[i].Addr), 0
		}
		return v.got, nil
	}
	n := 0
	for i := range v.got {
		b := pkts[i].Buf[:v.h[i].Len]
		if len(b) < 20 || b[0]>>4 != 4 {
			continue
		}
		ihl := int(b[0]&0x0f) * 4
		if ihl < 20 || len(b) < ihl {
			continue
		}
		p := &pkts[n]
		p.TOS = b[1]
		p.Addr = netip.AddrFrom4([4]byte(b[12:16]))
		p.Buf = pkts[n].Buf[:copy(pkts[n].Buf[:cap(pkts[n].Buf)], b[ihl:])]
		n++
	}
	return n, nil
}

// doWrite sends the batch without blocking (MSG_DONTWAIT): a raw system
// call, as recv.
func (c *RawConn) doWrite(fd uintptr) bool {
	for c.wdone < c.wn {
		r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&c.wh[c.wdone])), uintptr(c.wn-c.wdone), unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			c.wdone += int(r)
		case unix.EAGAIN:
			return false
		case unix.EINTR:
		default:
			c.werr = e
			return true
		}
	}
	return true
}

// WriteBatch implements Conn.
func (c *RawConn) WriteBatch(pkts []Packet) error {
	for len(pkts) > 0 {
		c.wn = min(len(pkts), rawBatch)
		for i := range c.wn {
			p := &pkts[i]
			c.wiov[i].Base = &p.Buf[0]
			c.wiov[i].SetLen(len(p.Buf))
			c.wname[i].Addr = p.Addr.As4()
			*(*int32)(unsafe.Pointer(&c.woob[i*cmsgTOSSpace+unix.CmsgLen(0)])) = int32(p.TOS)
		}
		c.wdone, c.werr = 0, 0
		if err := c.rc.Write(c.writeFn); err != nil {
			return c.wrap("write", err)
		}
		if c.werr != 0 {
			return c.wrap("sendmmsg", c.werr)
		}
		pkts = pkts[c.wn:]
	}
	return nil
}

// wrap turns errors after Close into net.ErrClosed, which ends readers.
func (c *RawConn) wrap(op string, err error) error {
	if c.closed.Load() || errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("homa: raw %s: %w", op, net.ErrClosed)
	}
	return fmt.Errorf("homa: raw %s: %w", op, err)
}
