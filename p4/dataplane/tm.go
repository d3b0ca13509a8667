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
// enqueue, the port's scheduler calls dequeue; one short critical section
// each, and no lock is shared between ports.
type tm struct {
	mu sync.Mutex

	port     uint16
	q        [NumQueues]fifo
	st       [NumQueues]queueStats
	limBytes [NumQueues]int // 0: no byte limit

	// Port-wide occupancy and limits (0: no limit).
	pkts, bytes               int
	portLimPkts, portLimBytes int
	shared                    *sharedBuffer
	shaper                    shaper
	interval                  [NumQueues]int64 // ns between packets from set_queue_rate; 0 unlimited
	nextAt                    [NumQueues]int64 // earliest next departure of that queue
	busy                      uint8            // bit q set when queue q is not empty
	lag                       int64
}

func newTM(cfg *Config, port uint16, shared *sharedBuffer) *tm {
	t := &tm{
		port:         port,
		portLimPkts:  cfg.PortBufferPkts,
		portLimBytes: cfg.PortBufferBytes,
		shared:       shared,
		lag:          int64(cfg.ShaperLag),
		shaper:       shaper{rate: cfg.portRate(port), lag: int64(cfg.ShaperLag), early: shaperEarly},
	}
	for q := range NumQueues {
		t.q[q] = newFifo(cfg.queueLimitPkts(port, q))
		t.limBytes[q] = cfg.QueueDepthBytes
		if pps := cfg.queueRatePPS(port, q); pps > 0 {
			t.interval[q] = int64(math.Round(1e9 / float64(pps)))
		}
	}
	return t
}

// capacityPkts is the most packets this port can hold at once.
func (t *tm) capacityPkts() int {
	n := 0
	for q := range NumQueues {
		n += len(t.q[q].ring)
	}
	if t.portLimPkts > 0 {
		n = min(n, t.portLimPkts)
	}
	return n
}

// enqueue puts p on queue q at time now, or counts a tail drop and returns
// false, in which case the caller keeps p.
func (t *tm) enqueue(p *packet, q uint8, now int64) bool {
	n := p.n
	t.mu.Lock()
	st := &t.st[q]
	f := &t.q[q]
	if f.full() ||
		(t.limBytes[q] > 0 && st.depthBytes+n > t.limBytes[q]) ||
		(t.portLimPkts > 0 && t.pkts >= t.portLimPkts) ||
		(t.portLimBytes > 0 && t.bytes+n > t.portLimBytes) ||
		(t.shared != nil && !t.shared.admit(st.depthBytes, n)) {
		st.dropPkts++
		st.dropBytes += uint64(n)
		t.mu.Unlock()
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
	t.mu.Unlock()
	return true
}

// resetWindow starts a new window for the statistics that are not
// counters: peaks restart from the current depth, delays from nothing.
func (t *tm) resetWindow() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for q := range t.st {
		st := &t.st[q]
		st.peakPkts, st.peakBytes = t.q[q].size, st.depthBytes
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
	t.mu.Lock()
	defer t.mu.Unlock()
	for n < len(out) {
		if t.busy == 0 {
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
			if t.nextAt[hi] <= now {
				q = hi
				break
			}
			wake = min(wake, t.nextAt[hi])
		}
		if q < 0 {
			return n, wake, false
		}
		f := &t.q[q]
		p := f.pop()
		if f.size == 0 {
			t.busy &^= 1 << q
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
		out[n] = departure{pkt: p, deqDepth: uint32(f.size), delayUs: us, deqNs: start}
		n++
	}
	return n, 0, false
}

// drain empties every queue, for shutdown, handing each packet to fn.
func (t *tm) drain(fn func(*packet)) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
	t.busy, t.pkts, t.bytes = 0, 0, 0
}
