package dataplane

import (
	"fmt"
	"sync/atomic"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/wire"
)

// PFC configures priority flow control (IEEE 802.1Qbb) on every port:
// for each lossless priority, the packets a port received and the switch
// still buffers (in any egress queue) are counted; when they reach
// XoffPkts the switch sends a PAUSE frame for that priority out of the
// port they came in on, and when they fall to XonPkts a resume (a PAUSE
// with quanta 0). A PAUSE the switch receives stops the port's egress
// queue of that priority for the quanta it names, until a resume. A
// priority is an egress queue: frames are untagged, so the class is the
// queue ingress chose from the DSCP (dscp_to_queue), as switches map DSCP
// to a priority group for RoCE.
type PFC struct {
	// Priorities has bit q set when queue q is lossless; 0 turns PFC off.
	Priorities uint8
	XoffPkts   int
	XonPkts    int
	// HeadroomPkts is what a lossless queue may hold beyond its depth:
	// room for the frames already on their way when a PAUSE goes out
	// (PFC headroom, which switches reserve per priority group).
	HeadroomPkts int
}

// On reports whether PFC is configured.
func (p PFC) On() bool { return p.Priorities != 0 }

func (p PFC) check() error {
	if !p.On() {
		return nil
	}
	if p.XoffPkts < 1 || p.XonPkts < 0 || p.XonPkts >= p.XoffPkts || p.HeadroomPkts < 0 {
		return fmt.Errorf("dataplane: pfc xoff %d xon %d packets: want 0 <= xon < xoff, headroom >= 0", p.XoffPkts, p.XonPkts)
	}
	return nil
}

// The PAUSE frame's layout is the wire package's (wire.PutPFCFrame).
const (
	pfcFrameLen = wire.PFCFrameLen
	// PFCQuantaMax is the longest pause one frame asks for, in quanta of
	// 512 bit times; the switch sends it for XOFF and refreshes it while
	// the priority stays above XON.
	PFCQuantaMax = wire.PFCQuantaMax
)

// PFCIngress is one port's PFC state as an ingress port: what it holds
// of each priority, what it asked its peer to pause, and the counters.
// The dataplane keeps one per port and calls it from any goroutine; the
// simulator keeps one per switch port on its one goroutine.
type PFCIngress struct {
	// buffered counts, per priority, the frames this port received that
	// the switch still holds in an egress queue.
	buffered [NumQueues]atomic.Int32
	// xoff is set while the port has asked its peer to pause that
	// priority; sentAt is when it last said so (for the refresh).
	xoff   [NumQueues]atomic.Bool
	sentAt [NumQueues]atomic.Int64
	// pending has bit q set when priority q's state must be announced
	// (Announce reads xoff then).
	pending atomic.Uint32
	// counters per priority
	pausesSent, resumesSent, pausesRecv, resumesRecv [NumQueues]atomic.Uint64
}

// Held counts a frame of priority q this port received that the switch
// just queued, and reports whether the port now has a PAUSE to announce
// (the priority reached XOFF).
func (pf *PFCIngress) Held(cfg PFC, q uint8) bool {
	if cfg.Priorities&(1<<q) == 0 {
		return false
	}
	if int(pf.buffered[q].Add(1)) >= cfg.XoffPkts && pf.xoff[q].CompareAndSwap(false, true) {
		pf.pending.Or(1 << q)
		return true
	}
	return false
}

// Left uncounts a frame of priority q that left the switch (sent, or
// dropped after queueing) at now, and reports whether the port now has
// something to announce: a resume when the priority fell to XON, or a
// refresh of its PAUSE when halfPause ns passed since it was sent while it
// stays above.
func (pf *PFCIngress) Left(cfg PFC, q uint8, now, halfPause int64) bool {
	if cfg.Priorities&(1<<q) == 0 {
		return false
	}
	n := int(pf.buffered[q].Add(-1))
	switch {
	case !pf.xoff[q].Load():
		return false
	case n <= cfg.XonPkts:
		if !pf.xoff[q].CompareAndSwap(true, false) {
			return false
		}
	case now-pf.sentAt[q].Load() < halfPause:
		return false
	}
	pf.pending.Or(1 << q)
	return true
}

// Pending reports whether the port has something to announce.
func (pf *PFCIngress) Pending() bool { return pf.pending.Load() != 0 }

// Announce takes what the port has to announce at now: the classes of one
// PAUSE frame and their quanta (PFCQuantaMax to pause, 0 to resume),
// counted as sent. A zero vector means nothing.
func (pf *PFCIngress) Announce(now int64) (vec uint8, quanta [NumQueues]uint16) {
	vec = uint8(pf.pending.Swap(0))
	for q := range uint8(NumQueues) {
		if vec&(1<<q) == 0 {
			continue
		}
		if pf.xoff[q].Load() {
			quanta[q] = PFCQuantaMax
			pf.pausesSent[q].Add(1)
		} else {
			pf.resumesSent[q].Add(1)
		}
		pf.sentAt[q].Store(now)
	}
	return vec, quanta
}

