package dataplane

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/homatb/homatb/wire"
)

// testPipeline forwards IPv4 frames by the last byte of the destination
// address (a fixture routing table) and queues them by the top three bits
// of the TOS byte, as Homa marks priorities. It counts what egress saw.
type testPipeline struct {
	route  [256]uint16 // last address byte -> port; 0 drops
	egress atomic.Uint64
	// lastMeta is the metadata of the last egress call (tests read it
	// after forwarding stopped).
	mu       sync.Mutex
	lastMeta EgressMeta
	dropEgr  bool
	// mode and modeArg are every frame's switch mode, as port_mode would
	// set them; Homa frames get their rank and DATA flag as tor.p4 reads
	// them.
	mode    Mode
	modeArg uint32
}

func (tp *testPipeline) Ingress(frame []byte, inPort uint16, v *Verdict) {
	if len(frame) < 34 || binary.BigEndian.Uint16(frame[12:14]) != 0x0800 {
		v.Drop = true
		return
	}
	port := tp.route[frame[33]]
	if port == 0 {
		v.Drop = true
		return
	}
	v.EgressPort = port
	v.Queue = frame[15] >> 5
	if tp.mode == ModeStrictPriority {
		return
	}
	v.Mode, v.ModeArg, v.Rank = tp.mode, tp.modeArg, RankMax
	if frame[23] == wire.IPProto && len(frame) >= HomaOffset+HomaCommonLen {
		v.Rank = binary.BigEndian.Uint32(frame[HomaRankOffset:])
		if frame[HomaTypeOffset] == HomaTypeData && frame[HomaFlagsOffset]&HomaFlagTrimmed == 0 &&
			len(frame) > TrimmedFrameLen {
			v.Trim = TrimHomaData
		}
	}
}

// makeHomaData builds a Homa DATA frame of size bytes to 10.0.0.dst with
// priority prio, the given rank and seq (at frame offset 42, in the DATA
// header's payload area for frames as short as trimmed ones), with a valid
// IPv4 header checksum.
func makeHomaData(size int, dst byte, prio uint8, rank, seq uint32) []byte {
	f := makeFrame(size, dst, prio, 0)
	f[23] = wire.IPProto
	f[HomaTypeOffset] = HomaTypeData
	binary.BigEndian.PutUint32(f[HomaRankOffset:], rank)
	binary.BigEndian.PutUint32(f[HomaOffset+28:], seq)
	binary.BigEndian.PutUint16(f[ipCsumOffset:], ^onesSum(f[14:34]))
	return f
}

// makeUETData builds a UET RUD data packet of size bytes to 10.0.0.dst
// over UDP (port wire.UETPort, a nonzero UDP checksum) with priority prio
// and seq in its payload, with a valid IPv4 header checksum.
func makeUETData(size int, dst byte, prio uint8, seq uint32) []byte {
	f := makeFrame(size, dst, prio, 0)
	binary.BigEndian.PutUint16(f[UDPOffset:], 50000)
	binary.BigEndian.PutUint16(f[UDPOffset+2:], wire.UETPort)
	binary.BigEndian.PutUint16(f[udpLenOffset:], uint16(size-UDPOffset))
	binary.BigEndian.PutUint16(f[udpCsumOffset:], 0x1234)
	f[UETOffset] = byte(wire.UETRUDReq) << 3
	binary.BigEndian.PutUint32(f[UETTrimmedFrameLen+4:], seq)
	binary.BigEndian.PutUint16(f[ipCsumOffset:], ^onesSum(f[14:34]))
	return f
}

// onesSum is the ones'-complement sum of the 16-bit words of b (even
// length): 0xffff over a header with a valid checksum.
func onesSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

func (tp *testPipeline) Egress(frame []byte, md *EgressMeta) bool {
	tp.egress.Add(1)
	if tp.dropEgr {
		return false
	}
	tp.mu.Lock()
	tp.lastMeta = *md
	tp.mu.Unlock()
	return true
}

