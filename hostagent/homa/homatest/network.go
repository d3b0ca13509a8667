// Package homatest is an in-memory network for testing homa: every host
// has an uplink and a downlink, each the switch's own traffic manager and
// shaper (p4/dataplane.PortModel: a rate, eight strict-priority queues
// keyed on the TOS byte, a byte limit, and on downlinks the pFabric and
// NDP modes), then propagation delay and optional random loss and
// reordering. Inside a testing/synctest bubble it runs on fake time, so
// protocol tests with timeouts are fast and repeatable.
package homatest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/wire"
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
	// QueueBytes bounds each link's queue (all priorities), counting
	// frames as the switch does (Ethernet and IPv4 headers and the Homa
	// packet); 0 means 4 MB.
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
	// TrimUET makes the TrimAbovePackets downlinks trim UET instead: a
	// RUD request (the uet variant's data) that finds TrimAbovePackets
	// frames or more queued at the port is cut to its first
	// wire.UETTrimmedLen bytes (its PDS and SES headers and a little
	// payload) and queued at priority 7, as a UET switch trims.
	TrimUET bool
	// RankOrder makes every downlink a pFabric port: one queue served
	// smallest rank first (FIFO among equal ranks), and when a packet does
	// not fit in QueueBytes the largest-rank packets are dropped (the
	// arriving one if it is the largest). Non-Homa packets rank last.
	RankOrder bool
	// ECNAbovePackets, when positive, makes every downlink mark ECN CE on
	// an ECN-capable packet (ECT in its TOS byte) that arrives while its
	// queue holds at least this many packets, as tor.p4's ecn_config
	// threshold does.
	ECNAbovePackets int
	// Tap, when set, sees every frame a downlink delivers (Ethernet, IPv4
	// and the Homa packet, as the switch's port toward the host sends it,
	// trimmed or not), when its serialization ends: for captures. It is
	// called from the network's goroutines and must not keep f.
	Tap func(f []byte)
}

// Stats counts what the network did to packets.
type Stats struct {
	Sent, Delivered, Lost, QueueDrops, Reordered uint64
	// MaxQueueBytes is the deepest any link queue became.
	MaxQueueBytes uint64
	// Trimmed counts DATA packets a downlink trimmed (TrimAbovePackets).
	Trimmed uint64
	// Marked counts packets a downlink marked CE (ECNAbovePackets).
	Marked uint64
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

	sent, delivered, lost, queueDrops, reordered, maxQueue, trimmed, marked atomic.Uint64
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
		Trimmed: n.trimmed.Load(), Marked: n.marked.Load()}
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
	c.up = n.newLink(func(f []byte) { n.toDownlink(addr, f) }, false)
	c.down = n.newLink(func(f []byte) {
		if n.cfg.Tap != nil {
			n.cfg.Tap(f)
		}
		n.deliver(c, received(f))
	}, true)
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

// toDownlink moves a frame off a sender's uplink onto the receiver's
// downlink.
func (n *Network) toDownlink(src netip.Addr, f []byte) {
	p := homa.Packet{Buf: f[frameHdr:], Addr: netip.AddrFrom4([4]byte(f[ethLen+16 : ethLen+20])), TOS: f[ethLen+1]}
	n.mu.Lock()
	dst := n.hosts[p.Addr]
	n.mu.Unlock()
	drop := n.cfg.Drop != nil && n.cfg.Drop(src, p)
	if dst == nil || drop || n.chance(n.cfg.Loss) {
		n.lost.Add(1)
		return
	}
	dst.down.enqueue(f)
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
		c.n.sent.Add(1)
		c.up.enqueue(frame(c.addr, p))
	}
	return nil
}

// Frame layout of the packets on a link: an Ethernet header (zero MACs),
// an IPv4 header without options holding the TOS byte and both addresses,
// then the Homa packet, as the switch sees a host's frames.
const (
	ethLen   = 14
	ipLen    = 20
	frameHdr = ethLen + ipLen
	// minFrame is the smallest frame a link carries: the headers and a
	// common header.
	minFrame = frameHdr + wire.CommonLen
	// maxQueuePkts bounds each priority queue's packets; QueueBytes
	// binds first unless the queue holds small packets only.
	maxQueuePkts = 4096
)

// link is one direction of a host's wire: the switch's traffic manager
// and shaper (p4/dataplane.PortModel) on the test's clock, and a goroutine
// that hands each frame on when its serialization ends.
type link struct {
	n    *Network
	port bool // a downlink, the switch's port toward the host: the switch modes apply
	pm   *dataplane.PortModel
	wake chan struct{}
	out  func([]byte)

	mu                   sync.Mutex // guards the counters' last values
	lastDrops, lastTrims uint64
}

