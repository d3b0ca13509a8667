//go:build linux

package homa

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/linkpause"
	"github.com/homatb/homatb/internal/batchsock"
	"github.com/homatb/homatb/wire"
)

// rawBatch is the batch size of raw sockets: recvmmsg/sendmmsg vectors.
const rawBatch = 64

// RawConn is a raw IPv4 protocol-146 socket. Reads use recvmmsg and take
// the TOS byte from the IP header the kernel delivers with each packet;
// writes use sendmmsg with a per-packet IP_TOS control message
// (internal/batchsock). Both go through Go's netpoller, so a waiting
// reader parks instead of holding a thread. One goroutine may read while
// another writes, and one more at a time may poll with TryReadBatch.
type RawConn struct {
	conn    *batchsock.Conn
	local   netip.Addr
	udpPort uint16 // 0: raw Homa socket

	rd, try *batchsock.Batch // ReadBatch's and TryReadBatch's
	w       *batchsock.Batch // WriteBatch's

	// send, for uet, is a raw UDP socket the datagrams go out on, each
	// with a UDP header written here whose source port is the packet's
	// entropy (Packet.Entropy): the switches' multipath hash reads it.
	// It receives nothing (a filter drops every copy the kernel hands
	// it); the UDP socket (conn) receives.
	send    *batchsock.Conn
	udpHead [rawBatch][wire.UDPHeaderLen]byte

	// pause receives PFC PAUSE frames (roce only; nil when it could not be
	// opened, pauseErr says why).
	pause    *linkpause.Socket
	pauseErr error
}

var _ Conn = (*RawConn)(nil)

// ListenRaw opens a raw socket for protocol 146 bound to local, so it
// receives only Homa packets addressed to local. It needs CAP_NET_RAW.
func ListenRaw(local netip.Addr) (*RawConn, error) { return listenBatch(local, 0) }

// ListenRoCE opens the roce variant's socket: UDP on local's port 4791,
// to peers on the same port, with each datagram's TOS byte read (the
// responder sends CNPs for ECN CE) and written (priority and ECT).
//
// It also opens a packet socket for the PFC PAUSE frames the interface
// that holds local receives (ReadPause), which needs CAP_NET_RAW; without
// it the Conn works and its Endpoint does not obey PAUSE frames
// (PauseUnavailable says why).
func ListenRoCE(local netip.Addr) (*RawConn, error) {
	c, err := listenBatch(local, wire.RoCEPort)
	if err != nil {
		return nil, err
	}
	c.pause, c.pauseErr = openPause(local)
	return c, nil
}

// PauseUnavailable says why the Conn does not receive PAUSE frames (nil
// when it does).
func (c *RawConn) PauseUnavailable() error {
	if c.pause != nil {
		return nil
	}
	if c.pauseErr == nil {
		return errors.New("not a roce socket")
	}
	return c.pauseErr
}

// Listen opens the socket the variant of cfg runs on: ListenRoCE for
// roce, ListenUET on cfg's UET port (4793 by default) for uet, ListenRaw
// for the others.
func Listen(local netip.Addr, cfg *homaconf.Config) (*RawConn, error) {
	switch cfg.Variant {
	case homaconf.VariantRoCE:
		return ListenRoCE(local)
	case homaconf.VariantUET:
		return ListenUET(local, cmp.Or(cfg.UETPort, wire.UETPort))
	}
	return ListenRaw(local)
}

// ListenUET opens the uet variant's sockets: UDP on local's port (UET's
// 4793 unless configured otherwise) to receive, and a raw UDP socket to send, so that each datagram leaves
// from the source port its entropy names (Packet.Entropy; the bound port
// when it is 0), with UDP checksum 0 (none, as IPv4 allows). Sending
// needs CAP_NET_RAW.
func ListenUET(local netip.Addr, port uint16) (*RawConn, error) {
	c, err := listenBatch(local, port)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err == nil {
		err = setupUETSend(fd, local)
		if err != nil {
			unix.Close(fd)
		}
	}
	if err == nil {
		c.send, err = batchsock.NewConn(fd, fmt.Sprintf("homa-uet-%v", local), batchsock.Options{})
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("homa: uet send socket on %v: %w", local, err)
	}
	return c, nil
}