// makeFrame builds an Ethernet/IPv4/UDP frame of size bytes to 10.0.0.dst
// with priority prio in the TOS byte and seq in the payload.
func makeFrame(size int, dst byte, prio uint8, seq uint32) []byte {
	f := make([]byte, size)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, dst})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 0xfe})
	binary.BigEndian.PutUint16(f[12:14], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	ip[1] = prio << 5
	binary.BigEndian.PutUint16(ip[2:4], uint16(size-14))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:16], []byte{10, 0, 0, 1})
	copy(ip[16:20], []byte{10, 0, 0, dst})
	binary.BigEndian.PutUint32(f[42:46], seq)
	return f
}

func frameSeq(f []byte) uint32 { return binary.BigEndian.Uint32(f[42:46]) }

// memPort is an in-memory Port: frames written to in are received, frames
// sent appear on out (copied). Close unblocks both sides.
type memPort struct {
	in   chan []byte
	out  chan []byte
	done chan struct{}
	once sync.Once
}

func newMemPort() *memPort {
	return &memPort{in: make(chan []byte, 4096), out: make(chan []byte, 4096), done: make(chan struct{})}
}

func (m *memPort) Recv(bufs [][]byte, sizes []int) (int, error) {
	var f []byte
	select {
	case f = <-m.in:
	case <-m.done:
		return 0, fmt.Errorf("mem port: %w", net.ErrClosed)
	}
	n := 0
	for {
		sizes[n] = len(f)
		copy(bufs[n], f)
		n++
		if n == len(bufs) {
			return n, nil
		}
		select {
		case f = <-m.in:
		default:
			return n, nil
		}
	}
}

func (m *memPort) Send(frames [][]byte) (int, error) {
	for i, f := range frames {
		select {
		case m.out <- append([]byte(nil), f...):
		case <-m.done:
			return i, fmt.Errorf("mem port: %w", net.ErrClosed)
		}
	}
	return len(frames), nil
}

func (m *memPort) Close() error {
	m.once.Do(func() { close(m.done) })
	return nil
}

// genPort generates copies of one frame, keeping at most window frames in
// flight (generated but not yet counted by a sinkPort), so a benchmark
// measures forwarding rather than tail drops. It never allocates.
type genPort struct {
	frame  []byte
	total  int64
	window int64
	made   atomic.Int64
	sink   *sinkPort
	start  chan struct{} // closed to begin generating
	done   chan struct{}
	once   sync.Once
}

func (g *genPort) Recv(bufs [][]byte, sizes []int) (int, error) {
	select {
	case <-g.start:
	case <-g.done:
		return 0, fmt.Errorf("gen port: %w", net.ErrClosed)
	}
	for {
		made := g.made.Load()
		room := min(g.window-(made-g.sink.got.Load()), g.total-made, int64(len(bufs)))
		if room > 0 {
			for i := range room {
				sizes[i] = copy(bufs[i], g.frame)
			}
			g.made.Add(room)
			return int(room), nil
		}
		select {
		case <-g.sink.progress:
		case <-g.done:
			return 0, fmt.Errorf("gen port: %w", net.ErrClosed)
		}
	}
}

func (g *genPort) Send(frames [][]byte) (int, error) { return len(frames), nil }

func (g *genPort) Close() error {
	g.once.Do(func() { close(g.done) })
	return nil
}

// sinkPort counts frames sent to it and signals when want were seen.
type sinkPort struct {
	got      atomic.Int64
	want     int64
	progress chan struct{}
	all      chan struct{}
	done     chan struct{}
	once     sync.Once
}

func newSinkPort(want int64) *sinkPort {
	return &sinkPort{want: want, progress: make(chan struct{}, 1), all: make(chan struct{}), done: make(chan struct{})}
}

func (s *sinkPort) Recv([][]byte, []int) (int, error) {
	<-s.done
	return 0, fmt.Errorf("sink port: %w", net.ErrClosed)
}

func (s *sinkPort) Send(frames [][]byte) (int, error) {
	n := int64(len(frames))
	if got := s.got.Add(n); got >= s.want && got-n < s.want {
		close(s.all)
	}
	select {
	case s.progress <- struct{}{}:
	default:
	}
	return len(frames), nil
}

func (s *sinkPort) Close() error {
	s.once.Do(func() { close(s.done) })
	return nil
}
