package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/internal/hrtime"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// experiment is one configured client workload and its books. Every
// issued RPC is in exactly one of: outstanding, completed, failed, and at
// Stop the outstanding ones are recorded as in flight.
type experiment struct {
	name, transport, phase, client string
	spec                           *clientSpec
	tr                             Transport
	rec                            *recordWriter
	conns                          *connSampler // TCP clients' connections over time; nil for others
	log                            *slog.Logger
	req                            []byte // shared request bytes
	colls                          []member

	issued, completed, failed, inflight atomic.Uint64
	slotWaits                           atomic.Uint64

	mu          sync.Mutex
	closedBooks bool
	outstanding map[*rpcState]struct{}
	failures    map[string]uint64
	lag         *hdrhistogram.Histogram // send lag, microseconds
	rtt         *hdrhistogram.Histogram // RTT of completed non-warmup RPCs, microseconds

	stopIssue   context.CancelFunc
	cancelCalls context.CancelFunc
	issuing     chan struct{} // closed when no more RPCs will be issued
	stopOnce    sync.Once
	stopErr     error
}

type rpcState struct {
	rec  Record
	sent time.Time // rec.SentNs with the monotonic clock
}

// lagMaxUs bounds the lag histogram (one minute); longer lags saturate.
const lagMaxUs = 60_000_000

func newExperiment(name, transport, phase, client string, spec *clientSpec, tr Transport, rec *recordWriter, log *slog.Logger) *experiment {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &experiment{
		name: name, transport: transport, phase: phase, client: client,
		spec: spec, tr: tr, rec: rec, log: log,
		outstanding: map[*rpcState]struct{}{},
		failures:    map[string]uint64{},
		lag:         hdrhistogram.New(1, lagMaxUs, 3),
		rtt:         hdrhistogram.New(1, lagMaxUs, 3),
		issuing:     make(chan struct{}),
	}
	if spec != nil {
		e.req = RequestBuffer(spec.sizes.Max(), spec.respBytes)
	}
	return e
}

// start begins issuing; ctx bounds the whole experiment. Issuing is over
// when the client workload and every collective have stopped.
func (e *experiment) start(ctx context.Context) {
	issueCtx, stopIssue := context.WithCancel(ctx)
	callCtx, cancelCalls := context.WithCancel(ctx)
	e.stopIssue, e.cancelCalls = stopIssue, cancelCalls
	go func() {
		defer close(e.issuing)
		var wg sync.WaitGroup
		if e.spec != nil {
			wg.Go(func() {
				start := e.spec.startAt
				if start.IsZero() {
					start = time.Now()
				}
				if e.spec.closed {
					e.runClosed(issueCtx, callCtx, start)
				} else {
					e.runOpen(issueCtx, callCtx, start)
				}
			})
		}
		for _, c := range e.colls {
			wg.Go(func() { c.loop(issueCtx, callCtx) })
		}
		wg.Wait()
	}()
}

