package dataplane

import (
	"encoding/binary"

	"github.com/homatb/homatb/wire"
)

// Mode is how an egress port's traffic manager queues a frame. tor.p4's
// port_mode table picks it per egress port in ingress and hands it to the
// traffic manager in the Verdict, as it hands over the queue.
type Mode uint8

// The switch modes (docs/transports.md, "Switch modes").
const (
	// ModeStrictPriority is the default: eight strict-priority FIFOs.
	ModeStrictPriority Mode = iota
	// ModeRankOrder is pFabric's: one queue per port, served smallest
	// Verdict.Rank first (FIFO among equal ranks), holding at most
	// Verdict.ModeArg bytes; a frame that does not fit makes room by
	// dropping the largest-rank frames, itself if it is the largest.
	ModeRankOrder
	// ModeTrimAbove is NDP's and UET's: strict priority, but a trimmable
	// frame (Verdict.Trim) whose queue already holds Verdict.ModeArg
	// frames is trimmed to its headers and queued in queue 7.
	ModeTrimAbove
)

// Trim is what a ModeTrimAbove port may cut a frame to.
type Trim uint8

// The trimmable frames.
const (
	// TrimNone: the frame is queued or tail-dropped whole.
	TrimNone Trim = iota
	// TrimHomaData: an untrimmed Homa DATA frame longer than its header
	// (NDP) becomes its first TrimmedFrameLen bytes with the common
	// header's trimmed flag set.
	TrimHomaData
	// TrimUETData: a UET data packet (a RUD or ROD request, with or
	// without CC state) longer than UETTrimmedFrameLen becomes its first
	// UETTrimmedFrameLen bytes: the UDP length follows, the UDP checksum
	// becomes 0 (none, as IPv4 allows) and the DSCP becomes
	// UETTrimmedDSCP, which every switch of the fabric classifies into
	// queue 7 (UET 1.0 marks trimmed packets by a DSCP of their own).
	TrimUETData
)

// The Homa frame layout the switch modes read (the issue #20 contract):
// IPv4 (protocol wire.IPProto) without IP options, then the common header.
// The offsets are the frame's: Ethernet and IPv4 headers, then the common
// header's own offsets, all from package wire.
const (
	// HomaOffset is where the common header starts in a frame (Ethernet
	// 14 + IPv4 20 bytes).
	HomaOffset = 14 + 20
	// HomaFlagsOffset is the frame offset of the common header's flags
	// byte, whose bit HomaFlagTrimmed the switch sets on a trimmed frame.
	HomaFlagsOffset = HomaOffset + wire.FlagsOffset
	// HomaTypeOffset is the frame offset of the packet type.
	HomaTypeOffset = HomaOffset + wire.TypeOffset
	// HomaRankOffset is the frame offset of the big-endian 32-bit rank.
	HomaRankOffset = HomaOffset + wire.RankOffset
	// HomaCommonLen is the length of the common header.
	HomaCommonLen = wire.CommonLen
	// HomaTypeData is the type of DATA packets.
	HomaTypeData = byte(wire.TypeData)
	// HomaFlagTrimmed marks a DATA frame the switch trimmed.
	HomaFlagTrimmed = wire.CommonTrimmed
	// TrimmedFrameLen is a trimmed DATA frame's length: Ethernet, IPv4 and
	// the DATA header.
	TrimmedFrameLen = HomaOffset + wire.DataLen
	// RankMax is the rank of frames that carry none (not Homa).
	RankMax = 0xffffffff
	// TrimQueue is the queue trimmed headers are sent in.
	TrimQueue = 7
)

// The UET over UDP layout trimming reads and writes (frame offsets).
const (
	// UDPOffset is where the UDP header starts in a frame.
	UDPOffset = HomaOffset
	// UETOffset is where the PDS header starts (after UDP's 8 bytes).
	UETOffset = UDPOffset + wire.UDPHeaderLen
	// UETTrimmedFrameLen is a trimmed UET data frame's length: Ethernet,
	// IPv4, UDP and the wire.UETTrimmedLen bytes of UDP payload kept.
	UETTrimmedFrameLen = UETOffset + wire.UETTrimmedLen
	// UETTrimmedDSCP marks a trimmed UET packet: the DSCP of queue 7
	// under the fabric's classification (priority p is DSCP p<<3).
	UETTrimmedDSCP = TrimQueue << 3
)

