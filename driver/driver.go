// Package driver holds the workload drivers, written once: open-loop
// (Poisson, incast bursts) and closed-loop clients, a host's part in a
// collective and in a connection matrix, and the books of every RPC they
// issue. They are event-driven code on a Scheduler: the host agent runs
// them on the host's clock (HostClock), the simulator on its event heap,
// each handing them a Transport to send with, as both run the same
// engine; a Run holds a process's hosts and their books.
package driver

import (
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/homatb/homatb/rundir"
)

// Scheduler runs a driver's events one at a time on one clock. Every
// driver method is called from an event (or before the first one runs),
// never from two goroutines at once.
type Scheduler interface {
	// Now is the clock's time in Unix ns.
	Now() int64
	// At runs fn at t; a t already past runs after the events due before
	// it. The Event cancels it.
	At(t int64, fn func()) Event
}

// Event is a scheduled function that has not run yet.
type Event interface {
	// Cancel keeps the function from running; it does nothing once it has.
	Cancel()
}

// Target is one server of a client or member of a collective.
type Target struct {
	Addr netip.AddrPort
	// Name is Addr as records write it ("ip:port").
	Name string
	// Host is the server's host name when known, "" when records name it
	// later (the orchestrator fills server_host from the address).
	Host string
}

// Result is how a transport's RPC ended: Err nil for a completed one.
type Result struct {
	Err error
	// Reason is Err's short name for the records' reason column.
	Reason string
	ID     uint64
	// Local is the client's address of the RPC, "" when unknown.
	Local                 string
	Retries               int64
	ReqOffset, RespOffset int64
	GrantsIn, GrantsOut   int64
	RespBytes             int64
	// Times in Unix ns, 0 when unknown.
	ReqOutNs, FirstRespNs, RecoveryFromNs, DoneNs int64
}

// Transport sends a host's RPCs.
type Transport interface {
	// Call sends req to target as one RPC (or one-way message) described
	// by row, whose SentNs is set; it may fill what it knows at once (the
	// local address) and calls end once, from an event, when the RPC has
	// ended. req is shared and read-only.
	Call(row *rundir.RPC, target Target, req []byte, end func(Result))
}

// Config is one host's workload in one experiment.
type Config struct {
	Experiment, Transport, Phase, Host string
	Client                             *ClientSpec
	// Collectives are the host's parts in collectives and connection
	// matrices.
	Collectives []*CollectiveSpec
	Log         *slog.Logger
}

// Host runs one host's workload: its client, its parts in collectives and
// matrices, and their books. Every issued RPC is open until it ends or the
// books close.
type Host struct {
	cfg   Config
	sched Scheduler
	tr    Transport
	books hostBooks
	log   *slog.Logger

	client *client
	colls  []*collective
	mats   []*matrix

	open map[*rundir.RPC]struct{}
	// issuing counts the parts (client loops, collectives, matrices) that
	// may still issue; stopped ends their schedules, closed the books.
	issuing         int
	stopped, closed bool
	slotWaits       atomic.Uint64
}

// newHost prepares cfg's workload on sched, booked in books; Run.Start
// begins it.
func newHost(cfg Config, sched Scheduler, tr Transport, books hostBooks) *Host {
	h := &Host{cfg: cfg, sched: sched, tr: tr, books: books, log: cfg.Log, open: map[*rundir.RPC]struct{}{}}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Client != nil {
		h.client = &client{h: h, spec: cfg.Client}
	}
	for _, c := range cfg.Collectives {
		if c.Matrix != nil {
			h.mats = append(h.mats, newMatrix(h, c))
		} else {
			h.colls = append(h.colls, newCollective(h, c))
		}
	}
	return h
}

// Arrived tells the host's collectives and matrices of a request its
// server received whole at at; false for a request that is none of
// theirs.
func (h *Host) Arrived(req []byte, at int64) bool {
	if st, ok := ParseCollectiveMessage(req); ok {
		for _, c := range h.colls {
			if c.spec.ID == st.ID {
				c.arrived(st, at)
				return true
			}
		}
		return false
	}
	id, notify, num, ok := ParseMatrixMessage(req)
	if !ok {
		return false
	}
	for _, m := range h.mats {
		if m.spec.ID == id {
			m.arrived(notify, num, at)
			return true
		}
	}
	return false
}

// StopIssuing ends every schedule: no new arrival, iteration or timed
// flow. RPCs already due and waiting for a slot under max_outstanding
// still go as slots free, until Close.
func (h *Host) StopIssuing() {
	h.stopped = true
	if h.client != nil {
		h.client.stop()
	}
	for _, c := range h.colls {
		c.stop()
	}
	for _, m := range h.mats {
		m.stop()
	}
}

// Busy reports whether a part may still issue or an RPC is open.
func (h *Host) Busy() bool { return (h.issuing > 0 && !h.stopped) || len(h.open) > 0 }

// Open is the number of RPCs issued and not yet ended.
func (h *Host) Open() int { return len(h.open) }

// SlotWaits counts the arrivals that found max_outstanding RPCs out and
// waited for a slot; it may be read from any goroutine.
func (h *Host) SlotWaits() uint64 { return h.slotWaits.Load() }

// Close closes the books: every open RPC goes to the sink as in flight,
// and whatever ends later is ignored.
func (h *Host) Close() {
	if h.closed {
		return
	}
	h.StopIssuing()
	h.closed = true
	for row := range h.open {
		row.Status = rundir.StatusInflight
		h.books.InFlight(row)
	}
	clear(h.open)
}

// call sends req to t as the RPC row describes, sent now, books it and
// runs then (if any) once it has ended, told whether it completed. It
// returns false, sending nothing, once the books are closed.
func (h *Host) call(row *rundir.RPC, t Target, req []byte, then func(ok bool)) bool {
	if h.closed {
		return false
	}
	row.Experiment, row.Transport, row.Client = h.cfg.Experiment, h.cfg.Transport, h.cfg.Host
	row.Server = t.Name
	if row.ServerHost == "" {
		row.ServerHost = t.Host
	}
	row.SentNs = h.sched.Now()
	h.open[row] = struct{}{}
	h.books.Issued(row)
	h.tr.Call(row, t, req, func(res Result) {
		if h.closed {
			return
		}
		delete(h.open, row)
		fill(row, res)
		h.books.Ended(row)
		if then != nil {
			then(res.Err == nil)
		}
	})
	return true
}

// fill writes how an RPC ended into its row.
func fill(row *rundir.RPC, res Result) {
	row.RPCID, row.Retries = res.ID, res.Retries
	if res.Local != "" {
		row.Local = res.Local
	}
	row.ReqOffset, row.RespOffset = res.ReqOffset, res.RespOffset
	row.ReqOutNs, row.FirstRespNs, row.RecoveryFromNs = res.ReqOutNs, res.FirstRespNs, res.RecoveryFromNs
	row.GrantsIn, row.GrantsOut = res.GrantsIn, res.GrantsOut
	if res.Err != nil {
		row.Status, row.Error, row.Reason = rundir.StatusFailed, res.Err.Error(), res.Reason
		return
	}
	row.Status, row.RespBytes, row.DoneNs = rundir.StatusCompleted, res.RespBytes, res.DoneNs
}

// UnixNs is t in Unix ns as records write times: 0 for the zero time, an
// unknown one.
func UnixNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// phaseAt is the phase of an RPC due off into the client's run: warm-up
// first.
func (h *Host) phaseAt(off int64) string {
	if off < h.client.spec.Warmup.Nanoseconds() {
		return rundir.PhaseWarmup
	}
	return h.cfg.Phase
}
