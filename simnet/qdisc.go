package simnet

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/wire"
)

// QdiscConfig sets a host's queue in front of its NIC (Node.UseQdisc),
// after HomaModule's homa_qdisc; zero fields take homa_qdisc's defaults.
//
// Rules taken from homa_qdisc.c: the qdisc keeps an estimate of when the
// NIC will have sent all it was handed (link_idle_time) at MaxLinkUsage
// of the link rate, and hands it a packet at once only while that lies at
// most MaxBacklog ahead and nothing is deferred; Homa packets of messages
// shorter than DeferMinBytes, Homa control packets and short TCP packets
// (by the frame's length, Ethernet header included, as qdisc_pkt_len)
// always pass (a short TCP packet waits only behind its own flow's
// deferred packets, pure ACKs never); deferred Homa packets leave in SRPT
// order (fewest bytes left of their message, then the oldest), except
// that one byte in twenty goes to the oldest message (pacer_fifo_fraction
// 50 per mille); deferred TCP packets leave their flows in turn, each
// flow's in order; when both wait, the link is shared by HomaShare of the
// bytes (homa_credit).
//
// Rules left: the DQL limit on the NIC's own queue (max_nic_queue_usecs):
// the simulated NIC sends at exactly the link rate, so the estimate is
// exact and the second bound adds nothing; the pacer thread's five packets
// a call and its scheduling: in virtual time the pacer runs the instant the
// backlog allows; TCP hijacking (Homa over TCP headers). Deferred TCP
// packets queue per flow rather than per NIC transmit queue (each of the
// kernel's qdiscs holds the flows hashed to its queue). Packets pass one
// by one: the twin's transports make no GSO or TSO frames, which
// homa_qdisc admits whole.
type QdiscConfig struct {
	// MaxBacklog caps the NIC's estimated backlog (default 5 µs,
	// max_nic_est_backlog_usecs).
	MaxBacklog time.Duration
	// DeferMinBytes: shorter messages and packets are never deferred
	// (default 1000, defer_min_bytes).
	DeferMinBytes int
	// HomaShare is Homa's percentage of the link when both wait (default
	// 50, homa_share).
	HomaShare int
	// MaxLinkUsage is the percentage of the link rate the estimate
	// assumes (default 99, max_link_usage).
	MaxLinkUsage int
}

func (c QdiscConfig) withDefaults() (QdiscConfig, error) {
	if c.MaxBacklog == 0 {
		c.MaxBacklog = 5 * time.Microsecond
	}
	if c.DeferMinBytes == 0 {
		c.DeferMinBytes = 1000
	}
	if c.HomaShare == 0 {
		c.HomaShare = 50
	}
	if c.MaxLinkUsage == 0 {
		c.MaxLinkUsage = 99
	}
	if c.MaxBacklog < 0 || c.DeferMinBytes < 0 || c.HomaShare < 0 || c.HomaShare > 100 || c.MaxLinkUsage < 5 || c.MaxLinkUsage > 100 {
		return c, fmt.Errorf("simnet: qdisc %+v: expected a backlog and minimum size >= 0, a share of 0..100 %% and a link usage of 5..100 %%", c)
	}
	return c, nil
}

// fifoWeight is what a byte sent to the oldest Homa message repays of the
// SRPT budget: (1000 - 50) / 50, for pacer_fifo_fraction 50 per mille.
const fifoWeight = 19

// QdiscStats are a host qdisc's counters.
type QdiscStats struct {
	// Passed are packets handed to the NIC at once; HomaDeferred and
	// TCPDeferred those held first.
	Passed, HomaDeferred, TCPDeferred uint64
	// HomaBytes and TCPBytes are the deferred bytes the pacer sent.
	HomaBytes, TCPBytes uint64
}

