package tcprpc

import (
	"net"

	"golang.org/x/sys/unix"
)

// tcpInfo reads c's TCP_INFO; false when c is not a TCP connection or the
// kernel does not answer.
func tcpInfo(c net.Conn) (*unix.TCPInfo, bool) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, false
	}
	var info *unix.TCPInfo
	rc.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	})
	return info, err == nil && info != nil
}

// retransmits reads the kernel's count of segments this connection
// retransmitted (TCP_INFO tcpi_total_retrans); 0 when unavailable.
func retransmits(c net.Conn) uint64 {
	if info, ok := tcpInfo(c); ok {
		return uint64(info.Total_retrans)
	}
	return 0
}

// tcpiOptECN is TCP_INFO's tcpi_options bit for a connection that
// negotiated ECN (include/uapi/linux/tcp.h; x/sys/unix lacks it).
const tcpiOptECN = 8

// ecnState is what TCP_INFO says about a connection's ECN.
type ecnState struct {
	negotiated  bool
	deliveredCE uint64 // tcpi_delivered_ce: segments delivered with CE marks
}

// ecnOf reads c's ECN state; zero when unavailable.
func ecnOf(c net.Conn) ecnState {
	if info, ok := tcpInfo(c); ok {
		return ecnState{negotiated: info.Options&tcpiOptECN != 0, deliveredCE: uint64(info.Delivered_ce)}
	}
	return ecnState{}
}

// ConnInfo is what TCP_INFO says of one client connection at one time.
type ConnInfo struct {
	// Peer is the server's address; Slot tells its connections apart.
	Peer string
	Slot int
	// CwndSegs is the congestion window (segments), SRTTus and RTTVarUs
	// the smoothed RTT and its variation, Retrans the segments
	// retransmitted so far, DeliveredCE those delivered with CE marks.
	CwndSegs, SRTTus, RTTVarUs uint32
	Retrans, DeliveredCE       uint64
}

// connInfo reads TCP_INFO of c into i; false when unavailable.
func connInfo(c net.Conn, i *ConnInfo) bool {
	info, ok := tcpInfo(c)
	if ok {
		i.CwndSegs, i.SRTTus, i.RTTVarUs = info.Snd_cwnd, info.Rtt, info.Rttvar
		i.Retrans, i.DeliveredCE = uint64(info.Total_retrans), uint64(info.Delivered_ce)
	}
	return ok
}

func btou(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
