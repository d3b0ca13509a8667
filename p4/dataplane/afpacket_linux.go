package dataplane

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AFPacket is a Port on a network interface through an AF_PACKET socket,
// with batched receive (recvmmsg) and send (sendmmsg). The socket is
// non-blocking and parked in Go's netpoller, so an idle port costs no
// thread and Close wakes a blocked Recv.
type AFPacket struct {
	iface string
	fd    int
	file  *os.File
	rc    syscall.RawConn

	rmsgs []unix.Mmsghdr
	riovs []unix.Iovec
	smsgs []unix.Mmsghdr
	siovs []unix.Iovec

	// State of the call in progress, read by the callbacks below, which
	// are made once so that passing them to RawConn does not allocate.
	rn, sn, sdone, sok int
	rerr, serr         error
	recvFn, sendFn     func(fd uintptr) bool
	tryFn              func(fd uintptr)

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
	p := &AFPacket{
		iface: iface,
		fd:    fd,
		rmsgs: make([]unix.Mmsghdr, batch),
		riovs: make([]unix.Iovec, batch),
		smsgs: make([]unix.Mmsghdr, batch),
		siovs: make([]unix.Iovec, batch),
	}
	for i := range batch {
		p.rmsgs[i].Hdr.Iov = &p.riovs[i]
		p.rmsgs[i].Hdr.Iovlen = 1
		p.smsgs[i].Hdr.Iov = &p.siovs[i]
		p.smsgs[i].Hdr.Iovlen = 1
	}
	p.file = os.NewFile(uintptr(fd), "af_packet:"+iface)
	p.rc, err = p.file.SyscallConn()
	if err != nil {
		p.file.Close()
		return nil, fmt.Errorf("af_packet %s: %w", iface, err)
	}
	p.recvFn = p.recvOnce
	p.sendFn = p.sendOnce
	p.tryFn = func(fd uintptr) { p.recvOnce(fd) }
	return p, nil
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
	n := p.setRecv(bufs)
	p.rn, p.rerr = n, nil
	if err := p.rc.Read(p.recvFn); err != nil {
		return 0, fmt.Errorf("af_packet %s: recv: %w", p.iface, err)
	}
	return p.finishRecv(sizes)
}

// recvOnce runs inside RawConn.Read; false parks on the poller.
func (p *AFPacket) recvOnce(fd uintptr) bool {
	for {
		// MSG_TRUNC makes Len the frame's real length, so callers can
		// tell a truncated frame by its size. MSG_DONTWAIT never blocks,
		// so a raw system call: unix.Syscall6 would wake the runtime's
		// monitor thread after every idle spell.
		r, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&p.rmsgs[0])),
			uintptr(p.rn), unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
		switch errno {
		case 0:
			p.rn = int(r)
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			p.rn = 0
			return false
		default:
			p.rerr = fmt.Errorf("af_packet %s: recvmmsg: %w", p.iface, errno)
			return true
		}
	}
}

// TryRecv is Recv without waiting: it returns 0 when no frame is queued.
func (p *AFPacket) TryRecv(bufs [][]byte, sizes []int) (int, error) {
	n := p.setRecv(bufs)
	p.rn, p.rerr = n, nil
	if err := p.rc.Control(p.tryFn); err != nil {
		return 0, fmt.Errorf("af_packet %s: recv: %w", p.iface, err)
	}
	return p.finishRecv(sizes)
}

// Fd returns the socket, for a poller that waits on several ports.
func (p *AFPacket) Fd() int { return p.fd }

func (p *AFPacket) setRecv(bufs [][]byte) int {
	n := min(len(bufs), len(p.rmsgs))
	for i := range n {
		p.riovs[i].Base = &bufs[i][0]
		p.riovs[i].SetLen(len(bufs[i]))
		p.rmsgs[i].Hdr.Flags = 0
	}
	return n
}

func (p *AFPacket) finishRecv(sizes []int) (int, error) {
	if p.rerr != nil {
		return 0, p.rerr
	}
	for i := range p.rn {
		sizes[i] = int(p.rmsgs[i].Len)
	}
	return p.rn, nil
}

// Send implements Port. It returns when every frame was handed to the
// kernel or refused: a frame the device refused (ENOBUFS, as a full veth
// peer answers) is skipped, so n counts the frames accepted.
func (p *AFPacket) Send(frames [][]byte) (int, error) {
	done, ok := 0, 0
	for done < len(frames) {
		n := min(len(frames)-done, len(p.smsgs))
		for i := range n {
			f := frames[done+i]
			p.siovs[i].Base = &f[0]
			p.siovs[i].SetLen(len(f))
		}
		p.sn, p.sdone, p.sok, p.serr = n, 0, 0, nil
		if err := p.rc.Write(p.sendFn); err != nil {
			return ok, fmt.Errorf("af_packet %s: send: %w", p.iface, err)
		}
		done += p.sdone
		ok += p.sok
		if p.serr != nil {
			return ok, p.serr
		}
	}
	return ok, nil
}

// sendOnce runs inside RawConn.Write; false waits until the socket is
// writable again.
func (p *AFPacket) sendOnce(fd uintptr) bool {
	for p.sdone < p.sn {
		// Non-blocking, so raw, as in recvOnce.
		r, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&p.smsgs[p.sdone])),
			uintptr(p.sn-p.sdone), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			p.sdone += int(r)
			p.sok += int(r)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		case unix.ENOBUFS:
			p.sdone++ // dropped by the device or its queue
		default:
			p.serr = fmt.Errorf("af_packet %s: sendmmsg: %w", p.iface, errno)
			return true
		}
	}
	return true
}

// KernelDrops returns the frames the kernel dropped because the socket's
// receive buffer was full: the switch fell behind its inputs.
func (p *AFPacket) KernelDrops() uint64 {
	_ = p.rc.Control(func(fd uintptr) {
		if st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			p.kernelDrops.Add(uint64(st.Drops))
		}
	})
	return p.kernelDrops.Load()
}

// Close implements Port.
func (p *AFPacket) Close() error {
	if err := p.file.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("af_packet %s: close: %w", p.iface, err)
	}
	return nil
}
