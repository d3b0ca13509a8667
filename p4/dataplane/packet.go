package dataplane

import (
	"runtime"
	"syscall"
)

// packet is one frame buffer. It changes hands instead of being copied: the
// receive slot that filled it passes it to an egress queue, and whoever sends
// it (the egress port's scheduler, or an ingress goroutine forwarding inline)
// returns it to the pool of the port that owns it.
type packet struct {
	buf      []byte // full-capacity buffer
	n        int    // frame length
	inPort   uint16
	queue    uint8
	enqDepth uint32 // packets in its queue before it arrived
	rank     uint32 // order in a rank_order port's queue
	arrNs    int64  // when its receive batch returned, on the dataplane clock
	enqNs    int64  // when it entered its queue, on the dataplane clock
	home     *pool
}

// frame is the received frame.
func (p *packet) frame() []byte { return p.buf[:p.n] }

// pool is a fixed free list of packets. A buffered channel keeps it lock-free
// for the common one-producer one-consumer case and never allocates.
type pool struct {
	free chan *packet
}

// newPool preallocates n packets of size bytes each in two slabs, so memory
// that is never touched is never committed by the kernel. The frame slab
// is mapped outside the garbage-collected heap: the collector's target
// grows with the live heap, and a slab counted there would let the heap
// grow by its size again before each collection (tens of MiB on a switch).
// It is unmapped once the pool is unreachable; every packet points to the
// pool, so that is after the last packet's buffer is dropped.
func newPool(n, size int) *pool {
	pl := &pool{free: make(chan *packet, n)}
	slab, err := syscall.Mmap(-1, 0, n*size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil || n*size == 0 {
		slab = make([]byte, n*size) // the collector's memory works too, counted in its target
	} else {
		runtime.AddCleanup(pl, func(b []byte) { _ = syscall.Munmap(b) }, slab)
	}
	pkts := make([]packet, n)
	for i := range pkts {
		pkts[i] = packet{buf: slab[i*size : (i+1)*size : (i+1)*size], home: pl}
		pl.free <- &pkts[i]
	}
	return pl
}

// get returns a free packet or nil when the pool is empty.
func (pl *pool) get() *packet {
	select {
	case p := <-pl.free:
		return p
	default:
		return nil
	}
}

// release returns p to the pool it came from, if any (a PortModel's
// packets have none).
func (p *packet) release() {
	p.n = 0
	if p.home == nil {
		return
	}
	select {
	case p.home.free <- p:
	default:
		// More packets than the pool was built with: only possible for
		// packets allocated by the fallback in refill, which are let go.
	}
}

// fifo is a ring of packets of a fixed capacity. Its ring starts small
// and doubles when full up to the capacity, so an idle queue holds a few
// slots, not its whole depth (a fat tree of k=32 has 49,152 ports of 8
// queues).
type fifo struct {
	ring       []*packet
	head, size int
	capacity   int
}

// fifoStart is a fifo's first ring.
const fifoStart = 8

func newFifo(capacity int) fifo { return fifo{capacity: capacity} }

func (f *fifo) full() bool { return f.size == f.capacity }

func (f *fifo) push(p *packet) {
	if f.size == len(f.ring) {
		f.grow()
	}
	f.ring[(f.head+f.size)%len(f.ring)] = p
	f.size++
}

// grow doubles the ring (up to the capacity), the queued packets first.
func (f *fifo) grow() {
	r := make([]*packet, min(max(2*len(f.ring), fifoStart), f.capacity))
	for i := range f.size {
		r[i] = f.ring[(f.head+i)%len(f.ring)]
	}
	f.ring, f.head = r, 0
}

func (f *fifo) pop() *packet {
	p := f.ring[f.head]
	f.ring[f.head] = nil
	f.head = (f.head + 1) % len(f.ring)
	f.size--
	return p
}
