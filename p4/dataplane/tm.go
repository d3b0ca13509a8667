package dataplane

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// queueStats are the counters of one (port, queue), guarded by tm.mu.
type queueStats struct {
	enqPkts, enqBytes   uint64
	sentPkts, sentBytes uint64
	dropPkts, dropBytes uint64
	depthBytes          int
	peakPkts, peakBytes int
	delay               histogram // µs from arrival to departure start
}

// sharedBuffer is one buffer for the whole switch with dynamic thresholds
// (Choudhury and Hahne): a queue is admitted while its length stays below
// alpha times the unused buffer, so busy ports borrow from idle ones but
// never starve them entirely.
type sharedBuffer struct {
	size  int64
	alpha float64
	used  atomic.Int64
}

// admit reserves n bytes for a queue already holding qBytes.
func (b *sharedBuffer) admit(qBytes, n int) bool {
	for {
		used := b.used.Load()
		free := b.size - used
		if int64(n) > free || float64(qBytes+n) > b.alpha*float64(free) {
			return false
		}
		if b.used.CompareAndSwap(used, used+int64(n)) {
			return true
		}
	}
}

func (b *sharedBuffer) release(n int) { b.used.Add(-int64(n)) }

// tm is the traffic manager of one egress port: eight strict-priority FIFOs,
// their limits and counters, and the port's shaper. Ingress goroutines call
// enqueue (or enqueueRank, enqueueTrim for the other switch modes), the
// port's scheduler calls dequeue; one short critical section each, and no
// lock is shared between ports.
type tm struct {
	// The fields every packet reads or writes come first, so an enqueue
	// and a dequeue touch few cache lines: a fabric of thousands of ports
	// is far bigger than the caches.

	// single: one goroutine calls the tm (a PortModel made with
	// PortModelConfig.SingleCaller), so mu is not taken.
	single bool
	busy   uint8 // bit q set when queue q is not empty
	port   uint16
	// Port-wide occupancy and limits (0: no limit).
	pkts, bytes               int
	portLimPkts, portLimBytes int
	shared                    *sharedBuffer
	shaper                    shaper
	lag                       int64
	q                         [NumQueues]fifo
	interval                  [NumQueues]int64 // ns between packets from set_queue_rate; 0 unlimited
	nextAt                    [NumQueues]int64 // earliest next departure of that queue
	limBytes                  [NumQueues]int   // 0: no byte limit
	// PFC: queue q may not send before pausedUntil[q] (the peer's PAUSE);
	// pausedSince[q] is when its current or last pause began, pausedNs[q]
	// the time of the pauses before it.
	pausedUntil, pausedSince, pausedNs [NumQueues]int64
	st                                 [NumQueues]queueStats
	// rq is the rank_order queue; its packets count as queue 0's. It is
	// served after the FIFOs, which hold packets on a rank_order port
	// only while the controller changes its mode.
	rq rankQueue
	// rankDrops counts frames rank_order dropped (arriving or queued);
	// trimmed counts frames trim_above cut to their header.
	rankDrops, trimmed uint64

	mu sync.Mutex
}

func newTM(cfg *Config, port uint16, shared *sharedBuffer) *tm {
	t := new(tm)
	t.init(cfg, port, shared)
	return t
}

// init makes t, which is zero, the traffic manager of port.
func (t *tm) init(cfg *Config, port uint16, shared *sharedBuffer) {
	t.port, t.portLimPkts, t.portLimBytes, t.shared = port, cfg.PortBufferPkts, cfg.PortBufferBytes, shared
	rate := cfg.portRate(port)
	t.lag = lagFor(cfg.ShaperLag, rate, min(cfg.MaxFrame, fullFrame))
	t.shaper = shaper{rate: rate, lag: t.lag, early: shaperEarly}
	for q := range NumQueues {
		t.q[q] = newFifo(cfg.queueLimitPkts(port, q))
		t.limBytes[q] = cfg.QueueDepthBytes
		if pps := cfg.queueRatePPS(port, q); pps > 0 {
			t.interval[q] = int64(math.Round(1e9 / float64(pps)))
		}
	}
	// As many packets as the FIFOs hold, so the buffer pools sized from
	// capacityPkts cover a rank_order port too.
	t.rq = newRankQueue(t.capacityPkts())
}

