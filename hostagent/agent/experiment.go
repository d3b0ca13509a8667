package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/rundir"
)

// experiment is one configured workload on this host: the shared drivers
// and books (driver.Run) on the host's clock, sending through the agent's
// transports (one, or in a shared experiment two, each with its own
// drivers); the books write the records in the order issued. Every issued
// RPC is in exactly one of: open, completed, failed, and at Stop the open
// ones are recorded as in flight.
type experiment struct {
	name, host string
	// rec is set before Start: by newExperiment, or by the Configure that
	// adds the first client.
	rec   *rundir.CSVStream[rundir.RPC]
	conns *connSampler // TCP clients' connections over time; nil for others

	clock *driver.HostClock
	run   *driver.Run
	// callCtx bounds every call; cancelled once the books are closed.
	callCtx     context.Context
	cancelCalls context.CancelFunc

	stopOnce sync.Once
	stopErr  error
}

// newExperiment prepares experiment name on host on a host clock of its
// own, whose loop runs until stop; ctx bounds every call. Its workloads
// come with add.
func newExperiment(ctx context.Context, name, host string, rec *rundir.CSVStream[rundir.RPC]) (*experiment, error) {
	clock, err := driver.NewHostClock()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	e := &experiment{name: name, host: host, rec: rec, clock: clock}
	e.run = driver.NewRun(clock, true, func(row *rundir.RPC) {
		if e.rec != nil {
			e.rec.Write(*row)
		}
	})
	e.callCtx, e.cancelCalls = context.WithCancel(ctx)
	go clock.Run()
	return e, nil
}

// add adds cfg's workload, sending through tr, before Start.
func (e *experiment) add(cfg driver.Config, tr Transport) {
	e.run.Add(cfg, caller{e, tr})
}

// start begins issuing.
func (e *experiment) start() { e.run.Start() }

// arrived tells the drivers on transport of a request this host's
// servers received, if it is a collective's or matrix's message.
func (e *experiment) arrived(transport string, req []byte) {
	if !driver.IsStepMessage(req) {
		return
	}
	at := e.clock.Now()
	hdr := append([]byte(nil), req[:driver.StepHeaderLen]...)
	e.clock.At(at, func() { e.run.Arrived(e.host, transport, hdr, at) })
}

// caller is the experiment's driver.Transport on one of its transports.
type caller struct {
	e  *experiment
	tr Transport
}

// Call sends one RPC on its own goroutine, as the agent's transports
// block, and hands its end to the clock's loop.
func (c caller) Call(row *rundir.RPC, t driver.Target, req []byte, end func(driver.Result)) {
	e := c.e
	sent := time.Now()
	go func() {
		res, err := c.tr.Call(e.callCtx, t.Name, req)
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

// stop ends issuing, gives open RPCs drain to finish, records the rest as
// in flight and closes the records file. It is idempotent.
func (e *experiment) stop(drain time.Duration) error {
	e.stopOnce.Do(func() {
		e.run.Stop(time.Now().Add(drain).UnixNano())
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

// snapshot is the host's counters as the books stand.
func (e *experiment) snapshot() *agentpb.Counters { return e.run.Counters(e.host) }

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