// IPv4 and UDP header fields trimming rewrites (frame offsets).
const (
	ipTotalLenOffset = 16
	ipCsumOffset     = 24
	udpLenOffset     = UDPOffset + 4
	udpCsumOffset    = UDPOffset + 6
)

// trim cuts the frame in p as kind says (TrimHomaData or TrimUETData),
// payload dropped, the headers' lengths and marks rewritten.
func trim(p *packet, kind Trim) {
	f := p.buf[:p.n]
	if kind == TrimUETData {
		setIPv4Word(f, ipTOSOffset-1, uint16(f[ipTOSOffset-1])<<8|uint16(UETTrimmedDSCP<<2|f[ipTOSOffset]&3))
		setIPv4Word(f, ipTotalLenOffset, UETTrimmedFrameLen-14)
		binary.BigEndian.PutUint16(f[udpLenOffset:], UETTrimmedFrameLen-UDPOffset)
		binary.BigEndian.PutUint16(f[udpCsumOffset:], 0)
		p.n = UETTrimmedFrameLen
		return
	}
	setIPv4Word(f, ipTotalLenOffset, TrimmedFrameLen-14)
	f[HomaFlagsOffset] |= HomaFlagTrimmed
	p.n = TrimmedFrameLen
}

// setIPv4Word writes the IPv4 header's 16-bit word at frame offset off and
// updates the header checksum incrementally (RFC 1624, eqn. 3), which
// gives the recomputed value for a header whose checksum was valid and
// costs a few adds.
func setIPv4Word(f []byte, off int, v uint16) {
	old := binary.BigEndian.Uint16(f[off:])
	binary.BigEndian.PutUint16(f[off:], v)
	sum := uint32(^binary.BigEndian.Uint16(f[ipCsumOffset:])) + uint32(^old) + uint32(v)
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	binary.BigEndian.PutUint16(f[ipCsumOffset:], ^uint16(sum))
}

// rankQueue is a port's rank-ordered queue: packets sorted by rank, largest
// first, and among equal ranks newest first, so the next to leave (smallest,
// oldest) is the last and the first to drop (largest, newest) the first. Its
// slice is allocated once at the port's capacity; an insertion moves at most
// that many pointers, which pFabric's small buffers keep short.
type rankQueue struct {
	pkts []*packet
	// capacity is the most packets it holds; pkts grows to it as needed.
	capacity int
}

func newRankQueue(capacity int) rankQueue {
	return rankQueue{capacity: capacity}
}

func (r *rankQueue) len() int { return len(r.pkts) }

// push inserts p before every queued packet of rank <= p.rank. The caller
// checks there is room (len below cap).
func (r *rankQueue) push(p *packet) {
	lo, hi := 0, len(r.pkts)
	for lo < hi { // first index whose rank is <= p.rank
		mid := int(uint(lo+hi) >> 1)
		if r.pkts[mid].rank > p.rank {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	r.pkts = append(r.pkts, nil)
	copy(r.pkts[lo+1:], r.pkts[lo:])
	r.pkts[lo] = p
}

// largest returns the packet dropLargest would remove, nil when empty.
func (r *rankQueue) largest() *packet {
	if len(r.pkts) == 0 {
		return nil
	}
	return r.pkts[0]
}

// dropLargest removes and returns the largest-rank packet (the newest of
// equals).
func (r *rankQueue) dropLargest() *packet {
	p := r.pkts[0]
	copy(r.pkts, r.pkts[1:])
	r.pkts[len(r.pkts)-1] = nil
	r.pkts = r.pkts[:len(r.pkts)-1]
	return p
}

// popMin removes and returns the smallest-rank packet (the oldest of
// equals).
func (r *rankQueue) popMin() *packet {
	last := len(r.pkts) - 1
	p := r.pkts[last]
	r.pkts[last] = nil
	r.pkts = r.pkts[:last]
	return p
}