// qdisc is one host's queue in front of its NIC (QdiscConfig's rules).
type qdisc struct {
	h   *Node
	cfg QdiscConfig
	// bytePs is a byte's time on the link at MaxLinkUsage, in 1/1024 ps,
	// rounded up: the estimate errs on the slow side, as homa_qdisc's
	// cycles_per_mibyte does. (Whole ps or ns per byte would drop the 1%
	// margin at 100 Gbit/s, and rounding each packet down to the ns would
	// let every small packet shorten the estimate, so the NIC's real queue
	// outgrew the cap through a busy period.)
	bytePs int64
	// linkIdle is when the NIC will have sent all it has (ps, estimate).
	linkIdle int64
	// backlog is MaxBacklog in ps.
	backlog int64
	// homa are the messages with deferred packets in SRPT order; msgs
	// finds them; free keeps emptied ones for reuse.
	homa qmsgHeap
	msgs map[msgKey]*qmsg
	free []*qmsg
	// seen are the long messages the qdisc has carried packets of and
	// when it first saw one (qdisc.age).
	seen map[msgKey]int64
	// srptBytes is the SRPT budget left before the oldest message's turn.
	srptBytes int64
	// tcp are the flows with deferred packets, served in turn from next.
	tcp     []*qflow
	flows   map[flowKey]*qflow
	next    int
	credit  int64 // homa_credit
	seq     uint64
	armed   bool
	armedAt int64
	wakeFn  func()
	stats   QdiscStats
	// out hands a frame to the NIC (its queue's enqueue).
	out func([]byte)
}

// msgKey names a Homa message at its sender: the peer and the sender's id.
type msgKey struct {
	peer netip.Addr
	id   uint64
}

// qmsg is a Homa message with deferred packets.
type qmsg struct {
	key    msgKey
	left   uint32 // bytes left after the first deferred packet's offset
	born   int64  // when the qdisc first saw one of its packets
	seq    uint64 // tie-breaker
	frames fifo
	index  int
}

type qmsgHeap []*qmsg

func (q qmsgHeap) Len() int { return len(q) }
func (q qmsgHeap) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.left != b.left {
		return a.left < b.left
	}
	if a.born != b.born {
		return a.born < b.born
	}
	return a.seq < b.seq
}
func (q qmsgHeap) Swap(i, j int) { q[i], q[j] = q[j], q[i]; q[i].index = i; q[j].index = j }
func (q *qmsgHeap) Push(x any)   { m := x.(*qmsg); m.index = len(*q); *q = append(*q, m) }
func (q *qmsgHeap) Pop() any {
	old := *q
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return m
}

// flowKey names a TCP flow leaving the host.
type flowKey struct {
	peer       netip.Addr
	sport, dpt uint16
}

// qflow is a TCP flow's deferred packets; active while it has some.
type qflow struct {
	frames fifo
	active bool
}

// fifo is a queue of frames, allocation-free once grown.
type fifo struct {
	f    [][]byte
	head int
}

func (q *fifo) len() int { return len(q.f) - q.head }
func (q *fifo) push(f []byte) {
	if q.head > 0 && len(q.f) == cap(q.f) {
		n := copy(q.f, q.f[q.head:])
		clear(q.f[n:])
		q.f, q.head = q.f[:n], 0
	}
	q.f = append(q.f, f)
}
func (q *fifo) pop() []byte {
	f := q.f[q.head]
	q.f[q.head] = nil
	q.head++
	if q.head == len(q.f) {
		q.f, q.head = q.f[:0], 0
	}
	return f
}