// capacityPkts is the most packets this port can hold at once.
func (t *tm) capacityPkts() int {
	n := 0
	for q := range NumQueues {
		n += t.q[q].capacity
	}
	if t.portLimPkts > 0 {
		n = min(n, t.portLimPkts)
	}
	return n
}

// enqueueVerdict queues p as ingress's verdict v says: in the mode and
// queue it names, at time now. False means p was dropped (and counted)
// and the caller keeps it.
func (t *tm) enqueueVerdict(p *packet, v *Verdict, now int64) bool {
	switch v.Mode {
	case ModeRankOrder:
		return t.enqueueRank(p, v.Rank, v.ModeArg, now)
	case ModeTrimAbove:
		return t.enqueueTrim(p, v.Queue, v.ModeArg, v.Trim, now)
	}
	return t.enqueue(p, v.Queue, now)
}

// lock takes t.mu unless one goroutine has t (single).
func (t *tm) lock() {
	if !t.single {
		t.mu.Lock()
	}
}

// unlock releases what lock took.
func (t *tm) unlock() {
	if !t.single {
		t.mu.Unlock()
	}
}

// enqueue puts p on queue q at time now, or counts a tail drop and returns
// false, in which case the caller keeps p.
func (t *tm) enqueue(p *packet, q uint8, now int64) bool {
	t.lock()
	ok := t.admit(p, q, now)
	t.unlock()
	return ok
}

// enqueueTrim is enqueue on a trim_above port: a trimmable frame (kind
// not TrimNone) whose queue already holds threshold packets is trimmed to
// its headers and put in queue TrimQueue instead.
func (t *tm) enqueueTrim(p *packet, q uint8, threshold uint32, kind Trim, now int64) bool {
	t.lock()
	if kind != TrimNone && uint32(t.q[q].size) >= threshold {
		trim(p, kind)
		t.trimmed++
		q = TrimQueue
	}
	ok := t.admit(p, q, now)
	t.unlock()
	return ok
}

// admit is enqueue with t.mu held.
func (t *tm) admit(p *packet, q uint8, now int64) bool {
	n := p.n
	st := &t.st[q]
	f := &t.q[q]
	if f.full() ||
		(t.limBytes[q] > 0 && st.depthBytes+n > t.limBytes[q]) ||
		(t.portLimPkts > 0 && t.pkts >= t.portLimPkts) ||
		(t.portLimBytes > 0 && t.bytes+n > t.portLimBytes) ||
		(t.rq.len() > 0 && t.pkts >= t.rq.capacity) || // mode change: FIFOs and rank queue share the capacity
		(t.shared != nil && !t.shared.admit(st.depthBytes, n)) {
		st.dropPkts++
		st.dropBytes += uint64(n)
		return false
	}
	p.queue = q
	p.enqNs = now
	p.enqDepth = uint32(f.size)
	f.push(p)
	t.busy |= 1 << q
	t.pkts++
	t.bytes += n
	st.enqPkts++
	st.enqBytes += uint64(n)
	st.depthBytes += n
	st.peakPkts = max(st.peakPkts, f.size)
	st.peakBytes = max(st.peakBytes, st.depthBytes)
	return true
}

// enqueueRank puts p, of the given rank, in the port's rank-ordered queue
// at time now. When it does not fit in limBytes (or the port's packet
// capacity), the largest-rank queued packets are dropped, and returned to
// their pools, until it does; if p itself is the largest (ties included:
// it is the newest), p is dropped instead and enqueueRank returns false,
// in which case the caller keeps p. The port's own and the queues' limits
// do not apply: limBytes replaces them. The shared buffer, if any, still
// admits each packet.
func (t *tm) enqueueRank(p *packet, rank, limBytes uint32, now int64) bool {
	n := p.n
	lim := int(limBytes)
	t.lock()
	defer t.unlock()
	st := &t.st[0]
	if n > lim {
		t.rankDrop(st, n)
		return false
	}
	for t.bytes+n > lim || t.pkts >= t.rq.capacity {
		big := t.rq.largest()
		if big == nil || big.rank <= rank {
			t.rankDrop(st, n)
			return false
		}
		t.rq.dropLargest()
		t.pkts--
		t.bytes -= big.n
		st.depthBytes -= big.n
		if t.shared != nil {
			t.shared.release(big.n)
		}
		t.rankDrop(st, big.n)
		big.release()
	}
	if t.shared != nil && !t.shared.admit(st.depthBytes, n) {
		st.dropPkts++
		st.dropBytes += uint64(n)
		return false
	}
	p.rank = rank
	p.queue = 0
	p.enqNs = now
	p.enqDepth = uint32(t.rq.len())
	t.rq.push(p)
	t.pkts++
	t.bytes += n
	st.enqPkts++
	st.enqBytes += uint64(n)
	st.depthBytes += n
	st.peakPkts = max(st.peakPkts, t.depthPkts(0))
	st.peakBytes = max(st.peakBytes, st.depthBytes)
	return true
}

