//go:build linux

package adversary

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/hostagent/adversary/kind"
	"github.com/homatb/homatb/hostagent/homa"
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