// UseQdisc puts a queue after homa_qdisc's design (QdiscConfig) in front
// of the host's NIC: every frame its transports send passes it. Not with
// the emulated hosts' shaper or NIC priorities.
func (h *Node) UseQdisc(cfg QdiscConfig) error {
	if h.shaper != nil || h.nicPrio {
		return fmt.Errorf("simnet: host %s: a qdisc needs the NIC model with one queue", h.Name)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	q := &qdisc{h: h, cfg: cfg, msgs: map[msgKey]*qmsg{}, seen: map[msgKey]int64{}, flows: map[flowKey]*qflow{}}
	den := int64(h.nic.rate) * int64(cfg.MaxLinkUsage)
	q.bytePs = (8e12*1024*100 + den - 1) / den
	q.backlog = cfg.MaxBacklog.Nanoseconds() * 1000
	q.wakeFn = q.wake
	q.out = func(f []byte) { h.nic.enqueue(f, dataplane.Verdict{}, 0) }
	h.qd = q
	return nil
}

// QdiscStats returns the host qdisc's counters (zero without one).
func (h *Node) QdiscStats() QdiscStats {
	if h.qd == nil {
		return QdiscStats{}
	}
	return h.qd.stats
}

// send takes frame f from the host's transports.
func (q *qdisc) send(f []byte) {
	now := q.h.n.clock.now
	ip := f[ethLen:]
	switch ip[9] {
	case ipProtoTCP:
		q.sendTCP(f, now)
		return
	case wire.IPProto:
	default:
		q.pass(f, now) // RoCE's UDP and anything else: never deferred
		return
	}
	d, payload, err := wire.ParseData(f[frameHdr:])
	if err != nil || int(d.MessageLength) < q.cfg.DeferMinBytes {
		q.pass(f, now) // control packets and short messages
		return
	}
	k := msgKey{peer: netip.AddrFrom4([4]byte(ip[16:20])), id: d.SenderID}
	born := q.age(k, &d, len(payload), now)
	if q.idle() && q.room(now) {
		q.pass(f, now)
		return
	}
	q.stats.HomaDeferred++
	m := q.msgs[k]
	left := d.MessageLength - min(d.MessageLength, d.Offset)
	if m == nil {
		if n := len(q.free); n > 0 {
			m, q.free = q.free[n-1], q.free[:n-1]
		} else {
			m = &qmsg{}
		}
		q.seq++
		m.key, m.left, m.born, m.seq = k, left, born, q.seq
		m.frames.push(f)
		q.msgs[k] = m
		heap.Push(&q.homa, m)
	} else {
		m.frames.push(f)
	}
	q.pacer()
}

// age returns when the message of packet d (key k, payload bytes long)
// began: when the qdisc first saw one of its packets, which is when the
// engine began sending it (homa_qdisc's msgout.init_time). The entry goes
// with the packet that carries the message's last byte; a retransmission
// makes none, so a message that is over leaves nothing behind.
func (q *qdisc) age(k msgKey, d *wire.Data, payload int, now int64) int64 {
	born, ok := q.seen[k]
	switch {
	case !ok && d.Retransmit != 0:
		return now
	case !ok:
		born = now
		q.seen[k] = now
	}
	if uint64(d.Offset)+uint64(payload) >= uint64(d.MessageLength) {
		delete(q.seen, k)
	}
	return born
}

// sendTCP takes a TCP frame: short ones pass unless their flow has
// deferred packets (pure ACKs always pass), long ones as the backlog
// allows.
func (q *qdisc) sendTCP(f []byte, now int64) {
	ip, t := f[ethLen:], f[frameHdr:]
	payload := int(binary.BigEndian.Uint16(ip[2:])) - ipLen - int(t[12]>>4)*4
	k := flowKey{peer: netip.AddrFrom4([4]byte(ip[16:20])), sport: binary.BigEndian.Uint16(t[0:]), dpt: binary.BigEndian.Uint16(t[2:])}
	fl := q.flows[k]
	// A packet's length here is the frame's from its Ethernet header on,
	// as qdisc_pkt_len is.
	if len(f) < q.cfg.DeferMinBytes {
		if payload == 0 || fl == nil || fl.frames.len() == 0 {
			q.pass(f, now)
			return
		}
	} else if q.idle() && q.room(now) {
		q.pass(f, now)
		return
	}
	q.stats.TCPDeferred++
	if fl == nil {
		fl = &qflow{}
		q.flows[k] = fl
	}
	fl.frames.push(f)
	if !fl.active {
		fl.active = true
		q.tcp = append(q.tcp, fl)
	}
	q.pacer()
}

// idle reports whether nothing is deferred.
func (q *qdisc) idle() bool { return len(q.homa) == 0 && len(q.tcp) == 0 }

// room reports whether the NIC's estimated backlog is within the cap.
func (q *qdisc) room(now int64) bool {
	return q.linkIdle <= now*1000+q.backlog
}

// pass hands f to the NIC and moves the estimate on.
func (q *qdisc) pass(f []byte, now int64) {
	q.stats.Passed++
	q.linkIdle = max(q.linkIdle, now*1000) + (int64(len(f)+q.h.n.cfg.WireOverhead)*q.bytePs+1023)/1024
	q.out(f)
}

// pacer sends deferred packets while the backlog allows, then arms its
// wake-up for when it will again.
func (q *qdisc) pacer() {
	now := q.h.n.clock.now
	for !q.idle() {
		if !q.room(now) {
			at := (q.linkIdle - q.backlog + 999) / 1000 // the first ns with room
			if !q.armed || at < q.armedAt {
				q.armed, q.armedAt = true, at
				q.h.n.clock.At(at, q.wakeFn)
			}
			return
		}
		switch {
		case len(q.tcp) == 0:
			q.credit = 1
		case len(q.homa) == 0:
			q.credit = 0
		}
		if q.credit > 0 {
			n := q.sendHoma(now)
			q.stats.HomaBytes += uint64(n)
			q.credit -= int64(n) * int64(100-q.cfg.HomaShare)
		} else {
			n := q.sendTCPDeferred(now)
			q.stats.TCPBytes += uint64(n)
			q.credit += int64(n) * int64(q.cfg.HomaShare)
		}
	}
}

func (q *qdisc) wake() {
	if q.armed && q.armedAt == q.h.n.clock.now {
		q.armed = false
	}
	q.pacer()
}

// sendHoma sends the next deferred Homa packet: the SRPT message's, or
// the oldest message's when the SRPT budget is spent. It returns the
// frame's length.
func (q *qdisc) sendHoma(now int64) int {
	m := q.homa[0]
	fifoTurn := q.srptBytes <= 0
	if fifoTurn {
		for _, o := range q.homa[1:] {
			if o.born < m.born || (o.born == m.born && o.seq < m.seq) {
				m = o
			}
		}
	}
	f := m.frames.pop()
	if fifoTurn {
		q.srptBytes += int64(len(f)) * fifoWeight
	} else {
		q.srptBytes -= int64(len(f))
	}
	if m.frames.len() == 0 {
		heap.Remove(&q.homa, m.index)
		delete(q.msgs, m.key)
		q.free = append(q.free, m)
	} else if d, _, err := wire.ParseData(m.frames.f[m.frames.head][frameHdr:]); err == nil {
		// The message's bytes left shrink as its packets leave.
		m.left = min(m.left, d.MessageLength-min(d.MessageLength, d.Offset))
		heap.Fix(&q.homa, m.index)
	}
	q.pass(f, now)
	return len(f)
}

// sendTCPDeferred sends the next flow's oldest deferred packet, the flows
// in turn, and returns its length.
func (q *qdisc) sendTCPDeferred(now int64) int {
	if q.next >= len(q.tcp) {
		q.next = 0
	}
	fl := q.tcp[q.next]
	f := fl.frames.pop()
	if fl.frames.len() == 0 {
		fl.active = false
		copy(q.tcp[q.next:], q.tcp[q.next+1:])
		q.tcp[len(q.tcp)-1] = nil
		q.tcp = q.tcp[:len(q.tcp)-1]
	} else {
		q.next++
	}
	q.pass(f, now)
	return len(f)
}
