// Package dataplane is the forwarding engine of the embedded P4 switch
// target: ports as batched AF_PACKET sockets, a Pipeline called on every
// frame, and a traffic manager with eight strict-priority queues per egress
// port (per port, pFabric's rank order or NDP's trimming instead: see
// Mode) behind a shaper accurate to serialization time, with buffer limits,
// telemetry, pcap capture and fault injection.
//
// Each port has two goroutines: a receiver that runs ingress and enqueues,
// and a scheduler that dequeues in priority order at the shaped rate, runs
// egress and sends. Frame buffers change hands instead of being copied and
// are preallocated, so forwarding does not allocate.
package dataplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/homatb/homatb/internal/hrtime"
)

// portState is everything the dataplane keeps about one port.
type portState struct {
	num    uint16
	idx    int // position in Dataplane.ports
	iface  string
	io     Port
	tm     *tm
	pool   *pool
	fault  *faultInjector
	capIn  *capture
	capOut *capture
	notify chan struct{} // one token: "a queue of this port got a packet"
	tx     txState
	sleep  *hrtime.Timer // link waits of the scheduler

	rxPkts, rxBytes, txPkts, txBytes                 atomic.Uint64
	pipelineDrops, egressDrops, badVerdict, oversize atomic.Uint64
	txErrors, noBuffer                               atomic.Uint64
	postcards, postcardDrops                         atomic.Uint64
	// ceMarks counts, per queue, the frames the egress control turned
	// CE (tor.p4's ECN marking), seen around the Egress call.
	ceMarks [NumQueues]atomic.Uint64
	pfc     pfcPort
}

// ipTOSOffset is where an IPv4 frame's TOS byte sits (after the 14-byte
// Ethernet header); its low two bits are ECN, ecnCE when congestion was
// experienced.
const (
	ipTOSOffset = 15
	ecnCE       = 3
)

// Dataplane forwards frames between its ports through a Pipeline.
type Dataplane struct {
	cfg    Config
	pl     Pipeline
	timed  TimedPipeline // pl, when its meters take the batch's time
	log    *slog.Logger
	epoch  time.Time
	byNum  [MaxPort + 1]*portState
	ports  []*portState // by port number
	shared *sharedBuffer
	ran    atomic.Bool
	// rec is the per-packet recording in progress, nil when off; recMu
	// serializes starting and stopping it.
	rec   atomic.Pointer[recorder]
	recMu sync.Mutex
}

// New opens an AF_PACKET port on every interface in cfg.Ports and returns a
// dataplane that forwards through pl once Run is called.
func New(cfg Config, pl Pipeline) (*Dataplane, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	io := make(map[uint16]Port, len(c.Ports))
	closeAll := func() {
		for _, p := range io {
			p.Close()
		}
	}
	for num, iface := range c.Ports {
		p, err := OpenAFPacket(iface, c.BatchSize)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("dataplane: port %d: %w", num, err)
		}
		io[num] = p
	}
	d, err := NewWithPorts(c, pl, io)
	if err != nil {
		closeAll()
		return nil, err
	}
	return d, nil
}

