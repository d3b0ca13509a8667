package testbed

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// bmv2FrameTruesize bounds what one full frame waiting in a port shaper
// charges to the socket that sent it (the frame, the skb and its slab
// rounding).
const bmv2FrameTruesize = 4096

// raiseSendBuffers lets each packet socket of process pid hold bytes of
// frames not yet on the wire. BMv2 sends through one blocking packet
// socket per port, from one transmit thread for all ports; a frame waiting
// in the port's shaper stays charged to its socket, so once a shaper holds
// more than the socket's send buffer (net.core.wmem_default, about 90 full
// frames, a sysctl no namespace can change) the thread blocks and every
// port of the switch stalls behind the one. The buffers are set from
// outside the process: pidfd_getfd duplicates its sockets and
// SO_SNDBUFFORCE (root) sets the socket both descriptors share. It returns
// how many sockets it raised.
func raiseSendBuffers(pid, bytes int) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	raised := 0
	for _, e := range ents {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(target, "socket:") {
			continue
		}
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ok, err := raiseIfPacket(pidfd, n, bytes)
		if err != nil {
			return raised, fmt.Errorf("process %d fd %d: %w", pid, n, err)
		}
		if ok {
			raised++
		}
	}
	return raised, nil
}

// raiseIfPacket sets the send buffer of the process's descriptor n when it
// is a packet socket.
func raiseIfPacket(pidfd, n, bytes int) (bool, error) {
	fd, err := unix.PidfdGetfd(pidfd, n, 0)
	if errors.Is(err, unix.EBADF) {
		return false, nil // closed since it was listed
	}
	if err != nil {
		return false, fmt.Errorf("pidfd_getfd: %w", err)
	}
	defer unix.Close(fd)
	if dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || dom != unix.AF_PACKET {
		return false, nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, bytes); err != nil {
		return false, fmt.Errorf("SO_SNDBUFFORCE %d: %w", bytes, err)
	}
	return true, nil
}
