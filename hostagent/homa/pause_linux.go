//go:build linux

package homa

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/wire"
)

// pauseSock is a packet socket for MAC control frames (ethertype 0x8808)
// on the interface that holds an address: where the switch's PAUSE frames
// arrive (the kernel consumes none on a veth).
type pauseSock struct{ f *os.File }

// openPause opens the pause socket of the interface that holds local. It
// needs CAP_NET_RAW.
func openPause(local netip.Addr) (*pauseSock, error) {
	ifi, err := interfaceOf(local)
	if err != nil {
		return nil, err
	}
	proto := int(htons(wire.EtherTypeMACControl))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, fmt.Errorf("homa: pause socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(wire.EtherTypeMACControl), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("homa: bind pause socket to %s: %w", ifi.Name, err)
	}
	// A non-blocking descriptor reads through Go's netpoller, and Close
	// unblocks a waiting read.
	return &pauseSock{f: os.NewFile(uintptr(fd), "homa-pause-"+ifi.Name)}, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// interfaceOf is the network interface that holds addr.
func interfaceOf(addr netip.Addr) (*net.Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("homa: interfaces: %w", err)
	}
	for i := range ifs {
		addrs, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == addr {
				return &ifs[i], nil
			}
		}
	}
	return nil, fmt.Errorf("homa: no interface holds %v", addr)
}

// ReadPause implements PauseReader.
func (c *RawConn) ReadPause(b []byte) (int, error) {
	if c.pause == nil {
		return 0, fmt.Errorf("homa: no pause socket (%v): %w", c.pauseErr, net.ErrClosed)
	}
	n, err := c.pause.f.Read(b)
	if errors.Is(err, os.ErrClosed) {
		err = fmt.Errorf("homa: pause socket: %w", net.ErrClosed)
	}
	return n, err
}
