// Package homatest is an in-memory network for testing homa: every host
// has an uplink and a downlink with a rate, eight strict-priority queues
// keyed on the TOS byte, a byte limit, propagation delay, and optional
// random loss and reordering. Inside a testing/synctest bubble it runs on
// fake time, so protocol tests with timeouts are fast and repeatable.
package homatest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/wire"
)

// LinkConfig describes every link of a Network.
type LinkConfig struct {
	// Rate in bit/s; 0 means packets take no time on the link.
	Rate uint64
	// FrameOverhead is what a packet costs on a link beyond its IP
	// packet: 0 means 42 (an Ethernet wire); 14 models a veth shaped by
	// htb.
	FrameOverhead int
	// Delay is the propagation delay of a host's downlink.
	Delay time.Duration
	// QueueBytes bounds each link's queue (all priorities); 0 means 4 MB.
	QueueBytes int
	// Loss is the probability that a packet is dropped on the downlink.
	Loss float64
	// Reorder is the probability that a packet is held back by
	// ReorderDelay (default 50 µs), so later packets overtake it.
	Reorder      float64
	ReorderDelay time.Duration
	// Seed makes loss and reordering repeatable.
	Seed uint64
	// Drop, when set, sees every packet (Addr is its destination) from
	// src and drops it by returning true: for tests that lose chosen
	// packets. It is called from the network's goroutines.
	Drop func(src netip.Addr, p homa.Packet) bool
	// BatchSize reported by each Conn (default 32).
	BatchSize int
	// TrimAbovePackets, when positive, makes every downlink (the switch's
	// port toward a host) an NDP port per the issue #20 contract: a DATA
	// packet whose queue already holds this many packets is cut to its
	// header, flagged trimmed and queued at priority 7.
	TrimAbovePackets int
	// RankOrder makes every downlink a pFabric port: one queue served
	// smallest rank first (FIFO among equal ranks), and when a packet does
	// not fit in QueueBytes the largest-rank packets are dropped (the
	// arriving one if it is the largest). Non-Homa packets rank last.
	RankOrder bool
}

// Stats counts what the network did to packets.
type Stats struct {
	Sent, Delivered, Lost, QueueDrops, Reordered uint64
	// MaxQueueBytes is the deepest any link queue became.
	MaxQueueBytes uint64
	// Trimmed counts DATA packets a downlink trimmed (TrimAbovePackets).
	Trimmed uint64
}

// Network joins Conns. Create it inside the synctest bubble that uses it.
type Network struct {
	cfg   LinkConfig
	mu    sync.Mutex // guards hosts and rng
	hosts map[netip.Addr]*Conn
	rng   *rand.Rand
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	sent, delivered, lost, queueDrops, reordered, maxQueue, trimmed atomic.Uint64
}

// NewNetwork returns an empty network.
func NewNetwork(cfg LinkConfig) *Network {
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = 4 << 20
	}
	if cfg.ReorderDelay == 0 {
		cfg.ReorderDelay = 50 * time.Microsecond
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 32
	}
	if cfg.FrameOverhead == 0 {
		cfg.FrameOverhead = 42
	}
	return &Network{cfg: cfg, hosts: map[netip.Addr]*Conn{}, rng: rand.New(rand.NewPCG(cfg.Seed, 146)), done: make(chan struct{})}
}

// Stats returns the network's counters.
func (n *Network) Stats() Stats {
	return Stats{Sent: n.sent.Load(), Delivered: n.delivered.Load(), Lost: n.lost.Load(),
		QueueDrops: n.queueDrops.Load(), Reordered: n.reordered.Load(), MaxQueueBytes: n.maxQueue.Load(),
		Trimmed: n.trimmed.Load()}
}

// Close stops every link; Conns then return net.ErrClosed.
func (n *Network) Close() {
	n.once.Do(func() { close(n.done) })
	n.wg.Wait()
}

// NewConn attaches a host with address addr.
func (n *Network) NewConn(addr netip.Addr) (*Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hosts[addr] != nil {
		return nil, fmt.Errorf("homatest: address %v in use", addr)
	}
	c := &Conn{n: n, addr: addr, rx: make(chan homa.Packet, 8192), closed: make(chan struct{})}
	c.up = n.newLink(func(p homa.Packet) { n.toDownlink(addr, p) }, false)
	c.down = n.newLink(func(p homa.Packet) { n.deliver(c, p) }, true)
	n.hosts[addr] = c
	return c, nil
}