// Received counts a PAUSE frame the port received.
func (pf *PFCIngress) Received(vec uint8, quanta *[NumQueues]uint16) {
	for q := range NumQueues {
		if vec&(1<<q) == 0 {
			continue
		}
		if quanta[q] == 0 {
			pf.resumesRecv[q].Add(1)
		} else {
			pf.pausesRecv[q].Add(1)
		}
	}
}

// Count fills queue statistics qs (by queue) with the port's PFC
// counters.
func (pf *PFCIngress) Count(qs []switchstats.Queue) {
	for i := range qs {
		q := qs[i].Queue
		if q < 0 || q >= NumQueues {
			continue
		}
		qs[i].PFCPausesSent, qs[i].PFCResumesSent = pf.pausesSent[q].Load(), pf.resumesSent[q].Load()
		qs[i].PFCPausesRecv, qs[i].PFCResumesRecv = pf.pausesRecv[q].Load(), pf.resumesRecv[q].Load()
	}
}

// pfcPort is a port's PFC state in the dataplane: its ingress state and
// the buffer its PAUSE frames are built in.
type pfcPort struct {
	PFCIngress
	frame  [pfcFrameLen]byte
	frames [][]byte
}

// pfcHeld counts a frame of priority q, just queued, against its ingress
// port in and reports whether in has a PAUSE to send.
func (d *Dataplane) pfcHeld(in *portState, q uint8) bool { return in.pfc.Held(d.cfg.PFC, q) }

// pfcLeft uncounts a frame of priority q from ingress port num that left
// the switch and wakes that port's scheduler when it has a resume or a
// refresh to send.
func (d *Dataplane) pfcLeft(num uint16, q uint8, now int64) {
	if int(num) >= len(d.byNum) || d.byNum[num] == nil {
		return
	}
	in := d.byNum[num]
	if !in.pfc.Left(d.cfg.PFC, q, now, in.tm.pauseNs(PFCQuantaMax)/2) {
		return
	}
	select {
	case in.notify <- struct{}{}:
	default:
	}
}

// sendPFC sends ps's pending PAUSE and resume announcements in one frame,
// ahead of its queues (MAC control frames bypass them). The caller holds
// ps.tx.mu.
func (d *Dataplane) sendPFC(ps *portState, now int64) error {
	pf := &ps.pfc
	vec, quanta := pf.Announce(now)
	if vec == 0 {
		return nil
	}
	wire.PutPFCFrame(pf.frame[:], d.portMAC(ps.num), vec, &quanta)
	pf.frames = append(pf.frames[:0], pf.frame[:])
	sent, err := ps.io.Send(pf.frames)
	ps.txPkts.Add(uint64(sent))
	ps.txBytes.Add(uint64(sent * pfcFrameLen))
	if err != nil {
		return fmt.Errorf("dataplane: port %d: pfc: %w", ps.num, err)
	}
	return nil
}

// portMAC is the source address of the switch's own frames on port num: a
// locally administered address from the device id and the port.
func (d *Dataplane) portMAC(num uint16) [6]byte {
	id := d.cfg.DeviceID
	return [6]byte{0x02, byte(id >> 16), byte(id >> 8), byte(id), byte(num >> 8), byte(num)}
}

// pfcReceive obeys a PAUSE frame f that arrived on ps: each class it
// names stops (or, with quanta 0, resumes) ps's egress queue of that
// priority. It reports whether f was a PAUSE frame (consumed here).
func (d *Dataplane) pfcReceive(ps *portState, f []byte, now int64) bool {
	vec, quanta, ok := wire.ParsePFCFrame(f)
	if !ok {
		return false
	}
	ps.tm.pause(vec, &quanta, now)
	ps.pfc.Received(vec, &quanta)
	select { // a resume lets the scheduler send again
	case ps.notify <- struct{}{}:
	default:
	}
	return true
}

// pauseNs is how long quanta of 512 bit times last on this port's link
// (at 1 Gbit/s when the port is unshaped).
func (t *tm) pauseNs(quanta uint16) int64 {
	rate := t.shaper.rate
	if rate == 0 {
		rate = DefaultLinkRateBps
	}
	return wire.PFCPause(quanta, rate)
}

// pause stops the queues in vec until now plus their quanta (0 resumes),
// keeping the time each was paused.
func (t *tm) pause(vec uint8, quanta *[NumQueues]uint16, now int64) {
	t.lock()
	defer t.unlock()
	for q := range NumQueues {
		if vec&(1<<q) == 0 {
			continue
		}
		if t.pausedUntil[q] <= now { // not paused: a new pause period
			t.pausedNs[q] += t.pausedUntil[q] - t.pausedSince[q]
			t.pausedSince[q] = now
		}
		t.pausedUntil[q] = now + t.pauseNs(quanta[q])
	}
}

// pausedTotal is how long queue q has been paused up to now (t.mu held).
func (t *tm) pausedTotal(q int, now int64) uint64 {
	return uint64(t.pausedNs[q] + min(now, t.pausedUntil[q]) - t.pausedSince[q])
}
