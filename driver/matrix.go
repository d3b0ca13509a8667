package driver

import (
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
// (notify true, num the trigger id), sent by node.
func MatrixMessage(n int, id uint32, notify bool, num, node int) []byte {
	return stepMessage(n, matrixMagic, matrixStep(id, notify, num, node))
}

// matrixStep is the header of a matrix message (MatrixMessage).
func matrixStep(id uint32, notify bool, num, node int) CollectiveStep {
	kind := matrixFlow
	if notify {
		kind = matrixNotify
	}
	return CollectiveStep{ID: id, Iter: kind, Step: num, Rank: node}
}

// ParseMatrixMessage reads a connection matrix's message header: the
// phase's id, whether it is a trigger notification, and the flow index or
// trigger id; false for a request that is not one.
func ParseMatrixMessage(req []byte) (id uint32, notify bool, num int, ok bool) {
	st, ok := parseStepMessage(req, matrixMagic)
	return st.ID, st.Iter == matrixNotify, st.Step, ok
}

// matrix runs one node's flows of a connection matrix. Flows with a start
// time go at their times; a flow waiting on a trigger starts when the
// trigger fires at this host. A trigger is activated where htsim activates
// it (send_done at a flow's sender when the flow's answer arrives,
// recv_done at its receiver when the whole flow has arrived) and the
// activation is told to every host with a flow waiting on it: at once on
// the same host, otherwise by a notification message over the
// experiment's transport, so its latency is paid as a real system would.
// Each host counts the activations it hears (workloads.MatrixRun).
type matrix struct {
	h    *Host
	spec *CollectiveSpec
	m    *workloads.Matrix
	run  *workloads.MatrixRun
	// waiting counts the host's flows not yet answered; the part issues
	// while it is above 0.
	waiting int
	// started is set at the part's start; what comes due before it (an
	// early notification) waits in held.
	started bool
	held    []func()
	pending []Event
}

func newMatrix(h *Host, s *CollectiveSpec) *matrix {
	return &matrix{h: h, spec: s, m: s.Matrix, run: workloads.NewMatrixRun(s.Matrix, s.Rank), waiting: s.Matrix.FlowsOf(s.Rank)}
}

// start begins the part at its start time, each flow with a start time at
// its time.
func (p *matrix) start() {
	h := p.h
	if p.waiting == 0 {
		return
	}
	h.issuing++
	at := p.spec.StartNs
	if at == 0 {
		at = h.sched.Now()
	}
	p.pending = append(p.pending, h.sched.At(at, func() {
		p.started = true
		for _, l := range p.run.Start(h.sched.Now()) {
			p.pending = append(p.pending, h.sched.At(l.Ready, func() { p.launchFlows([]workloads.MatrixLaunch{l}) }))
		}
		for _, f := range p.held {
			f()
		}
		p.held = nil
	}))
}

func (p *matrix) stop() {
	for _, e := range p.pending {
		e.Cancel()
	}
	p.pending = nil
}

// arrived is told of a flow or notification of this part's that arrived
// whole at at.
func (p *matrix) arrived(notify bool, num int, at int64) {
	if notify {
		p.launchFlows(p.run.Activate(num, at))
	} else if num >= 0 && num < len(p.m.Flows) {
		p.activate(p.m.Flows[num].RecvDone, at)
	}
}

// launchFlows sends and books each flow; its answer activates its
// send_done trigger.
func (p *matrix) launchFlows(ls []workloads.MatrixLaunch) {
	h := p.h
	if h.stopped || len(ls) == 0 {
		return
	}
	if !p.started {
		p.held = append(p.held, func() { p.launchFlows(ls) })
		return
	}
	for _, l := range ls {
		f := p.m.Flows[l.Flow]
		row := &rundir.RPC{Phase: rundir.PhaseMeasure, ReqBytes: max(f.Size, workloads.MinCollectiveMessage),
			IntendedNs: l.Ready, InputNs: l.Input, Matrix: p.spec.Phase, Flow: int64(f.ID), Trigger: int64(f.Trigger)}
		req := h.stepMessage(int(f.Size), matrixMagic, matrixStep(p.spec.ID, false, l.Flow, p.spec.Rank))
		h.call(row, p.spec.Targets[f.Dst], req, func(ok bool) {
			if ok {
				p.activate(f.SendDone, h.sched.Now())
			}
			if p.waiting--; p.waiting == 0 {
				h.issuing--
			}
		})
	}
}

// activate tells every part with a flow waiting on trigger k (0: none) of
// one activation at this host at at: its own at once, the others by a
// notification message.
func (p *matrix) activate(k int, at int64) {
	h := p.h
	if k == 0 || h.stopped {
		return
	}
	if !p.started {
		p.held = append(p.held, func() { p.activate(k, at) })
		return
	}
	for _, n := range p.m.TriggerNodes(k) {
		if n == p.spec.Rank {
			p.launchFlows(p.run.Activate(k, at))
			continue
		}
		row := &rundir.RPC{Phase: rundir.PhaseMeasure, ReqBytes: workloads.MinCollectiveMessage,
			IntendedNs: at, InputNs: at, Matrix: p.spec.Phase, Trigger: int64(k)}
		req := h.stepMessage(workloads.MinCollectiveMessage, matrixMagic, matrixStep(p.spec.ID, true, k, p.spec.Rank))
		h.call(row, p.spec.Targets[n], req, nil)
	}
}
