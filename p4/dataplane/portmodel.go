package dataplane

import (
	"sync"

	"github.com/homatb/homatb/p4/switchstats"
)

// PortModel is one egress port's traffic manager and shaper, the switch's
// own (eight strict-priority queues, their limits, the switch modes, the
// rate), driven by its caller: frames go in with the verdict ingress would
// give them and come out when the caller's clock says they may, with no
// socket and no goroutine. It is how a model of a fabric queues as the
// switch does: hostagent/homa/homatest's links are PortModels on the
// test's fake clock. Times are nanoseconds on the caller's clock. Its
// methods may be called from several goroutines, unless it was made with
// PortModelConfig.SingleCaller.
type PortModel struct {
	// spare keeps a SingleCaller port's packets, those its frames left,
	// so a simulation's ports allocate none per frame; the caller's other
	// ports may share it (PortModelConfig.Packets).
	spare *PacketPool
	// t is held, not pointed to: a simulated fabric's ports are many, and
	// one allocation puts the port's hot fields on neighbouring lines.
	t tm
	// free is spare for a port several goroutines call (sync.Pool).
	free sync.Pool
}

// PortModelConfig describes a PortModel; zero fields mean the documented
// default.
type PortModelConfig struct {
	// RateBps is the port's rate in bit/s; 0 means unshaped (frames leave
	// as soon as they are queued).
	RateBps uint64
	// WireOverhead is what the link charges per frame beyond the frame's
	// bytes: 24 on an Ethernet wire (preamble, start delimiter, gap and
	// FCS), what the switch charges its ports; 0 charges the frame alone.
	WireOverhead int
	// QueueDepthPkts is each queue's packet capacity (default
	// DefaultQueueDepthPkts).
	QueueDepthPkts int
	// QueueDepthBytes bounds each queue's bytes (0: no bound).
	QueueDepthBytes int
	// PortBufferBytes and PortBufferPkts bound the bytes and the packets
	// of all eight queues together (0: no bound).
	PortBufferBytes, PortBufferPkts int
	// Shared, when set, is the switch's buffer this port's queues share
	// with its other ports' (NewSharedBuffer): give every port of one
	// switch the same one.
	Shared *SharedBuffer
	// SingleCaller promises that one goroutine calls the port (a
	// discrete-event simulation's): it then takes no lock, which is a
	// fifth of a simulated switch port's time.
	SingleCaller bool
	// Packets, with SingleCaller, is where the port keeps the packets
	// its frames wait in, shared by every port of the caller's (nil: the
	// port's own). A packet one port let go is the next one any port
	// takes, while it is still in the cache.
	Packets *PacketPool
}

// PacketPool keeps the packets of the SingleCaller ports that share it.
type PacketPool struct{ free []*packet }

// PortDeparture is a frame the port sends: its bytes, the queue it left
// and when its serialization starts and ends on the link.
type PortDeparture struct {
	Frame      []byte
	Queue      uint8
	Start, End int64
	// InPort and EnqueueNs are the frame's Enqueue's inPort and now.
	InPort    uint16
	EnqueueNs int64
	// EnqDepth is how many packets its queue held when it came (tor.p4's
	// enq_qdepth), what the egress control's ECN marking reads.
	EnqDepth uint32
}

// PortModelStats are a PortModel's counters and depth.
type PortModelStats struct {
	// Drops counts frames dropped: tail drops, and frames a rank-ordered
	// port pushed out or refused.
	Drops uint64
	// RankDrops counts the frames of Drops that a rank-ordered port
	// pushed out or refused (the switch statistics' rank_drops).
	RankDrops uint64
	// Trimmed counts frames a trim_above verdict cut to their header.
	Trimmed uint64
	// QueuedPkts and QueuedBytes are what the queues hold now.
	QueuedPkts, QueuedBytes int
}

// SharedBuffer is one switch's buffer, shared by the queues of all its
// ports with dynamic thresholds, as the embedded switch's
// Config.SharedBufferBytes makes it.
type SharedBuffer struct{ b sharedBuffer }

// NewSharedBuffer makes a buffer of size bytes whose queues may each grow
// while their bytes stay below alpha times the free buffer (0: the
// switch's DefaultSharedAlpha).
func NewSharedBuffer(size int, alpha float64) *SharedBuffer {
	if alpha == 0 {
		alpha = DefaultSharedAlpha
	}
	return &SharedBuffer{b: sharedBuffer{size: int64(size), alpha: alpha}}
}