// runOpen issues RPCs at the intended times of an open-loop schedule. When
// the agent falls behind it still issues every RPC, late, and the lag is
// recorded; max_outstanding, if set, holds issuing back and counts it.
func (e *experiment) runOpen(ctx, callCtx context.Context, start time.Time) {
	s := e.spec
	var sched workloads.Schedule
	if s.burstInterval > 0 {
		b, err := workloads.NewBursts(s.burstInterval, s.burstJitter)
		if err != nil {
			e.log.Error("burst schedule", "err", err)
			return
		}
		sched = b
	} else {
		p, err := workloads.NewPoisson(s.rate)
		if err != nil {
			e.log.Error("poisson schedule", "err", err)
			return
		}
		sched = p
	}
	tm, err := issueTimer(ctx)
	if err != nil {
		e.log.Error("open loop", "err", err)
		return
	}
	defer tm.Close()
	var slots chan struct{}
	if s.maxOutstanding > 0 {
		slots = make(chan struct{}, s.maxOutstanding)
	}
	draws := workloads.NewOpenLoop(s.seed, sched, s.sizes, len(s.targets))
	// RPC goroutines are not waited for: issuing is over when the loop is,
	// and Stop accounts for whatever is still outstanding.
	for n := uint64(0); s.maxRPCs == 0 || n < s.maxRPCs; n++ {
		off, size, ti := draws.Next()
		if s.duration > 0 && off >= s.duration {
			return
		}
		intended := start.Add(off)
		if !sleepUntil(ctx, tm, intended) {
			return
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			default:
				e.slotWaits.Add(1)
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
		target := s.targets[ti]
		phase := e.phaseAt(off)
		go func() {
			e.call(callCtx, intended, size, target, phase)
			if slots != nil {
				<-slots
			}
		}()
	}
}

// runClosed keeps max_outstanding RPCs in flight: each worker issues the
// next RPC when its previous one completes. Intended equals actual send
// time here: a closed loop has no schedule to fall behind.
func (e *experiment) runClosed(ctx, callCtx context.Context, start time.Time) {
	s := e.spec
	tm, err := issueTimer(ctx)
	if err != nil {
		e.log.Error("closed loop", "err", err)
		return
	}
	defer tm.Close()
	if !sleepUntil(ctx, tm, start) {
		return
	}
	var n atomic.Uint64
	var wg sync.WaitGroup
	for w := range s.maxOutstanding {
		wg.Go(func() {
			draws := workloads.NewClosedLoop(s.seed, w, s.sizes, len(s.targets))
			for ctx.Err() == nil {
				if s.maxRPCs > 0 && n.Add(1) > s.maxRPCs {
					return
				}
				now := time.Now()
				off := now.Sub(start)
				if s.duration > 0 && off >= s.duration {
					return
				}
				size, ti := draws.Next()
				e.call(callCtx, now, size, s.targets[ti], e.phaseAt(off))
			}
		})
	}
	// Issuing is over when every worker is done or Stop was asked; workers
	// blocked in a call are then Stop's to account for.
	allDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(allDone)
	}()
	select {
	case <-allDone:
	case <-ctx.Done():
	}
}

// sinceSent places a transport's time t on the record's clock: sent_ns
// plus the monotonic time from sent to t, so a wall clock stepped or
// slewed during the run cannot reorder them; 0 for an unknown t.
func sinceSent(sent, t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return sent.UnixNano() + t.Sub(sent).Nanoseconds()
}

func (e *experiment) phaseAt(off time.Duration) string {
	if off < e.spec.warmup {
		return rundir.PhaseWarmup
	}
	return e.phase
}

// call issues one RPC and books it.
func (e *experiment) call(ctx context.Context, intended time.Time, size int, target, phase string) {
	e.issue(ctx, Record{
		Experiment: e.name, Transport: e.transport, Phase: phase, Client: e.client, Server: target,
		ReqBytes: int64(size), IntendedNs: intended.UnixNano(),
	}, e.req[:size])
}

// issue sends req as one RPC described by rec (its sent, done and
// transport fields filled here), books it and writes its record. It
// reports whether the RPC completed, and when.
func (e *experiment) issue(ctx context.Context, rec Record, req []byte) (time.Time, bool) {
	r := e.book(rec)
	if r == nil {
		return time.Time{}, false
	}
	return e.send(ctx, r, req)
}

// book counts an RPC as issued and outstanding, sent now; nil once the
// books are closed.
func (e *experiment) book(rec Record) *rpcState {
	sent := time.Now()
	rec.SentNs = sent.UnixNano()
	r := &rpcState{rec: rec, sent: sent}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closedBooks {
		return nil
	}
	e.issued.Add(1)
	e.outstanding[r] = struct{}{}
	e.lag.RecordValue(min(max((rec.SentNs-rec.IntendedNs)/1000, 0), lagMaxUs))
	return r
}

