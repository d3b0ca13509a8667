package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// A connection matrix's messages have the step messages' layout under
// their own magic; the two numbers after the phase's id say what the
// message is: (matrixFlow, the flow's index in the matrix) or
// (matrixNotify, the trigger id it activates), then the sender's node.
var matrixMagic = [8]byte{'h', 'o', 'm', 'a', 't', 'b', 'C', 'm'}

const (
	matrixFlow   = 0
	matrixNotify = 1
)

// MatrixMessage is a connection matrix's message of n bytes: a flow
// (notify false, num its index in the matrix) or a trigger notification
// (notify true, num the trigger id), sent by node. The simulator sends the
// same bytes as the agents.
func MatrixMessage(n int, id uint32, notify bool, num, node int) []byte {
	kind := matrixFlow
	if notify {
		kind = matrixNotify
	}
	return stepMessage(n, matrixMagic, CollectiveStep{ID: id, Iter: kind, Step: num, Rank: node})
}

// ParseMatrixMessage reads a connection matrix's message header: the
// phase's id, whether it is a trigger notification, and the flow index or
// trigger id; false for a request that is not one.
func ParseMatrixMessage(req []byte) (id uint32, notify bool, num int, ok bool) {
	st, ok := parseStepMessage(req, matrixMagic)
	return st.ID, st.Iter == matrixNotify, st.Step, ok
}

// parseMatrixSpec checks a connection-matrix phase's part: its matrix
// parses, has a node per member and flows the transport carries.
func parseMatrixSpec(c *agentpb.Collective, s *collSpec, f func(string) string, maxMessage int) (*collSpec, error) {
	m, err := workloads.ParseMatrix(c.GetMatrixFile(), c.GetMatrix())
	if err != nil {
		return nil, invalid(f("matrix"), c.GetMatrixFile(), "%v", err)
	}
	if err := s.checkMembers(f); err != nil {
		return nil, err
	}
	if m.Nodes != len(s.targets) {
		return nil, invalid(f("targets"), len(s.targets), "expected one member per node of the matrix's %d", m.Nodes)
	}
	for _, fl := range m.Flows {
		if fl.Size > int64(maxMessage) {
			return nil, invalid(f("matrix"), c.GetMatrixFile(), "%s:%d: flow %d is %d bytes, but the transport carries at most %d", m.File, fl.Line, fl.ID, fl.Size, maxMessage)
		}
	}
	if err := s.setStart(c, f); err != nil {
		return nil, err
	}
	s.matrix = m
	return s, nil
}

// member is a host's part in a collective or a connection matrix: loop
// runs it, arrived is told of every request the host's servers receive
// and returns false for one not its own.
type member interface {
	arrived(req []byte, at time.Time) bool
	loop(ctx, callCtx context.Context)
}

func newMember(e *experiment, spec *collSpec) member {
	if spec.matrix != nil {
		return newMatrixPart(e, spec)
	}
	return newCollective(e, spec)
}

// matrixPart runs one node's flows of a connection matrix. Its loop sends
// the flows with a start time at their times; a flow waiting on a trigger
// starts when the trigger fires at this host. A trigger is activated where
// htsim activates it (send_done at a flow's sender when the flow's answer
// arrives, recv_done at its receiver when the whole flow has arrived) and
// the activation is told to every host with a flow waiting on it: at once
// on the same host, otherwise by a notification message over the
// experiment's transport, so its latency is paid as a real system would.
// Each host counts the activations it hears (workloads.MatrixRun).
type matrixPart struct {
	e    *experiment
	spec *collSpec
	m    *workloads.Matrix

	mu  sync.Mutex
	run *workloads.MatrixRun
	// issueCtx and callCtx are loop's; until loop begins, the flows and
	// notifications due wait in held.
	issueCtx, callCtx context.Context
	held              []func()
	// outstanding counts the flows not yet started and the messages sent
	// and not yet answered; done is closed when it reaches 0.
	outstanding int
	done        chan struct{}
}

func newMatrixPart(e *experiment, spec *collSpec) *matrixPart {
	return &matrixPart{e: e, spec: spec, m: spec.matrix, run: workloads.NewMatrixRun(spec.matrix, spec.rank),
		outstanding: spec.matrix.FlowsOf(spec.rank), done: make(chan struct{})}
}

