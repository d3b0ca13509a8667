package dataplane

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/homatb/homatb/internal/batchsock"
)

// AFPacket is a Port on a network interface through an AF_PACKET socket,
// with batched receive (recvmmsg) and send (sendmmsg) through
// internal/batchsock. The socket is non-blocking and parked in Go's
// netpoller, so an idle port costs no thread and Close wakes a blocked
// Recv.
type AFPacket struct {
	iface string
	fd    int
	conn  *batchsock.Conn
	rb    *batchsock.Batch // Recv's and TryRecv's (one caller at a time)
	sb    *batchsock.Batch // Send's

	kernelDrops atomic.Uint64 // PACKET_STATISTICS drops, summed (reading resets them)
}

// OpenAFPacket opens iface as a port that receives and sends up to batch
// frames per system call. The interface is put in promiscuous mode, frames
// the socket itself sent are not received back, and GRO/GSO/TSO are turned
// off on it so frames arrive one wire packet at a time.
func OpenAFPacket(iface string, batch int) (*AFPacket, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("af_packet %s: %w", iface, err)
	}
	// Protocol 0 until bound: no frame from another interface is queued
	// on the socket in between.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("af_packet %s: socket: %w", iface, err)
	}
	if err := setupSocket(fd, ifi.Index); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("af_packet %s: %w", iface, err)
	}
	if err := disableOffloads(fd, iface); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("af_packet %s: %w", iface, err)
	}
	// MSG_TRUNC: a frame's size is its real length, so callers can tell a
	// truncated frame; a frame the device refuses (a full veth peer) is
	// skipped, as a wire would lose it.
	conn, err := batchsock.NewConn(fd, "af_packet:"+iface, batchsock.Options{Trunc: true, SkipRefused: true})
	if err != nil {
		return nil, fmt.Errorf("af_packet %s: %w", iface, err)
	}
	return &AFPacket{iface: iface, fd: fd, conn: conn,
		rb: batchsock.NewBatch(batch, batchsock.Frames), sb: batchsock.NewBatch(batch, batchsock.Frames)}, nil
}

func setupSocket(fd, ifindex int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
	}
	// Sending straight to the driver skips the qdisc layer: the switch
	// shapes its ports itself and no kernel queue may form behind it.
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		return fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fmt.Errorf("promiscuous mode: %w", err)
	}
	// Room for bursts while the receiver goroutine is descheduled; the
	// forced variant works as root beyond rmem_max.
	for _, opt := range [][3]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, 4 << 20}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, 4 << 20}} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt[0], opt[2]); err != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt[1], opt[2])
		}
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Legacy ethtool commands to clear one offload (struct ethtool_value).
const (
	ethtoolSTSO = 0x1f
	ethtoolSGSO = 0x24
	ethtoolSGRO = 0x2c
)

type ethtoolValue struct {
	cmd, data uint32
}

type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data uintptr
	_    [16]byte
}

// disableOffloads turns off segmentation and receive coalescing on iface so
// that no frame longer than the MTU reaches or leaves the switch. Frames
// that the peer sends as GSO still arrive oversize; those are dropped and
// counted (the peer's offloads must be off too).
func disableOffloads(fd int, iface string) error {
	for _, cmd := range []uint32{ethtoolSGRO, ethtoolSGSO, ethtoolSTSO} {
		v := ethtoolValue{cmd: cmd}
		var req ifreqData
		copy(req.name[:], iface)
		req.data = uintptr(unsafe.Pointer(&v))
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req)))
		if errno != 0 && errno != unix.EOPNOTSUPP {
			return fmt.Errorf("ethtool offload 0x%x off: %w", cmd, errno)
		}
	}
	return nil
}

// Recv implements Port.
func (p *AFPacket) Recv(bufs [][]byte, sizes []int) (int, error) {
	n, err := p.conn.Read(p.rb, p.setRecv(bufs))
	if err != nil {
		return 0, fmt.Errorf("af_packet %s: %w", p.iface, err)
	}
	return p.finishRecv(sizes, n), nil
}

// TryRecv is Recv without waiting: it returns 0 when no frame is queued.
func (p *AFPacket) TryRecv(bufs [][]byte, sizes []int) (int, error) {
	n, err := p.conn.TryRead(p.rb, p.setRecv(bufs))
	if err != nil {
		return 0, fmt.Errorf("af_packet %s: %w", p.iface, err)
	}
	return p.finishRecv(sizes, n), nil
}

// Fd returns the socket, for a poller that waits on several ports.
func (p *AFPacket) Fd() int { return p.fd }

func (p *AFPacket) setRecv(bufs [][]byte) int {
	n := min(len(bufs), p.rb.Size())
	for i := range n {
		p.rb.SetBuf(i, bufs[i])
	}
	return n
}

func (p *AFPacket) finishRecv(sizes []int, n int) int {
	for i := range n {
		sizes[i] = p.rb.Len(i)
	}
	return n
}

// Send implements Port. It returns when every frame was handed to the
// kernel or refused: a frame the device refused (ENOBUFS, as a full veth
// peer answers) is skipped, so n counts the frames accepted.
func (p *AFPacket) Send(frames [][]byte) (int, error) {
	ok := 0
	for done := 0; done < len(frames); {
		n := min(len(frames)-done, p.sb.Size())
		for i := range n {
			p.sb.SetBuf(i, frames[done+i])
		}
		sent, err := p.conn.Write(p.sb, n)
		ok += sent
		if err != nil {
			return ok, fmt.Errorf("af_packet %s: %w", p.iface, err)
		}
		done += n
	}
	return ok, nil
}

// KernelDrops returns the frames the kernel dropped because the socket's
// receive buffer was full: the switch fell behind its inputs.
func (p *AFPacket) KernelDrops() uint64 {
	_ = p.conn.Control(func(fd uintptr) {
		if st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			p.kernelDrops.Add(uint64(st.Drops))
		}
	})
	return p.kernelDrops.Load()
}

// Close implements Port.
func (p *AFPacket) Close() error {
	if err := p.conn.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("af_packet %s: close: %w", p.iface, err)
	}
	return nil
}