// NewWithPorts is New over ports that are already open (in-memory ports in
// tests and benchmarks); io must have an entry for every port of cfg.Ports.
// The dataplane closes them when Run ends.
func NewWithPorts(cfg Config, pl Pipeline, io map[uint16]Port) (*Dataplane, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if pl == nil {
		return nil, errors.New("dataplane: nil pipeline")
	}
	d := &Dataplane{cfg: c, pl: pl, log: c.Logger, epoch: time.Now()}
	if tp, ok := pl.(TimedPipeline); ok {
		tp.SetClock(d.now) // one clock: the batch times ingest passes
		d.timed = tp
	}
	if c.SharedBufferBytes > 0 {
		d.shared = &sharedBuffer{size: int64(c.SharedBufferBytes), alpha: c.SharedAlpha}
	}
	nums := make([]uint16, 0, len(c.Ports))
	for num := range c.Ports {
		if io[num] == nil {
			return nil, fmt.Errorf("dataplane: port %d has no I/O", num)
		}
		nums = append(nums, num)
	}
	slices.Sort(nums)
	held := 0 // most packets all traffic managers can hold together
	for _, num := range nums {
		ps := &portState{
			num:    num,
			idx:    len(d.ports),
			iface:  c.Ports[num],
			io:     io[num],
			tm:     newTM(&c, num, d.shared),
			fault:  newFaultInjector(num, c.Faults[num]),
			notify: make(chan struct{}, 1),
		}
		if ps.sleep, err = hrtime.NewTimer(); err != nil {
			d.closeSleepers()
			return nil, fmt.Errorf("dataplane: port %d: %w", num, err)
		}
		ps.tx.out = make([]departure, c.BatchSize)
		ps.tx.frames = make([][]byte, 0, c.BatchSize)
		held += ps.tm.capacityPkts()
		d.byNum[num] = ps
		d.ports = append(d.ports, ps)
	}
	// Run closes the sleepers; a dataplane that never runs leaks two fds
	// per port, as it leaves its ports open.
	// Any ingress port may fill every queue, plus its own receive slots
	// and a send batch in flight at every scheduler.
	perPort := held + c.BatchSize*(len(nums)+1)
	for _, ps := range d.ports {
		ps.pool = newPool(perPort, c.MaxFrame)
	}
	if c.PcapDir != "" {
		if err := d.openCaptures(); err != nil {
			d.closeSleepers()
			return nil, err
		}
	}
	return d, nil
}

func (d *Dataplane) openCaptures() error {
	if err := os.MkdirAll(d.cfg.PcapDir, 0o755); err != nil {
		return fmt.Errorf("dataplane: pcap dir: %w", err)
	}
	for _, ps := range d.ports {
		var err error
		if ps.capIn, err = newCapture(d.cfg.PcapDir, ps.iface+"_in.pcap", d.cfg.PcapRecords, d.cfg.MaxFrame); err != nil {
			return fmt.Errorf("dataplane: port %d: %w", ps.num, err)
		}
		if ps.capOut, err = newCapture(d.cfg.PcapDir, ps.iface+"_out.pcap", d.cfg.PcapRecords, d.cfg.MaxFrame); err != nil {
			return fmt.Errorf("dataplane: port %d: %w", ps.num, err)
		}
	}
	return nil
}

func (d *Dataplane) closeSleepers() {
	for _, ps := range d.ports {
		if ps.sleep != nil {
			ps.sleep.Close()
		}
	}
}

// now is the dataplane clock: monotonic nanoseconds since New.
func (d *Dataplane) now() int64 { return int64(time.Since(d.epoch)) }

// Run forwards until ctx is cancelled or a port fails, then closes the
// ports and the captures. It can be called once.
func (d *Dataplane) Run(ctx context.Context) error {
	if !d.ran.CompareAndSwap(false, true) {
		return errors.New("dataplane: Run called twice")
	}
	g, gctx := errgroup.WithContext(ctx)
	poll, err := d.newPoller()
	if err != nil {
		return err
	}
	if poll != nil {
		g.Go(func() error { return d.pollReceive(gctx, poll) })
	}
	for _, ps := range d.ports {
		if poll == nil {
			g.Go(func() error { return d.receive(gctx, ps) })
		}
		g.Go(func() error { return d.transmit(gctx, ps) })
	}
	g.Go(func() error {
		<-gctx.Done()
		var errs []error
		for _, ps := range d.ports {
			errs = append(errs, ps.io.Close())
		}
		d.closeSleepers()
		if poll != nil {
			errs = append(errs, poll.close())
		}
		return errors.Join(errs...)
	})
	stop := make(chan struct{})
	var caps sync.WaitGroup
	capErrs := make(chan error, 2*len(d.ports))
	for _, ps := range d.ports {
		for _, c := range []*capture{ps.capIn, ps.capOut} {
			if c != nil {
				caps.Go(func() { capErrs <- c.run(stop) })
			}
		}
	}
	d.log.Info("dataplane running", "ports", len(d.ports), "batch", d.cfg.BatchSize, "spin", d.cfg.Spin)
	err = g.Wait()
	if d.rec.Load() != nil {
		if _, perr := d.StopPostcards(); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	for _, ps := range d.ports {
		ps.tm.drain(func(p *packet) { p.release() })
	}
	close(stop)
	caps.Wait()
	close(capErrs)
	for e := range capErrs {
		err = errors.Join(err, e)
	}
	d.log.Info("dataplane stopped", "err", err)
	return err
}

// closed reports whether err means the port was closed on purpose.
func closed(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed)
}

