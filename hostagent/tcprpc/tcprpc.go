// Package tcprpc is the kernel-TCP baseline transport of the host agent: RPCs
// over persistent TCP connections with TCP_NODELAY, a configurable number
// of connections per peer and a selectable congestion control.
//
// Messages are serialised on each connection: requests are written one
// whole message after another and responses come back in the same order, so
// a short RPC queued behind a long one waits for it (head-of-line blocking,
// as in production RPC stacks that multiplex one connection).
//
// Framing: each message is a 4-byte big-endian payload length followed by
// the payload.
package tcprpc

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"

	"github.com/homatb/homatb/hostagent/tcpcc"
)

// MaxMessage bounds one message, so a corrupt length cannot make a peer
// allocate without limit.
const MaxMessage = 64 << 20

// headerLen is the size of the length prefix.
const headerLen = 4

// Config configures both ends.
type Config struct {
	// Congestion is the TCP congestion control ("reno", "cubic", "bbr", ...,
	// or one of package tcpcc's BPF controls by its scenario name, "dctcp" or
	// "nv", which must be registered); empty keeps the kernel default.
	Congestion string
	// ConnsPerPeer is the number of connections a client opens to each
	// server (default 1).
	ConnsPerPeer int
}

// validate checks the configuration and fills defaults.
func (c Config) validate() (Config, error) {
	if c.ConnsPerPeer == 0 {
		c.ConnsPerPeer = 1
	}
	if c.ConnsPerPeer < 0 || c.ConnsPerPeer > 1024 {
		return c, fmt.Errorf("tcp connections per peer %d: expected 1..1024", c.ConnsPerPeer)
	}
	if c.Congestion != "" {
		avail, err := tcpcc.Available()
		if err != nil {
			return c, err
		}
		if k := tcpcc.KernelName(c.Congestion); !slices.Contains(avail, k) {
			if k != c.Congestion {
				return c, fmt.Errorf("tcp congestion control %q: %s is not registered (homatb run registers it at run start); the kernel offers %s", c.Congestion, k, strings.Join(avail, ", "))
			}
			return c, fmt.Errorf("tcp congestion control %q: the kernel offers %s", c.Congestion, strings.Join(avail, ", "))
		}
	}
	return c, nil
}

// control sets the congestion control on a socket before connect/listen;
// accepted sockets inherit it from the listener. Setting it on the listener
// matters for DCTCP: the kernel accepts ECN from a SYN only when the
// listener's control asks for it (TCP_CONG_NEEDS_ECN).
func (c Config) control(_, _ string, rc syscall.RawConn) error {
	if c.Congestion == "" {
		return nil
	}
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, tcpcc.KernelName(c.Congestion))
	})
	if err != nil {
		return fmt.Errorf("setting TCP_CONGESTION: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("setting TCP_CONGESTION %q: %w", c.Congestion, serr)
	}
	return nil
}

// writeMessage writes one framed message.
func writeMessage(w *bufio.Writer, payload []byte) error {
	var h [headerLen]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(payload)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// readHeader reads a length prefix.
func readHeader(r *bufio.Reader) (int, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > MaxMessage {
		return 0, fmt.Errorf("message of %d bytes above the %d-byte limit: corrupt stream", n, MaxMessage)
	}
	return int(n), nil
}