func (n *Network) newLink(out func([]byte), port bool) *link {
	depth := min(maxQueuePkts, n.cfg.QueueBytes/minFrame+1)
	l := &link{n: n, port: port, wake: make(chan struct{}, 1), out: out,
		pm: dataplane.NewPortModel(dataplane.PortModelConfig{RateBps: n.cfg.Rate,
			WireOverhead: n.cfg.FrameOverhead - ethLen, QueueDepthPkts: depth, PortBufferBytes: n.cfg.QueueBytes})}
	n.wg.Add(1)
	go l.serve()
	return l
}

// now is the test's clock as the port model reads it.
func now() int64 { return time.Now().UnixNano() }

// frame is the frame carrying p from src to p.Addr: a copy, since the
// caller reuses its buffers.
func frame(src netip.Addr, p homa.Packet) []byte {
	f := make([]byte, frameHdr+len(p.Buf))
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[ethLen:]
	ip[0], ip[1], ip[8], ip[9] = 0x45, p.TOS, 64, wire.IPProto
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen+len(p.Buf)))
	s4, d4 := src.As4(), p.Addr.As4()
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	copy(f[frameHdr:], p.Buf)
	return f
}

// received is the packet a frame delivers to its destination: its Homa
// bytes, its source, and its TOS (the top priority for a frame the switch
// trimmed into queue 7).
func received(f []byte) homa.Packet {
	ip := f[ethLen:]
	p := homa.Packet{Buf: f[frameHdr:], Addr: netip.AddrFrom4([4]byte(ip[12:16])), TOS: ip[1]}
	if c, err := wire.ParseCommon(p.Buf); err == nil && c.Trimmed() {
		p.TOS = homa.TOS(dataplane.TrimQueue)
	}
	return p
}

// enqueue offers frame f to the port with the verdict tor.p4 would give
// it: its priority's queue, and on a downlink the switch mode.
func (l *link) enqueue(f []byte) {
	tos, buf := f[ethLen+1], f[frameHdr:]
	v := dataplane.Verdict{Queue: uint8(homa.Priority(tos))}
	if k := l.n.cfg.ECNAbovePackets; l.port && k > 0 && tos&3 != 0 && l.pm.Stats().QueuedPkts >= k {
		f[ethLen+1] |= 3
		l.n.marked.Add(1)
	}
	if l.port {
		switch c, err := wire.ParseCommon(buf); {
		case l.n.cfg.RankOrder:
			v.Mode, v.ModeArg, v.Rank = dataplane.ModeRankOrder, uint32(l.n.cfg.QueueBytes), ^uint32(0)
			if err == nil {
				v.Rank = c.Rank
			}
		case l.n.cfg.TrimUET:
			var h wire.UETPDS
			if _, err := wire.ParseUETPDS(buf, &h); err == nil && h.Type == wire.UETRUDReq && len(buf) > wire.UETTrimmedLen &&
				l.pm.Stats().QueuedPkts >= l.n.cfg.TrimAbovePackets {
				f = f[:frameHdr+wire.UETTrimmedLen]
				binary.BigEndian.PutUint16(f[ethLen+2:], uint16(ipLen+wire.UETTrimmedLen))
				f[ethLen+1] = f[ethLen+1]&3 | homa.TOS(dataplane.TrimQueue)
				v.Queue = dataplane.TrimQueue
				l.n.trimmed.Add(1)
			}
		case l.n.cfg.TrimAbovePackets > 0:
			v.Mode, v.ModeArg = dataplane.ModeTrimAbove, uint32(l.n.cfg.TrimAbovePackets)
			if err == nil && c.Type == wire.TypeData && !c.Trimmed() && len(buf) > wire.DataLen {
				v.Trim = dataplane.TrimHomaData
			}
		}
	}
	l.pm.Enqueue(f, v, now(), 0)
	st := l.pm.Stats()
	l.mu.Lock()
	l.n.queueDrops.Add(st.Drops - l.lastDrops)
	l.n.trimmed.Add(st.Trimmed - l.lastTrims)
	l.lastDrops, l.lastTrims = st.Drops, st.Trimmed
	l.mu.Unlock()
	// The deepest queue in Homa bytes, as the links counted before they
	// were the switch's: without the frame headers.
	if b := uint64(st.QueuedBytes - st.QueuedPkts*frameHdr); b > l.n.maxQueue.Load() {
		l.n.maxQueue.Store(b)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// serve takes each frame off the port when it may start and hands it on
// when its serialization ends.
func (l *link) serve() {
	defer l.n.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		t := now()
		d, ok, wake := l.pm.Dequeue(t)
		if !ok {
			var tc <-chan time.Time
			if wake != 0 {
				timer.Reset(time.Duration(wake - t))
				tc = timer.C
			}
			select {
			case <-l.wake:
			case <-tc:
			case <-l.n.done:
				return
			}
			continue
		}
		if wait := time.Duration(d.End - t); wait > 0 {
			time.Sleep(wait)
		}
		select {
		case <-l.n.done:
			return
		default:
		}
		l.out(d.Frame)
	}
}