// chance draws a random decision with probability p.
func (n *Network) chance(p float64) bool {
	if p == 0 {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rng.Float64() < p
}

// toDownlink moves a packet off a sender's uplink onto the receiver's downlink.
// On the way its Addr turns from the destination into the source.
func (n *Network) toDownlink(src netip.Addr, p homa.Packet) {
	n.mu.Lock()
	dst := n.hosts[p.Addr]
	n.mu.Unlock()
	drop := n.cfg.Drop != nil && n.cfg.Drop(src, p)
	p.Addr = src
	if dst == nil || drop || n.chance(n.cfg.Loss) {
		n.lost.Add(1)
		return
	}
	dst.down.enqueue(p)
}

// deliver hands a packet that left c's downlink to c after the delay.
func (n *Network) deliver(c *Conn, p homa.Packet) {
	d := n.cfg.Delay
	if n.chance(n.cfg.Reorder) {
		d += n.cfg.ReorderDelay
		n.reordered.Add(1)
	}
	push := func() {
		select {
		case c.rx <- p:
			n.delivered.Add(1)
		default:
			n.queueDrops.Add(1)
		}
	}
	if d == 0 {
		push()
		return
	}
	time.AfterFunc(d, push)
}

// Conn is one host's attachment; it implements homa.Conn.
type Conn struct {
	n      *Network
	addr   netip.Addr
	up     *link
	down   *link
	rx     chan homa.Packet
	closed chan struct{}
	once   sync.Once
}

var (
	_ homa.Conn      = (*Conn)(nil)
	_ homa.TryReader = (*Conn)(nil)
)

// LocalAddr implements homa.Conn.
func (c *Conn) LocalAddr() netip.Addr { return c.addr }

// BatchSize implements homa.Conn.
func (c *Conn) BatchSize() int { return c.n.cfg.BatchSize }

// Close implements homa.Conn; it detaches the host.
func (c *Conn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.n.mu.Lock()
		delete(c.n.hosts, c.addr)
		c.n.mu.Unlock()
	})
	return nil
}

// ReadBatch implements homa.Conn.
func (c *Conn) ReadBatch(pkts []homa.Packet) (int, error) {
	var p homa.Packet
	select {
	case p = <-c.rx:
	case <-c.closed:
		return 0, net.ErrClosed
	case <-c.n.done:
		return 0, net.ErrClosed
	}
	return c.drain(pkts, p), nil
}

// TryReadBatch implements homa.TryReader.
func (c *Conn) TryReadBatch(pkts []homa.Packet) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	case <-c.n.done:
		return 0, net.ErrClosed
	default:
	}
	select {
	case p := <-c.rx:
		return c.drain(pkts, p), nil
	default:
		return 0, nil
	}
}

// drain fills pkts with p and whatever else is queued.
func (c *Conn) drain(pkts []homa.Packet, p homa.Packet) int {
	i := 0
	for {
		pkts[i].Buf = pkts[i].Buf[:copy(pkts[i].Buf[:cap(pkts[i].Buf)], p.Buf)]
		pkts[i].Addr, pkts[i].TOS = p.Addr, p.TOS
		i++
		if i == len(pkts) {
			return i
		}
		select {
		case p = <-c.rx:
		default:
			return i
		}
	}
}

// WriteBatch implements homa.Conn. Packets are copied: the caller reuses
// its buffers.
func (c *Conn) WriteBatch(pkts []homa.Packet) error {
	select {
	case <-c.closed:
		return net.ErrClosed
	default:
	}
	for _, p := range pkts {
		q := homa.Packet{Buf: append([]byte(nil), p.Buf...), Addr: p.Addr, TOS: p.TOS}
		c.n.sent.Add(1)
		c.up.enqueue(q)
	}
	return nil
}

// link is a rate-limited wire with eight strict-priority queues.
type link struct {
	n      *Network
	mu     sync.Mutex
	queues [8][]homa.Packet
	bytes  int
	wake   chan struct{}
	out    func(homa.Packet)
	port   bool // a downlink: the switch modes apply
}