// send issues a booked RPC and records how it ended.
func (e *experiment) send(ctx context.Context, r *rpcState, req []byte) (time.Time, bool) {
	rec, sent := r.rec, r.sent
	res, err := e.tr.Call(ctx, rec.Server, req)
	done := time.Now()

	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.outstanding[r]; !ok {
		return time.Time{}, false // already recorded as in flight at Stop
	}
	delete(e.outstanding, r)
	r.rec.Retries = int64(res.Retries)
	r.rec.ReqOutNs, r.rec.FirstRespNs = sinceSent(sent, res.RequestOut), sinceSent(sent, res.FirstResponse)
	r.rec.RecoveryFromNs = sinceSent(sent, res.RecoveryFrom)
	r.rec.GrantsIn, r.rec.GrantsOut = int64(res.GrantsIn), int64(res.GrantsOut)
	r.rec.RPCID = res.ID
	if res.Local.IsValid() {
		r.rec.Local = res.Local.String()
	}
	r.rec.ReqOffset, r.rec.RespOffset = res.ReqOffset, res.RespOffset
	if err != nil {
		r.rec.Status, r.rec.Error, r.rec.Reason = StatusFailed, err.Error(), failureReason(err)
		e.failures[r.rec.Reason]++
		e.failed.Add(1)
	} else {
		r.rec.Status, r.rec.RespBytes, r.rec.DoneNs = StatusCompleted, int64(res.RespBytes), done.UnixNano()
		e.completed.Add(1)
		if rec.Phase != rundir.PhaseWarmup {
			e.rtt.RecordValue(min(max((r.rec.DoneNs-rec.IntendedNs)/1000, 1), lagMaxUs))
		}
	}
	// Under mu, so Stop cannot close the writer between the check and here.
	e.rec.Write(r.rec)
	return done, err == nil
}

// stop ends issuing, gives outstanding RPCs drain to finish, records the
// rest as in flight and closes the records file. It is idempotent.
func (e *experiment) stop(drain time.Duration) error {
	e.stopOnce.Do(func() {
		if e.stopIssue == nil { // never started
			e.stopIssue, e.cancelCalls = func() {}, func() {}
			close(e.issuing)
		}
		e.stopIssue()
		<-e.issuing
		deadline := time.Now().Add(drain)
		for e.outstandingCount() > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		e.mu.Lock()
		e.closedBooks = true
		for r := range e.outstanding {
			r.rec.Status = StatusInflight
			if e.rec != nil {
				e.rec.Write(r.rec)
			}
			e.inflight.Add(1)
		}
		clear(e.outstanding)
		e.mu.Unlock()
		e.cancelCalls()
		if e.rec != nil {
			e.stopErr = e.rec.Close()
		}
		if e.conns != nil {
			e.stopErr = errors.Join(e.stopErr, e.conns.Close())
		}
	})
	return e.stopErr
}

func (e *experiment) outstandingCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.outstanding)
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
	c := counters{
		issued:    e.issued.Load(),
		completed: e.completed.Load(),
		failed:    e.failed.Load(),
		failures:  make(map[string]uint64, len(e.failures)),
		slotWaits: e.slotWaits.Load(),
	}
	// Counted, not derived from the others, so that issued = completed +
	// failed + in flight is a check on the books rather than an identity.
	c.inFlight = e.inflight.Load() + uint64(len(e.outstanding))
	for k, v := range e.failures {
		c.failures[k] = v
	}
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

// spinWindow is how close to an intended time the issuer stops sleeping
// and yields instead: even a timerfd wake-up on an idle vCPU is late by
// tens of microseconds, so the last stretch is waited out on the CPU.
const spinWindow = 50 * time.Microsecond

// issueTimer is the timer an issuing loop sleeps on: an hrtime.Timer,
// because a Go timer rounds sub-millisecond waits up to a millisecond on an
// idle host and that lag would land in every open-loop RPC's latency. It is
// closed when ctx ends, which wakes a sleeping issuer.
func issueTimer(ctx context.Context) (*hrtime.Timer, error) {
	tm, err := hrtime.NewTimer()
	if err != nil {
		return nil, fmt.Errorf("agent: issue timer: %w", err)
	}
	context.AfterFunc(ctx, func() { tm.Close() })
	return tm, nil
}

// sleepUntil waits for t on tm; false if ctx ended first.
func sleepUntil(ctx context.Context, tm *hrtime.Timer, t time.Time) bool {
	if d := time.Until(t) - spinWindow; d > 0 {
		if tm.Sleep(d) != nil {
			return false
		}
	}
	for time.Now().Before(t) {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return ctx.Err() == nil
}