// rxState is a receive batch: slots hold the buffers the next frames land
// in; a slot whose buffer moved into a queue gets a fresh one.
type rxState struct {
	slots []*packet
	bufs  [][]byte
	sizes []int
	v     Verdict
}

func newRxState(ps *portState, batch int) *rxState {
	rs := &rxState{slots: make([]*packet, batch), bufs: make([][]byte, batch), sizes: make([]int, batch)}
	for i := range rs.slots {
		rs.slots[i] = ps.pool.get()
		rs.bufs[i] = rs.slots[i].buf
	}
	return rs
}

func (rs *rxState) release() {
	for _, p := range rs.slots {
		p.release()
	}
}

// receive is the port's ingress loop: receive a batch, then ingest it.
func (d *Dataplane) receive(ctx context.Context, ps *portState) error {
	rs := newRxState(ps, d.cfg.BatchSize)
	defer rs.release()
	for {
		n, err := ps.io.Recv(rs.bufs, rs.sizes)
		if err != nil {
			if closed(ctx, err) {
				return nil
			}
			return fmt.Errorf("dataplane: port %d: %w", ps.num, err)
		}
		if err := d.ingest(ps, rs, n); err != nil && !closed(ctx, err) {
			return err
		}
	}
}

// ingest runs ingress on the n frames received in rs, moves accepted
// buffers into egress queues, refilling their slots from the port's pool,
// and forwards what may leave now.
func (d *Dataplane) ingest(ps *portState, rs *rxState, n int) error {
	now := d.now()
	var wall time.Time
	if ps.capIn != nil {
		wall = time.Now()
	}
	var notify uint64 // bit p: egress port p got a packet
	var rxBytes uint64
	for i := range n {
		p := rs.slots[i]
		size := rs.sizes[i]
		rxBytes += uint64(size)
		if size > len(p.buf) {
			ps.oversize.Add(1)
			continue
		}
		if ps.fault.dropIngress(now) {
			continue // lost on the wire before the switch saw it
		}
		if d.cfg.PFC.On() && d.pfcReceive(ps, p.buf[:size], now) {
			continue // MAC control: obeyed, not forwarded
		}
		p.n, p.inPort, p.arrNs = size, ps.num, now
		if ps.capIn != nil {
			ps.capIn.add(p.frame(), wall)
		}
		rs.v = Verdict{}
		if d.timed != nil {
			d.timed.IngressAt(p.frame(), ps.num, now, &rs.v)
		} else {
			d.pl.Ingress(p.frame(), ps.num, &rs.v)
		}
		if rs.v.Drop {
			ps.pipelineDrops.Add(1)
			continue
		}
		var eg *portState
		if int(rs.v.EgressPort) < len(d.byNum) {
			eg = d.byNum[rs.v.EgressPort]
		}
		if eg == nil || rs.v.Queue >= NumQueues {
			ps.badVerdict.Add(1)
			continue
		}
		if !eg.tm.enqueueVerdict(p, &rs.v, now) {
			continue // tail drop, counted by the queue
		}
		notify |= 1 << rs.v.EgressPort
		if d.cfg.PFC.On() && d.pfcHeld(ps, p.queue) {
			notify |= 1 << ps.num
		}
		rs.slots[i] = d.refill(ps)
		rs.bufs[i] = rs.slots[i].buf
	}
	ps.rxPkts.Add(uint64(n))
	ps.rxBytes.Add(rxBytes)
	for notify != 0 {
		num := bits.TrailingZeros64(notify)
		notify &^= 1 << num
		if err := d.kick(d.byNum[num]); err != nil {
			return err
		}
	}
	return nil
}