func (n *Network) newLink(out func(homa.Packet), port bool) *link {
	l := &link{n: n, wake: make(chan struct{}, 1), out: out, port: port}
	n.wg.Add(1)
	go l.serve()
	return l
}

// enqueue adds p to its priority queue, tail-dropping when the link is full.
func (l *link) enqueue(p homa.Packet) {
	l.mu.Lock()
	if l.port && l.n.cfg.RankOrder {
		l.enqueueRanked(p)
		return
	}
	if k := l.n.cfg.TrimAbovePackets; l.port && k > 0 && len(l.queues[homa.Priority(p.TOS)]) >= k {
		if b, ok := wire.Trim(p.Buf); ok {
			p.Buf, p.TOS = b, homa.TOS(7)
			l.n.trimmed.Add(1)
		}
	}
	if l.bytes+len(p.Buf) > l.n.cfg.QueueBytes {
		l.mu.Unlock()
		l.n.queueDrops.Add(1)
		return
	}
	prio := homa.Priority(p.TOS)
	l.queues[prio] = append(l.queues[prio], p)
	l.bytes += len(p.Buf)
	if b := uint64(l.bytes); b > l.n.maxQueue.Load() {
		l.n.maxQueue.Store(b)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// pop removes the head of the highest non-empty priority queue.
func (l *link) pop() (homa.Packet, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.port && l.n.cfg.RankOrder {
		return l.popRanked()
	}
	for prio := 7; prio >= 0; prio-- {
		if q := l.queues[prio]; len(q) > 0 {
			p := q[0]
			q[0] = homa.Packet{}
			l.queues[prio] = q[1:]
			l.bytes -= len(p.Buf)
			return p, true
		}
	}
	return homa.Packet{}, false
}

func (l *link) serve() {
	defer l.n.wg.Done()
	for {
		p, ok := l.pop()
		if !ok {
			select {
			case <-l.wake:
				continue
			case <-l.n.done:
				return
			}
		}
		if r := l.n.cfg.Rate; r > 0 {
			n := len(p.Buf) + 20 + l.n.cfg.FrameOverhead // Buf holds no IP header
			time.Sleep(time.Duration(uint64(n) * 8 * uint64(time.Second) / r))
		}
		select {
		case <-l.n.done:
			return
		default:
		}
		l.out(p)
	}
}

// rankOf is a packet's pFabric rank: the common header's rank field, or
// the largest for anything that is not a Homa-format packet.
func rankOf(b []byte) uint32 {
	c, err := wire.ParseCommon(b)
	if err != nil {
		return ^uint32(0)
	}
	return c.Rank
}

// enqueueRanked is enqueue on a rank-ordered port (LinkConfig.RankOrder),
// l.mu held: queue 0 holds the packets in arrival order and pop takes the
// smallest rank (the earliest among equals); when p does not fit, the
// largest-rank packets (the latest among equals) go first, p itself if
// its rank is the largest.
func (l *link) enqueueRanked(p homa.Packet) {
	rank := rankOf(p.Buf)
	for l.bytes+len(p.Buf) > l.n.cfg.QueueBytes {
		q := l.queues[0]
		worst := -1
		for i := range q {
			if worst < 0 || rankOf(q[i].Buf) >= rankOf(q[worst].Buf) {
				worst = i
			}
		}
		if worst < 0 || rankOf(q[worst].Buf) <= rank {
			l.mu.Unlock()
			l.n.queueDrops.Add(1)
			return
		}
		l.bytes -= len(q[worst].Buf)
		l.queues[0] = append(q[:worst], q[worst+1:]...)
		l.n.queueDrops.Add(1)
	}
	l.queues[0] = append(l.queues[0], p)
	l.bytes += len(p.Buf)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// popRanked removes the smallest-rank packet of a rank-ordered port, l.mu
// held.
func (l *link) popRanked() (homa.Packet, bool) {
	q := l.queues[0]
	best := -1
	for i := range q {
		if best < 0 || rankOf(q[i].Buf) < rankOf(q[best].Buf) {
			best = i
		}
	}
	if best < 0 {
		return homa.Packet{}, false
	}
	p := q[best]
	l.queues[0] = append(q[:best], q[best+1:]...)
	l.bytes -= len(p.Buf)
	return p, true
}
