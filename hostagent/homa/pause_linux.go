//go:build linux

package homa

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/homatb/homatb/hostagent/linkpause"
	"github.com/homatb/homatb/internal/sysinfo"
)

// openPause opens the PAUSE socket of the interface that holds local,
// where the switch's PAUSE frames arrive (the kernel consumes none on a
// veth). It needs CAP_NET_RAW.
func openPause(local netip.Addr) (*linkpause.Socket, error) {
	ifi, err := sysinfo.InterfaceOf(local)
	if err != nil {
		return nil, fmt.Errorf("homa: %w", err)
	}
	return linkpause.Open(ifi)
}

// ReadPause implements PauseReader.
func (c *RawConn) ReadPause(b []byte) (int, error) {
	if c.pause == nil {
		return 0, fmt.Errorf("homa: no pause socket (%v): %w", c.pauseErr, net.ErrClosed)
	}
	return c.pause.Read(b)
}
