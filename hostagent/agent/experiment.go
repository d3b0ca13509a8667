package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/rundir"
)

// experiment is one configured workload on this host: the shared drivers
// (package driver) on the host's clock, sending through the agent's
// Transport, and their books (driver.Books), which write the records in
// the order issued. Every issued RPC is in exactly one of: open,
// completed, failed, and at Stop the open ones are recorded as in flight.
type experiment struct {
	name  string
	tr    Transport
	rec   *recordWriter
	conns *connSampler // TCP clients' connections over time; nil for others
	log   *slog.Logger

	clock *driver.HostClock
	host  *driver.Host
	// callCtx bounds every call; cancelled once the books are closed.
	callCtx     context.Context
	cancelCalls context.CancelFunc

	mu    sync.Mutex
	books *driver.Books
	lag   *hdrhistogram.Histogram // send lag, microseconds
	rtt   *hdrhistogram.Histogram // RTT of completed non-warmup RPCs, microseconds

	stopOnce sync.Once
	stopErr  error
}

// lagMaxUs bounds the lag histogram (one minute); longer lags saturate.
const lagMaxUs = 60_000_000

// newExperiment prepares cfg's workload on a host clock of its own, whose
// loop runs until stop; ctx bounds every call.
func newExperiment(ctx context.Context, cfg driver.Config, tr Transport, rec *recordWriter) (*experiment, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	clock, err := driver.NewHostClock()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	e := &experiment{
		name: cfg.Experiment, tr: tr, rec: rec, log: cfg.Log, clock: clock,
		lag: hdrhistogram.New(1, lagMaxUs, 3),
		rtt: hdrhistogram.New(1, lagMaxUs, 3),
	}
	e.books = driver.NewBooks(func(row *rundir.RPC) {
		if rec != nil {
			rec.Write(*row)
		}
	})
	e.callCtx, e.cancelCalls = context.WithCancel(ctx)
	e.host = driver.NewHost(cfg, clock, e, e)
	go clock.Run()
	return e, nil
}

// start begins issuing.
func (e *experiment) start() { e.clock.Do(e.host.Start) }

// arrived tells the drivers of a request this host's servers received,
// if it is a collective's or matrix's message.
func (e *experiment) arrived(req []byte) {
	if !driver.IsStepMessage(req) {
		return
	}
	at := e.clock.Now()
	hdr := append([]byte(nil), req[:driver.StepHeaderLen]...)
	e.clock.At(at, func() { e.host.Arrived(hdr, at) })
}

// Call sends one RPC on its own goroutine, as the agent's transports
// block, and hands its end to the clock's loop (driver.Transport).
func (e *experiment) Call(row *rundir.RPC, t driver.Target, req []byte, end func(driver.Result)) {
	sent := time.Now()
	go func() {
		res, err := e.tr.Call(e.callCtx, t.Name, req)
		done := time.Now()
		r := driver.Result{Err: err, ID: res.ID, Retries: int64(res.Retries), ReqOffset: res.ReqOffset, RespOffset: res.RespOffset,
			GrantsIn: int64(res.GrantsIn), GrantsOut: int64(res.GrantsOut), RespBytes: int64(res.RespBytes), DoneNs: done.UnixNano(),
			ReqOutNs: sinceSent(sent, res.RequestOut), FirstRespNs: sinceSent(sent, res.FirstResponse),
			RecoveryFromNs: sinceSent(sent, res.RecoveryFrom)}
		if res.Local.IsValid() {
			r.Local = res.Local.String()
		}
		if err != nil {
			r.Reason = failureReason(err)
		}
		e.clock.At(done.UnixNano(), func() { end(r) })
	}()
}

// sinceSent places a transport's time t on the record's clock: sent's
// Unix time plus the monotonic time from sent to t, so a wall clock
// stepped or slewed during the run cannot reorder them; 0 for an unknown
// t.
func sinceSent(sent, t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return sent.UnixNano() + t.Sub(sent).Nanoseconds()
}

// Issued books an RPC as issued and open (driver.Sink).
func (e *experiment) Issued(row *rundir.RPC) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.books.Issued(row)
	e.lag.RecordValue(min(max((row.SentNs-row.IntendedNs)/1000, 0), lagMaxUs))
}

// Ended books a completed or failed RPC.
func (e *experiment) Ended(row *rundir.RPC) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.books.Ended(row)
	if row.Status == rundir.StatusCompleted && row.Phase != rundir.PhaseWarmup {
		e.rtt.RecordValue(min(max((row.DoneNs-row.IntendedNs)/1000, 1), lagMaxUs))
	}
}

// InFlight books an RPC open when the books closed.
func (e *experiment) InFlight(row *rundir.RPC) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.books.InFlight(row)
}

// stop ends issuing, gives open RPCs drain to finish, records the rest as
// in flight and closes the records file. It is idempotent.
func (e *experiment) stop(drain time.Duration) error {
	e.stopOnce.Do(func() {
		e.clock.Do(e.host.StopIssuing)
		for deadline := time.Now().Add(drain); e.openCount() > 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		e.clock.Do(e.host.Close)
		e.mu.Lock()
		e.books.Close()
		e.mu.Unlock()
		e.cancelCalls()
		e.clock.Close()
		if e.rec != nil {
			e.stopErr = e.rec.Close()
		}
		if e.conns != nil {
			e.stopErr = errors.Join(e.stopErr, e.conns.Close())
		}
	})
	return e.stopErr
}

func (e *experiment) openCount() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.books.Open()
}

// counters is a snapshot of the books.
type counters struct {
	issued, completed, failed, inFlight uint64
	lagP50, lagP99, lagMax              float64
	rttP50, rttP99, rttMax              float64
	failures                            map[string]uint64
	slotWaits                           uint64
}

func (e *experiment) snapshot() counters {
	e.mu.Lock()
	defer e.mu.Unlock()
	// Counted, not derived from the others, so that issued = completed +
	// failed + in flight is a check on the books rather than an identity.
	b := e.books.Count
	c := counters{issued: b.Issued, completed: b.Completed, failed: b.Failed, inFlight: b.InFlight + e.books.Open(),
		failures: maps.Clone(e.books.Failures), slotWaits: e.host.SlotWaits()}
	if e.lag.TotalCount() > 0 {
		c.lagP50 = float64(e.lag.ValueAtQuantile(50))
		c.lagP99 = float64(e.lag.ValueAtQuantile(99))
		c.lagMax = float64(e.lag.Max())
	}
	if e.rtt.TotalCount() > 0 {
		c.rttP50 = float64(e.rtt.ValueAtQuantile(50))
		c.rttP99 = float64(e.rtt.ValueAtQuantile(99))
		c.rttMax = float64(e.rtt.Max())
	}
	return c
}

// failureReason groups errors into a few stable names for the counters and
// the records' reason column.
func failureReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, net.ErrClosed):
		return "closed"
	case errors.Is(err, ErrUnsupported):
		return "unsupported"
	}
	if r := homa.Reason(err); r != "error" {
		return r // timeout, peer_unknown, aborted, closed, too_large
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:] // the innermost cause, without addresses
	}
	if len(msg) > 40 {
		msg = msg[:40]
	}
	return msg
}
