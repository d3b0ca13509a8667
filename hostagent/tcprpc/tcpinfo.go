package tcprpc

import (
	"net"

	"golang.org/x/sys/unix"
)

// retransmits reads the kernel's count of segments this connection
// retransmitted (TCP_INFO tcpi_total_retrans); 0 when unavailable.
func retransmits(c net.Conn) uint64 {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	var n uint64
	rc.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			n = uint64(info.Total_retrans)
		}
	})
	return n
}