// kick forwards what egress port eg may send now, from the calling ingress
// goroutine if no one else is sending on eg, and leaves the rest (a shaper
// wait, or a busy port) to eg's scheduler.
func (d *Dataplane) kick(eg *portState) error {
	wake := true
	if eg.tx.mu.TryLock() {
		_, w, _, err := d.pump(eg)
		eg.tx.mu.Unlock()
		if err != nil {
			return err
		}
		wake = w != 0
	}
	if wake {
		select {
		case eg.notify <- struct{}{}:
		default: // already signalled
		}
	}
	return nil
}

// refill takes a fresh buffer for a receive slot. The pool is sized so it
// cannot run dry; if it does anyway, a buffer is allocated and counted.
func (d *Dataplane) refill(ps *portState) *packet {
	if p := ps.pool.get(); p != nil {
		return p
	}
	ps.noBuffer.Add(1)
	return &packet{buf: make([]byte, d.cfg.MaxFrame), home: ps.pool}
}

// txState is the egress side of a port, used by whoever holds its lock:
// the port's scheduler, or an ingress goroutine that forwards the packets
// it just queued without waking the scheduler (run to completion, so the
// common case costs no goroutine hand-off).
type txState struct {
	mu     sync.Mutex
	out    []departure
	frames [][]byte
	md     EgressMeta
}

// transmit is the port's scheduler: it sends what the shaper lets leave
// and sleeps until the link is free or a packet arrives.
func (d *Dataplane) transmit(ctx context.Context, ps *portState) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		ps.tx.mu.Lock()
		_, wake, link, err := d.pump(ps)
		ps.tx.mu.Unlock()
		if err != nil {
			if closed(ctx, err) {
				return nil
			}
			return err
		}
		if !d.wait(ctx, ps, timer, wake, link) {
			return nil
		}
	}
}

// pump sends batches from the port's queues until none may leave now, and
// returns when to look again (see tm.dequeue). The caller holds ps.tx.mu.
func (d *Dataplane) pump(ps *portState) (now, wake int64, link bool, err error) {
	tx := &ps.tx
	for {
		now = d.now()
		if ps.pfc.Pending() {
			if err := d.sendPFC(ps, now); err != nil {
				return now, 0, false, err
			}
		}
		var n int
		n, wake, link = ps.tm.dequeue(now, tx.out)
		if n == 0 {
			return now, wake, link, nil
		}
		if err := d.send(ps, tx.out[:n]); err != nil {
			return now, 0, false, err
		}
	}
}

// send runs egress and fault injection on departing packets, transmits the
// survivors in one batch and recycles every buffer.
func (d *Dataplane) send(ps *portState, deps []departure) error {
	tx := &ps.tx
	var wall time.Time
	if ps.capOut != nil {
		wall = time.Now()
	}
	frames := tx.frames[:0]
	var txBytes uint64
	now := d.now()
	rec := d.rec.Load()
	for i := range deps {
		dep := &deps[i]
		p := dep.pkt
		if d.cfg.PFC.On() {
			d.pfcLeft(p.inPort, p.queue, now)
		}
		tx.md = EgressMeta{
			IngressPort:    p.inPort,
			EgressPort:     ps.num,
			Queue:          p.queue,
			EnqDepthPkts:   p.enqDepth,
			DeqDepthPkts:   dep.deqDepth,
			DeqTimedeltaUs: dep.delayUs,
			Length:         p.n,
		}
		f := p.frame()
		ect := len(f) > ipTOSOffset && f[12] == 0x08 && f[13] == 0x00 && f[ipTOSOffset]&ecnCE != ecnCE
		if !d.pl.Egress(f, &tx.md) {
			ps.egressDrops.Add(1)
			continue
		}
		if ect && f[ipTOSOffset]&ecnCE == ecnCE {
			ps.ceMarks[p.queue&(NumQueues-1)].Add(1)
		}
		if ps.fault.dropEgress(now) {
			continue
		}
		if ps.capOut != nil {
			ps.capOut.add(p.frame(), wall)
		}
		if rec != nil {
			rec.add(ps, p, dep.deqNs)
		}
		frames = append(frames, p.frame())
		txBytes += uint64(p.n)
	}
	sent, err := 0, error(nil)
	if len(frames) > 0 {
		sent, err = ps.io.Send(frames)
	}
	ps.txPkts.Add(uint64(sent))
	if sent == len(frames) {
		ps.txBytes.Add(txBytes)
	} else {
		ps.txErrors.Add(uint64(len(frames) - sent))
	}
	for i := range frames {
		frames[i] = nil
	}
	for i := range deps {
		deps[i].pkt.release()
		deps[i].pkt = nil
	}
	if err != nil {
		return fmt.Errorf("dataplane: port %d: %w", ps.num, err)
	}
	return nil
}

