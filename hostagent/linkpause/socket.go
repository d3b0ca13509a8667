//go:build linux

package linkpause

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/wire"
)

// Socket receives the MAC control frames (ethertype 0x8808) that arrive on
// one interface: where the switch's PAUSE frames come in.
type Socket struct{ f *os.File }

// Open opens the PAUSE socket of interface ifi. It needs CAP_NET_RAW.
func Open(ifi *net.Interface) (*Socket, error) {
	proto := htons(wire.EtherTypeMACControl)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		return nil, fmt.Errorf("linkpause: packet socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("linkpause: bind a packet socket to %s: %w", ifi.Name, err)
	}
	// A non-blocking descriptor reads through Go's netpoller, and Close
	// unblocks a waiting read.
	return &Socket{f: os.NewFile(uintptr(fd), "pause-"+ifi.Name)}, nil
}

// Read reads one frame into b. After Close it returns an error that
// wraps net.ErrClosed.
func (s *Socket) Read(b []byte) (int, error) {
	n, err := s.f.Read(b)
	if errors.Is(err, os.ErrClosed) {
		err = fmt.Errorf("linkpause: socket: %w", net.ErrClosed)
	}
	return n, err
}

// Write sends frame f, a whole Ethernet frame, out of the interface.
func (s *Socket) Write(f []byte) (int, error) { return s.f.Write(f) }

// Close closes the socket.
func (s *Socket) Close() error { return s.f.Close() }

func htons(v uint16) uint16 { return v<<8 | v>>8 }