// setupUETSend binds the raw UDP socket fd to local, makes it drop what it
// would receive (every UDP datagram to local: the UDP socket has them)
// and gives it a large send buffer.
func setupUETSend(fd int, local netip.Addr) error {
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: local.As4()}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	dropAll := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
		&unix.SockFprog{Len: uint16(len(dropAll)), Filter: &dropAll[0]}); err != nil {
		return fmt.Errorf("receive filter: %w", err)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 8<<20)
	}
	return nil
}

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
	// A UDP socket delivers no IP header: ask for the TOS byte with
	// each datagram instead.
	if udpPort != 0 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("homa: udp socket IP_RECVTOS: %w", err)
		}
	}
	conn, err := batchsock.NewConn(fd, fmt.Sprintf("homa-raw-%v", local), batchsock.Options{})
	if err != nil {
		return nil, fmt.Errorf("homa: raw socket: %w", err)
	}
	rk := batchsock.IPv4
	if udpPort != 0 {
		rk = batchsock.IPv4TOS
	}
	return &RawConn{conn: conn, local: local, udpPort: udpPort, rd: batchsock.NewBatch(rawBatch, rk),
		try: batchsock.NewBatch(rawBatch, rk), w: batchsock.NewBatch(rawBatch, batchsock.IPv4TOS)}, nil
}

// LocalAddr implements Conn.
func (c *RawConn) LocalAddr() netip.Addr { return c.local }

// BatchSize implements Conn.
func (c *RawConn) BatchSize() int { return rawBatch }

// Close implements Conn.
func (c *RawConn) Close() error {
	err := c.conn.Close()
	if c.send != nil {
		err = errors.Join(err, c.send.Close())
	}
	if c.pause != nil {
		err = errors.Join(err, c.pause.Close())
	}
	return err
}

// ReadBatch implements Conn. The kernel delivers each packet with its IP
// header; the header is stripped after its TOS and source are read.
func (c *RawConn) ReadBatch(pkts []Packet) (int, error) {
	n, err := c.conn.Read(c.rd, prepare(c.rd, pkts))
	if err != nil {
		return 0, c.wrap(err)
	}
	return c.finish(c.rd, pkts, n), nil
}

// TryReadBatch is ReadBatch without waiting: 0 packets when none is
// queued. It runs outside the read lock that a parked ReadBatch holds
// (Control only pins the descriptor), so it can fetch packets while the
// Endpoint's reader sleeps.
func (c *RawConn) TryReadBatch(pkts []Packet) (int, error) {
	n, err := c.conn.TryRead(c.try, prepare(c.try, pkts))
	if err != nil {
		return 0, c.wrap(err)
	}
	return c.finish(c.try, pkts, n), nil
}

// prepare offers the whole buffer of each packet to the read.
func prepare(b *batchsock.Batch, pkts []Packet) int {
	n := min(len(pkts), b.Size())
	for i := range n {
		b.SetBuf(i, pkts[i].Buf[:cap(pkts[i].Buf)])
	}
	return n
}

// finish reslices pkts to the got packets b holds.
func (c *RawConn) finish(b *batchsock.Batch, pkts []Packet, got int) int {
	if c.udpPort != 0 {
		for i := range got {
			pkts[i].Buf = pkts[i].Buf[:b.Len(i)]
			pkts[i].Addr, pkts[i].TOS = netip.AddrFrom4(b.Src(i)), b.TOS(i)
		}
		return got
	}
	n := 0
	for i := range got {
		buf := pkts[i].Buf[:b.Len(i)]
		if len(buf) < 20 || buf[0]>>4 != 4 {
			continue
		}
		ihl := int(buf[0]&0x0f) * 4
		if ihl < 20 || len(buf) < ihl {
			continue
		}
		p := &pkts[n]
		p.TOS = buf[1]
		p.Addr = netip.AddrFrom4([4]byte(buf[12:16]))
		p.Buf = pkts[n].Buf[:copy(pkts[n].Buf[:cap(pkts[n].Buf)], buf[ihl:])]
		n++
	}
	return n
}

// WriteBatch implements Conn.
func (c *RawConn) WriteBatch(pkts []Packet) error {
	conn := c.conn
	if c.send != nil {
		conn = c.send
	}
	for len(pkts) > 0 {
		n := min(len(pkts), c.w.Size())
		for i := range n {
			p := &pkts[i]
			if c.send != nil {
				h := &c.udpHead[i]
				binary.BigEndian.PutUint16(h[0:], cmp.Or(p.Entropy, c.udpPort))
				binary.BigEndian.PutUint16(h[2:], c.udpPort)
				binary.BigEndian.PutUint16(h[4:], uint16(wire.UDPHeaderLen+len(p.Buf)))
				binary.BigEndian.PutUint16(h[6:], 0)
				c.w.SetBufs(i, h[:], p.Buf)
				c.w.SetDest(i, p.Addr.As4(), 0, p.TOS)
				continue
			}
			c.w.SetBuf(i, p.Buf)
			c.w.SetDest(i, p.Addr.As4(), c.udpPort, p.TOS)
		}
		if _, err := conn.Write(c.w, n); err != nil {
			return c.wrap(err)
		}
		pkts = pkts[n:]
	}
	return nil
}

// wrap names the socket in err; after Close, err wraps net.ErrClosed,
// which ends readers.
func (c *RawConn) wrap(err error) error { return fmt.Errorf("homa: raw %v: %w", c.local, err) }