// wait blocks the scheduler until a packet arrives, wake passes (0: no
// deadline) or ctx ends, in which case it returns false.
func (d *Dataplane) wait(ctx context.Context, ps *portState, timer *time.Timer, wake int64, link bool) bool {
	if wake == 0 {
		select {
		case <-ctx.Done():
			return false
		case <-ps.notify:
			return true
		}
	}
	left := time.Duration(wake - d.now())
	if link && left < preciseSleepMax {
		// A link wait cannot be cut short by an arrival: sleep exactly
		// (a Go timer would round it up to a millisecond; see hrtime).
		_ = ps.sleep.Sleep(left) // an error means closed: the dataplane is stopping
		return ctx.Err() == nil
	}
	timer.Reset(left)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-ps.notify:
		return true
	case <-timer.C:
		return true
	}
}

// preciseSleepMax is the longest link wait slept with preciseSleep.
const preciseSleepMax = 5 * time.Millisecond

// SetFault changes the fault injection of port at run time.
func (d *Dataplane) SetFault(port uint16, f Fault) error {
	ps := d.port(port)
	if ps == nil {
		return fmt.Errorf("dataplane: no port %d", port)
	}
	if err := f.check(); err != nil {
		return fmt.Errorf("dataplane: port %d: %w", port, err)
	}
	ps.fault.set(f)
	d.log.Info("fault set", "port", port, "drop_prob", f.DropProb, "drop_every", f.EveryN, "direction", f.Direction)
	return nil
}

// SetLinkDown takes port's link down for dur from now: every frame it
// receives or sends is dropped and counted as a fault drop, and it comes
// back up by itself. A dur of 0 or less brings it up at once.
func (d *Dataplane) SetLinkDown(port uint16, dur time.Duration) error {
	ps := d.port(port)
	if ps == nil {
		return fmt.Errorf("dataplane: no port %d", port)
	}
	until := int64(0)
	if dur > 0 {
		until = d.now() + int64(dur)
	}
	ps.fault.setDown(until)
	d.log.Info("link down", "port", port, "for", dur)
	return nil
}

// LinkDown returns how long port's link stays down (0: it is up).
func (d *Dataplane) LinkDown(port uint16) (time.Duration, error) {
	ps := d.port(port)
	if ps == nil {
		return 0, fmt.Errorf("dataplane: no port %d", port)
	}
	return max(0, time.Duration(ps.fault.downUntil.Load()-d.now())), nil
}

// Fault returns the fault injection in force on port.
func (d *Dataplane) Fault(port uint16) (Fault, error) {
	ps := d.port(port)
	if ps == nil {
		return Fault{}, fmt.Errorf("dataplane: no port %d", port)
	}
	return ps.fault.get(), nil
}

func (d *Dataplane) port(num uint16) *portState {
	if int(num) >= len(d.byNum) {
		return nil
	}
	return d.byNum[num]
}
