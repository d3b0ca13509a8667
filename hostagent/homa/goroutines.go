package homa

import (
	"context"
	"errors"
	"net"
	"runtime"
	"time"
)

// reader reads batches of packets from the Conn and handles them itself.
func (e *Endpoint) reader() {
	defer e.wg.Done()
	b := newRxBatch(len(e.state.tx), e.cfg.MTU)
	oneP := runtime.GOMAXPROCS(0) == 1 // read once: agents set it at start
	failures := 0
	for {
		b.reset()
		n, err := e.conn.ReadBatch(b.pkts)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient errors are retried a bounded number of times in a row.
			failures++
			e.log.Warn("homa: read failed", "err", err, "in_a_row", failures)
			if failures > 10 {
				return
			}
			continue
		}
		failures = 0
		open, handedOff := e.handle(b, n)
		if !open {
			return
		}
		// With one P (how agents run) a goroutine readied by a channel
		// send waits until the running one blocks, and under load this
		// reader finds the socket never empty: yield to the server or
		// caller it just handed a result to. With more Ps an idle one
		// takes it, and the yield would only cost.
		if handedOff && oneP {
			runtime.Gosched()
		}
	}
}

// timers runs the ticks (silence detection, RESENDs, ACKs, cutoffs) and
// the pacer's wake-ups.
func (e *Endpoint) timers() {
	defer e.wg.Done()
	ticker := time.NewTicker(e.cfg.Tick)
	defer ticker.Stop()
	st := &e.state
	for {
		select {
		case <-ticker.C:
			if !e.lock() {
				return
			}
			now := e.now()
			e.onTick(now)
			e.unlock()
		case <-st.pacer.C():
			if !e.lock() {
				return
			}
			st.armed = false
			e.unlock()
		case <-e.kick:
			// A pacer wait shorter than PacerSpin is polled: read the
			// socket, yield, then look again (unlock kicks again while it
			// is still short). Go does not poll the network while a
			// goroutine spins like this, so without the read this host's
			// reader would wait for the spin to end: a 100 B Call from a
			// host sending 1 MB messages at 1 Gbit/s took 304-315 µs at the
			// median without it and 43-122 µs with it
			// (BenchmarkProbeDuringBulk).
			e.spinRead()
			runtime.Gosched()
			if !e.lock() {
				return
			}
			st.spinning = false
			e.unlock()
		case <-e.done:
			return
		}
	}
}

// handle runs the protocol for the first n packets of b; open is false
// once the Endpoint is closed, handedOff tells whether a request or a
// Call's result went to a waiting goroutine.
func (e *Endpoint) handle(b *rxBatch, n int) (open, handedOff bool) {
	e.c.rxBatch.Add(1)
	if !e.lock() {
		return false, false
	}
	h0 := e.state.handoffs
	now := e.now()
	for i := range n {
		e.handlePacket(now, &b.pkts[i])
	}
	handedOff = e.state.handoffs != h0
	e.unlock()
	return true, handedOff
}

// poll reads and handles packets in the calling goroutine until ready
// reports true, ctx ends or homaconf.Config.Poll has passed, so that a Call or
// Receive about to sleep gets its packet without waking another thread.
// It returns at once when polling is off or another goroutine polls.
func (e *Endpoint) poll(ctx context.Context, ready func() bool) {
	if e.try == nil || e.cfg.Poll == 0 || ready() || !e.polling.CompareAndSwap(false, true) {
		return
	}
	defer e.polling.Store(false)
	b := e.pollRx
	deadline := e.now() + e.cfg.Poll
	for empty := 0; !ready() && ctx.Err() == nil; {
		b.reset()
		n, err := e.try.TryReadBatch(b.pkts)
		switch {
		case err != nil:
			return // the reader reports and handles errors
		case n > 0:
			e.c.polled.Add(1)
			if open, _ := e.handle(b, n); !open {
				return
			}
			continue
		}
		// An empty read is a syscall, about 1 µs: the clock and the
		// other goroutines of this P are looked at every few of them.
		if empty++; empty%8 == 0 {
			if e.now() > deadline {
				return
			}
			runtime.Gosched()
		}
	}
}

// spinRead reads what the socket holds and runs the protocol for it, for
// the spinning pacer, unless a waiter is polling already.
func (e *Endpoint) spinRead() {
	if e.try == nil || !e.polling.CompareAndSwap(false, true) {
		return
	}
	defer e.polling.Store(false)
	b := e.pollRx
	b.reset()
	if n, err := e.try.TryReadBatch(b.pkts); err == nil && n > 0 {
		e.c.spinRead.Add(1)
		e.handle(b, n)
	}
}

// rxBatch is a batch of receive buffers, filled by one read.
type rxBatch struct {
	pkts []Packet
}

func newRxBatch(n, mtu int) *rxBatch {
	b := &rxBatch{pkts: make([]Packet, n)}
	for i := range b.pkts {
		b.pkts[i].Buf = make([]byte, mtu)
	}
	return b
}

// reset readies b's buffers for the next read.
func (b *rxBatch) reset() {
	for i := range b.pkts {
		b.pkts[i].Buf = b.pkts[i].Buf[:cap(b.pkts[i].Buf)]
	}
}