// arrived is told of every request this host's servers receive.
func (p *matrixPart) arrived(req []byte, at time.Time) bool {
	id, notify, num, ok := ParseMatrixMessage(req)
	if !ok || id != p.spec.id {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if notify {
		p.launch(p.run.Activate(num, at.UnixNano()))
	} else if num >= 0 && num < len(p.m.Flows) {
		p.activate(p.m.Flows[num].RecvDone, at)
	}
	return true
}

// loop sends the flows with a start time at their times, then waits for
// every flow of this host to be started and answered and every
// notification it sent answered.
func (p *matrixPart) loop(ctx, callCtx context.Context) {
	tm, start, ok := p.spec.awaitStart(ctx, p.e.log)
	if !ok {
		return
	}
	defer tm.Close()
	p.mu.Lock()
	p.issueCtx, p.callCtx = ctx, callCtx
	timed := p.run.Start(start.UnixNano())
	for _, h := range p.held {
		h()
	}
	p.held = nil
	p.mu.Unlock()
	slices.SortStableFunc(timed, func(a, b workloads.MatrixLaunch) int { return int(a.Ready - b.Ready) })
	for _, l := range timed {
		if !sleepUntil(ctx, tm, time.Unix(0, l.Ready)) {
			return
		}
		p.mu.Lock()
		p.launch([]workloads.MatrixLaunch{l})
		p.mu.Unlock()
	}
	select {
	case <-p.done:
	case <-ctx.Done():
	}
}

// launch books and sends each flow; p.mu held.
func (p *matrixPart) launch(ls []workloads.MatrixLaunch) {
	for _, l := range ls {
		if p.issueCtx == nil {
			p.held = append(p.held, func() { p.launch([]workloads.MatrixLaunch{l}) })
			continue
		}
		f := p.m.Flows[l.Flow]
		p.outstanding-- // started; counted again while in flight
		p.call(Record{
			Server: p.spec.targets[f.Dst], ServerHost: p.spec.hosts[f.Dst], ReqBytes: int64(max(f.Size, workloads.MinCollectiveMessage)),
			IntendedNs: l.Ready, InputNs: l.Input, Flow: int64(f.ID), Trigger: int64(f.Trigger),
		}, MatrixMessage(int(f.Size), p.spec.id, false, l.Flow, p.spec.rank), func(ok bool, at time.Time) {
			if ok {
				p.activate(f.SendDone, at)
			}
		})
	}
}

// activate tells every host with a flow waiting on trigger k (0: none) of
// one activation at at; p.mu held.
func (p *matrixPart) activate(k int, at time.Time) {
	if k == 0 {
		return
	}
	for _, n := range p.m.TriggerNodes(k) {
		if n == p.spec.rank {
			p.launch(p.run.Activate(k, at.UnixNano()))
			continue
		}
		if p.issueCtx == nil {
			p.held = append(p.held, func() { p.notify(k, n, at) })
			continue
		}
		p.notify(k, n, at)
	}
}

// notify sends node n a notification of one activation of trigger k that
// happened at at; p.mu held.
func (p *matrixPart) notify(k, n int, at time.Time) {
	p.call(Record{
		Server: p.spec.targets[n], ServerHost: p.spec.hosts[n], ReqBytes: workloads.MinCollectiveMessage,
		IntendedNs: at.UnixNano(), InputNs: at.UnixNano(), Trigger: int64(k),
	}, MatrixMessage(workloads.MinCollectiveMessage, p.spec.id, true, k, p.spec.rank), nil)
}

// call books rec as one of the matrix's messages and sends req, calling
// answered (if any) with the outcome and the time of the answer; p.mu
// held. Booking here, before the sending goroutine runs, lets a Stop's
// drain wait for it.
func (p *matrixPart) call(rec Record, req []byte, answered func(ok bool, at time.Time)) {
	if p.issueCtx.Err() != nil {
		return // issuing is over: the loop has ended or is ending
	}
	rec.Experiment, rec.Transport, rec.Phase, rec.Client, rec.Matrix = p.e.name, p.e.transport, rundir.PhaseMeasure, p.e.client, p.spec.phase
	r := p.e.book(rec)
	if r == nil {
		return
	}
	p.outstanding++
	go func() {
		_, ok := p.e.send(p.callCtx, r, req)
		at := time.Now()
		p.mu.Lock()
		defer p.mu.Unlock()
		if answered != nil {
			answered(ok, at)
		}
		p.finish()
	}()
}

// finish counts one thing this host waited for as over; p.mu held.
func (p *matrixPart) finish() {
	p.outstanding--
	if p.outstanding == 0 {
		close(p.done)
	}
}