// NewPortModel makes a port as cfg describes.
func NewPortModel(cfg PortModelConfig) *PortModel {
	c := Config{LinkRateBps: cfg.RateBps, Unshaped: cfg.RateBps == 0, QueueDepthPkts: cfg.QueueDepthPkts,
		QueueDepthBytes: cfg.QueueDepthBytes, PortBufferBytes: cfg.PortBufferBytes, PortBufferPkts: cfg.PortBufferPkts,
		MaxFrame: DefaultMaxFrame, ShaperLag: DefaultShaperLag}
	if c.QueueDepthPkts == 0 {
		c.QueueDepthPkts = DefaultQueueDepthPkts
	}
	var shared *sharedBuffer
	if cfg.Shared != nil {
		shared = &cfg.Shared.b
	}
	m := new(PortModel)
	t := &m.t
	t.init(&c, 1, shared)
	// The caller's clock wakes it exactly when a frame may leave: no
	// frame is handed over early (the switch's slack for its thread's
	// wake-up), so a later, higher-priority arrival still goes first.
	t.shaper.early = 0
	t.shaper.extra = cfg.WireOverhead - wireOverhead
	t.single = cfg.SingleCaller
	m.spare = cfg.Packets
	if m.spare == nil {
		m.spare = new(PacketPool)
	}
	return m
}

// Enqueue offers frame, which came in on inPort, at now, queued as the
// verdict v says (v.Queue, v.Mode and its arguments; EgressPort and Drop
// are not read). The port takes frame (a trim_above verdict may rewrite
// it); the caller gets it back from Dequeue. It returns false when the
// port dropped it.
func (m *PortModel) Enqueue(frame []byte, v Verdict, now int64, inPort uint16) bool {
	p := m.getPacket()
	*p = packet{buf: frame, n: len(frame), inPort: inPort}
	if v.Queue >= NumQueues {
		v.Queue = NumQueues - 1
	}
	return m.t.enqueueVerdict(p, &v, now)
}

// Dequeue takes the next frame that may start at now, highest queue
// first, and books it on the link. When none may, ok is false and wake
// is when to look again (0: the queues are empty; an Enqueue may change
// either).
func (m *PortModel) Dequeue(now int64) (d PortDeparture, ok bool, wake int64) {
	var out [1]departure
	n, wake, _ := m.t.dequeue(now, out[:])
	if n == 0 {
		return PortDeparture{}, false, wake
	}
	m.t.lock()
	end := m.t.shaper.freeAt
	m.t.unlock()
	p := out[0].pkt
	d = PortDeparture{Frame: p.frame(), Queue: p.queue, Start: out[0].deqNs, End: max(end, out[0].deqNs),
		InPort: p.inPort, EnqueueNs: p.enqNs, EnqDepth: p.enqDepth}
	*p = packet{}
	m.putPacket(p)
	return d, true, 0
}

// getPacket returns a cleared packet, reused when one is free.
func (m *PortModel) getPacket() *packet {
	if m.t.single {
		if k := len(m.spare.free); k > 0 {
			p := m.spare.free[k-1]
			m.spare.free = m.spare.free[:k-1]
			return p
		}
		return new(packet)
	}
	if p, _ := m.free.Get().(*packet); p != nil {
		return p
	}
	return new(packet)
}

// putPacket takes back a cleared packet.
func (m *PortModel) putPacket(p *packet) {
	if m.t.single {
		m.spare.free = append(m.spare.free, p)
		return
	}
	m.free.Put(p)
}

// Trimmed counts the frames a trim_above verdict cut to their header so
// far: a caller tells a trimmed frame (queued in TrimQueue) from the
// count's change across its Enqueue.
func (m *PortModel) Trimmed() uint64 {
	m.t.lock()
	defer m.t.unlock()
	return m.t.trimmed
}

// Stats returns the port's counters and depth.
func (m *PortModel) Stats() PortModelStats {
	m.t.lock()
	defer m.t.unlock()
	s := PortModelStats{RankDrops: m.t.rankDrops, Trimmed: m.t.trimmed, QueuedPkts: m.t.pkts, QueuedBytes: m.t.bytes}
	for q := range m.t.st {
		s.Drops += m.t.st[q].dropPkts
	}
	return s
}

// Queues returns the port's per-queue counters, depths, peaks and delays
// as the switch's statistics report them at now (the time a queue stood
// paused by PFC runs up to it).
func (m *PortModel) Queues(now int64) []switchstats.Queue { return m.t.snapshot(now) }

// Pause obeys a PFC PAUSE frame that arrived at now from the port's peer:
// the queues in vec stop for their quanta (0 resumes them). Dequeue's wake
// time covers the end of a pause.
func (m *PortModel) Pause(vec uint8, quanta *[NumQueues]uint16, now int64) {
	m.t.pause(vec, quanta, now)
}

// HalfPauseNs is half of a full PAUSE's time on the port's link: how long
// a switch waits before it repeats a PAUSE it still means.
func (m *PortModel) HalfPauseNs() int64 { return m.t.pauseNs(PFCQuantaMax) / 2 }
