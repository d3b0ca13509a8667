package dataplane

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// pollPort is a Port that a poller can read without blocking and wait on
// together with other ports (AFPacket is one).
type pollPort interface {
	TryRecv(bufs [][]byte, sizes []int) (int, error)
	Fd() int
}

// poller receives on every port from one goroutine, for Spin: it keeps
// polling all sockets for Spin after the last frame before it sleeps, so
// one vCPU stays awake for the whole switch rather than one per port, and
// a reply arriving on another port is seen at once. It sleeps on an epoll
// set of all port sockets, itself parked in Go's netpoller.
type poller struct {
	f      *os.File
	rc     syscall.RawConn
	events [8]unix.EpollEvent
	readFn func(fd uintptr) bool
	ports  []pollPort
	rx     []*rxState
}

// newPoller returns nil when Spin is off or a port cannot be polled.
func (d *Dataplane) newPoller() (*poller, error) {
	if d.cfg.Spin <= 0 {
		return nil, nil
	}
	pp := make([]pollPort, len(d.ports))
	for i, ps := range d.ports {
		var ok bool
		if pp[i], ok = ps.io.(pollPort); !ok {
			d.log.Warn("spin needs pollable ports; receiving per port instead", "port", ps.num)
			return nil, nil
		}
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("dataplane: epoll: %w", err)
	}
	for _, p := range pp {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(p.Fd())}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, p.Fd(), &ev); err != nil {
			unix.Close(epfd)
			return nil, fmt.Errorf("dataplane: epoll: %w", err)
		}
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("dataplane: epoll: %w", err)
	}
	pl := &poller{f: os.NewFile(uintptr(epfd), "epoll"), ports: pp}
	if pl.rc, err = pl.f.SyscallConn(); err != nil {
		pl.f.Close()
		return nil, fmt.Errorf("dataplane: epoll: %w", err)
	}
	pl.readFn = pl.ready
	for _, ps := range d.ports {
		pl.rx = append(pl.rx, newRxState(ps, d.cfg.BatchSize))
	}
	return pl, nil
}

// ready reports whether a port socket has frames; false parks.
func (pl *poller) ready(fd uintptr) bool {
	for {
		n, err := unix.EpollWait(int(fd), pl.events[:], 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}

func (pl *poller) close() error { return pl.f.Close() }

// pollReceive is the receive loop of every port in spin mode.
func (d *Dataplane) pollReceive(ctx context.Context, pl *poller) error {
	defer func() {
		for _, rs := range pl.rx {
			rs.release()
		}
	}()
	spin := int64(d.cfg.Spin)
	last := d.now()
	for {
		got := false
		for i, ps := range d.ports {
			rs := pl.rx[i]
			n, err := pl.ports[i].TryRecv(rs.bufs, rs.sizes)
			if err != nil {
				if closed(ctx, err) {
					return nil
				}
				return fmt.Errorf("dataplane: port %d: %w", ps.num, err)
			}
			if n > 0 {
				got = true
				if err := d.ingest(ps, rs, n); err != nil && !closed(ctx, err) {
					return err
				}
			}
		}
		now := d.now()
		if got {
			last = now
			continue
		}
		if now-last < spin {
			// Let the schedulers and the admin server run on a
			// single P; the netpoller is not consulted meanwhile,
			// which is why one goroutine polls every port.
			runtime.Gosched()
			continue
		}
		if err := pl.rc.Read(pl.readFn); err != nil {
			if closed(ctx, err) {
				return nil
			}
			return fmt.Errorf("dataplane: epoll wait: %w", err)
		}
		last = d.now()
	}
}
