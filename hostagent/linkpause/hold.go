//go:build linux

package linkpause

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/homatb/homatb/wire"
)

// pauseRate is the token bucket's rate while the link is paused, in bytes
// a second: low enough that a frame the bucket lets through leaves the
// next one waiting for many seconds (a PAUSE lasts at most 65,535 quanta,
// 0.67 s at 50 Mbit/s, and is renewed or lifted well before).
const pauseRate = 64

// Hold obeys the PAUSE frames an interface receives for some priorities
// by stopping the token bucket filter (tbf) at the root of that
// interface's queueing discipline: what the kernel sends waits in the
// bucket's queue, as in a paused NIC's, until the pause runs out or a
// resume arrives, and the bucket is then set back as it was. A tbf is
// needed: changing it refills its bucket, where htb keeps the debt a
// frame sent at the paused rate ran up and would stay shut for up to a
// minute after the resume. The interface has one queue, so a PAUSE for
// any of the priorities holds everything it sends.
type Hold struct {
	log    *slog.Logger
	tbf    *tbfSetter
	sock   *Socket
	vector uint8  // the priorities obeyed, bit p for priority p
	bps    uint64 // the link's rate, which times a PAUSE's quanta
	run    bucket // the bucket as Start found it
	pause  bucket
	done   chan struct{}
	// kick is a PFC frame enabling no class, a no-op on the wire (the
	// switch consumes it), sent after each restart: the change refills the
	// bucket but does not wake the queue, which sleeps on the timer set
	// while paused (many seconds) until a frame is queued behind it.
	kick []byte

	mu          sync.Mutex
	paused      bool
	closed      bool
	pausedSince time.Time
	timer       *time.Timer
	gen         uint64 // counts pauses, so a stale timer knows itself
	pauses      uint64
	resumes     uint64
	pausedNs    uint64
	errs        uint64
}

// Start opens the PAUSE socket of interface ifname (in the caller's
// network namespace) and obeys, until Close, the PAUSE frames that name a
// priority of vector, each lasting its quanta of 512 bit times at linkBps.
// The interface's root qdisc must be a tbf.
func Start(ifname string, vector uint8, linkBps uint64, log *slog.Logger) (*Hold, error) {
	if vector == 0 || linkBps == 0 {
		return nil, fmt.Errorf("linkpause: expected priorities and the link's rate, got vector %#x and %d bit/s", vector, linkBps)
	}
	nh, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("linkpause: netlink: %w", err)
	}
	defer nh.Close()
	link, err := nh.LinkByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("linkpause: %s: %w", ifname, err)
	}
	q, err := rootTBF(nh, link)
	if err != nil {
		return nil, err
	}
	// Paused, the bucket admits one full frame and then none for many
	// seconds: it must still admit the link's largest frame, or tbf would
	// drop the frames that queue meanwhile. Its queue keeps its limit (a
	// limit of 0 would drop them too).
	if len(link.Attrs().HardwareAddr) != 6 {
		return nil, fmt.Errorf("linkpause: %s has no Ethernet address (PAUSE frames are Ethernet's)", ifname)
	}
	frame := uint32(link.Attrs().MTU + 14)
	run := bucket{rate: q.Rate, burst: netlink.Xmitsize(q.Rate, q.Buffer), limit: q.Limit}
	pause := bucket{rate: pauseRate, burst: frame, limit: q.Limit}
	set, err := newTBFSetter(q, frame)
	if err != nil {
		return nil, err
	}
	sock, err := Open(&net.Interface{Index: link.Attrs().Index, Name: ifname})
	if err != nil {
		set.close()
		return nil, err
	}
	h := &Hold{log: log, tbf: set, sock: sock, vector: vector, bps: linkBps, run: run, pause: pause, done: make(chan struct{}),
		kick: make([]byte, wire.PFCFrameLen)}
	var none [wire.PFCClasses]uint16
	wire.PutPFCFrame(h.kick, [6]byte(link.Attrs().HardwareAddr), 0, &none)
	go h.read()
	return h, nil
}

// rootTBF is link's root qdisc, which must be a tbf.
func rootTBF(nl *netlink.Handle, link netlink.Link) (netlink.Tbf, error) {
	qs, err := nl.QdiscList(link)
	if err != nil {
		return netlink.Tbf{}, fmt.Errorf("linkpause: %s's qdiscs: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent != netlink.HANDLE_ROOT {
			continue
		}
		if t, ok := q.(*netlink.Tbf); ok {
			if t.Peakrate != 0 {
				return netlink.Tbf{}, fmt.Errorf("linkpause: %s's tbf has a peak rate, which a hold would lose", link.Attrs().Name)
			}
			return *t, nil
		}
		return netlink.Tbf{}, fmt.Errorf("linkpause: %s's root qdisc is %s, expected tbf (link.shaper: tbf)", link.Attrs().Name, q.Type())
	}
	return netlink.Tbf{}, fmt.Errorf("linkpause: %s has no root qdisc, expected a tbf (link.shaper: tbf)", link.Attrs().Name)
}

// read obeys the frames the socket receives until it is closed.
func (h *Hold) read() {
	defer close(h.done)
	Obey(h.sock.Read, h.vector, h.log, func(q uint16) bool {
		h.obey(time.Duration(wire.PFCPause(q, h.bps)))
		return true
	})
}

// obey pauses the link for d from now, or resumes it for d == 0.
func (h *Hold) obey(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if d == 0 {
		h.resumes++
		h.resume(h.gen)
		return
	}
	h.pauses++
	h.gen++
	if !h.paused {
		if err := h.tbf.set(h.pause); err != nil {
			h.errs++
			h.log.Warn("linkpause: stop the link", "err", err)
			return
		}
		h.paused, h.pausedSince = true, time.Now()
	}
	if h.timer != nil {
		h.timer.Stop()
	}
	gen := h.gen
	h.timer = time.AfterFunc(d, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.resume(gen)
	})
}

// resume sets the bucket back unless a later PAUSE (a newer gen) holds
// the link. h.mu is held.
func (h *Hold) resume(gen uint64) {
	if gen == h.gen {
		h.restart()
	}
}

// restart sets the bucket back if it is stopped. h.mu is held.
func (h *Hold) restart() {
	if !h.paused {
		return
	}
	if err := h.tbf.set(h.run); err != nil {
		h.errs++
		h.log.Warn("linkpause: restart the link", "err", err)
		return
	}
	h.paused = false
	h.pausedNs += uint64(time.Since(h.pausedSince))
	if _, err := h.sock.Write(h.kick); err != nil && !errors.Is(err, os.ErrClosed) {
		h.errs++
		h.log.Warn("linkpause: wake the link's queue", "err", err)
	}
}

// Stats are the hold's counters, named as the engine's RoCE names its
// own: PAUSE frames obeyed, resumes, the time the link stood paused, and
// changes of the qdisc that failed.
func (h *Hold) Stats() map[string]uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	ns := h.pausedNs
	if h.paused {
		ns += uint64(time.Since(h.pausedSince))
	}
	return map[string]uint64{"pfc_pauses_received": h.pauses, "pfc_resumes_received": h.resumes,
		"pfc_paused_us": ns / 1e3, "pfc_hold_errors": h.errs}
}

// Close stops obeying and leaves the link running as it found it.
func (h *Hold) Close() error {
	h.mu.Lock()
	h.closed = true
	if h.timer != nil {
		h.timer.Stop()
	}
	h.gen++ // a timer already running finds itself stale
	h.restart()
	h.mu.Unlock()
	err := h.sock.Close()
	<-h.done
	h.tbf.close()
	return err
}