// rankDrop counts a frame of n bytes that rank_order dropped.
func (t *tm) rankDrop(st *queueStats, n int) {
	st.dropPkts++
	st.dropBytes += uint64(n)
	t.rankDrops++
}

// depthPkts is how many packets queue q holds (queue 0 includes the rank
// queue).
func (t *tm) depthPkts(q int) int {
	if q == 0 {
		return t.q[0].size + t.rq.len()
	}
	return t.q[q].size
}

// resetWindow starts a new window for the statistics that are not
// counters: peaks restart from the current depth, delays from nothing.
func (t *tm) resetWindow() {
	t.lock()
	defer t.unlock()
	for q := range t.st {
		st := &t.st[q]
		st.peakPkts, st.peakBytes = t.depthPkts(q), st.depthBytes
		st.delay = histogram{}
	}
}

// departure describes a dequeued packet for the egress pipeline.
type departure struct {
	pkt      *packet
	deqDepth uint32
	delayUs  uint32
	deqNs    int64 // when its serialization starts (the shaper's slot)
}

// dequeue moves up to len(out) packets that may leave at now into out, the
// highest eligible queue first, and books them on the shaper. When it
// returns 0, wake is when to look again, or 0 when every queue is empty;
// link says that wake is when the link finishes its frame, which no
// arrival can change (otherwise a rate-limited queue is waiting).
func (t *tm) dequeue(now int64, out []departure) (n int, wake int64, link bool) {
	t.lock()
	defer t.unlock()
	for n < len(out) {
		if t.busy == 0 && t.rq.len() == 0 {
			return n, 0, false
		}
		if !t.shaper.ready(now) {
			return n, t.shaper.readyAt(), true
		}
		q := -1
		wake = math.MaxInt64
		for b := t.busy; b != 0; {
			hi := 7 - bits.LeadingZeros8(b)
			b &^= 1 << hi
			if t.pausedUntil[hi] > now { // PFC: the peer paused this priority
				wake = min(wake, t.pausedUntil[hi])
				continue
			}
			if t.nextAt[hi] <= now {
				q = hi
				break
			}
			wake = min(wake, t.nextAt[hi])
		}
		var p *packet
		var depth int
		switch {
		case q >= 0:
			f := &t.q[q]
			p = f.pop()
			if f.size == 0 {
				t.busy &^= 1 << q
			}
			depth = f.size
		case t.rq.len() > 0:
			q = 0
			p = t.rq.popMin()
			depth = t.rq.len()
		default:
			return n, wake, false
		}
		start := t.shaper.book(now, p.enqNs, p.n)
		if iv := t.interval[q]; iv > 0 {
			t.nextAt[q] = max(t.nextAt[q], now-t.lag, p.enqNs) + iv
		}
		st := &t.st[q]
		t.pkts--
		t.bytes -= p.n
		st.depthBytes -= p.n
		if t.shared != nil {
			t.shared.release(p.n)
		}
		st.sentPkts++
		st.sentBytes += uint64(p.n)
		us := uint32(min((start-p.enqNs)/1000, math.MaxUint32))
		st.delay.record(us)
		out[n] = departure{pkt: p, deqDepth: uint32(depth), delayUs: us, deqNs: start}
		n++
	}
	return n, 0, false
}

// drain empties every queue, for shutdown, handing each packet to fn.
func (t *tm) drain(fn func(*packet)) {
	t.lock()
	defer t.unlock()
	for q := range NumQueues {
		for t.q[q].size > 0 {
			p := t.q[q].pop()
			t.st[q].depthBytes -= p.n
			if t.shared != nil {
				t.shared.release(p.n)
			}
			fn(p)
		}
	}
	for t.rq.len() > 0 {
		p := t.rq.popMin()
		t.st[0].depthBytes -= p.n
		if t.shared != nil {
			t.shared.release(p.n)
		}
		fn(p)
	}
	t.busy, t.pkts, t.bytes = 0, 0, 0
}
