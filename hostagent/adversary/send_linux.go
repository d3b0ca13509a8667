//go:build linux

package adversary

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/hostagent/adversary/kind"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/wire"
)

// discardPort is where priority_abuse's datagrams go (RFC 863): nothing
// listens there in a run's hosts, so the victim's kernel drops them after
// the switch has queued them.
const discardPort = 9

// Open returns the Sender for cfg's kind from local: a raw Homa socket
// (homa.RawConn, batched through sendmmsg) for the Homa kinds, a UDP
// socket whose every datagram carries the top TOS for priority_abuse.
func Open(local netip.Addr, k Kind) (Sender, func() error, error) {
	if k != kind.PriorityAbuse {
		c, err := homa.ListenRaw(local)
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error { return setTOS(rc) }}
	pc, err := lc.ListenPacket(context.Background(), "udp4", netip.AddrPortFrom(local, 0).String())
	if err != nil {
		return nil, nil, fmt.Errorf("adversary: udp socket on %v: %w", local, err)
	}
	u := &udpSender{c: pc.(*net.UDPConn)}
	return u, pc.Close, nil
}

// setTOS marks every datagram of the socket with the top priority.
func setTOS(rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, topTOS) }); err != nil {
		return err
	}
	return serr
}

// udpSender writes each packet as one datagram to its address's discard
// port; the TOS is the socket's (top priority), whatever the packet says.
type udpSender struct{ c *net.UDPConn }

func (u *udpSender) WriteBatch(pkts []homa.Packet) error {
	var first error
	for _, p := range pkts {
		if _, err := u.c.WriteToUDPAddrPort(p.Buf, netip.AddrPortFrom(p.Addr, discardPort)); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// OpenSpoofed returns a Sender whose Homa packets carry src as their IPv4
// source, whatever the host's address: a raw socket that writes its own
// IPv4 headers (IPPROTO_RAW, which implies IP_HDRINCL; the kernel fills
// in the checksum and the identification). It needs CAP_NET_RAW, which
// the run's hosts have.
func OpenSpoofed(src netip.Addr) (Sender, func() error, error) {
	if !src.Is4() {
		return nil, nil, fmt.Errorf("adversary: spoofed source %v is not IPv4", src)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return nil, nil, fmt.Errorf("adversary: raw socket for source %v: %w", src, err)
	}
	s := &spoofSender{fd: fd, src: src.As4(), buf: make([]byte, 0, 1<<16)}
	return s, func() error { return unix.Close(fd) }, nil
}

// spoofSender writes each packet behind an IPv4 header from src.
type spoofSender struct {
	fd  int
	src [4]byte
	buf []byte
}

func (s *spoofSender) WriteBatch(pkts []homa.Packet) error {
	var first error
	for _, p := range pkts {
		b := s.buf[:20]
		b[0], b[1] = 0x45, p.TOS
		binary.BigEndian.PutUint16(b[2:], uint16(20+len(p.Buf)))
		binary.BigEndian.PutUint32(b[4:], 0) // id (kernel), flags, fragment offset
		b[8], b[9] = 64, wire.IPProto
		b[10], b[11] = 0, 0 // checksum: the kernel's
		copy(b[12:16], s.src[:])
		dst := p.Addr.As4()
		copy(b[16:20], dst[:])
		b = append(b, p.Buf...)
		if err := unix.Sendto(s.fd, b, 0, &unix.SockaddrInet4{Addr: dst}); err != nil && first == nil {
			first = err
		}
	}
	return first
}
