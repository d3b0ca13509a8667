package simulate

import (
	"fmt"
	"net/netip"

	"github.com/homatb/homatb/hostagent/agent"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// simMatrix is one host's part in a connection matrix, as its agent runs
// it (hostagent/agent/matrix.go): the same workloads.MatrixRun, messages,
// trigger notifications and records, on the simulator's clock.
type simMatrix struct {
	host    string
	node    int
	spec    *agentpb.Collective
	id      uint32
	m       *workloads.Matrix
	run     *workloads.MatrixRun
	targets []netip.AddrPort
	// waiting counts the host's flows not yet answered; the job issues
	// while it is above 0.
	waiting int
}

func newSimMatrix(host string, c *agentpb.Collective, targets []netip.AddrPort) (*simMatrix, error) {
	m, err := workloads.ParseMatrix(c.GetMatrixFile(), c.GetMatrix())
	if err != nil {
		return nil, fmt.Errorf("%s: phase %s: %w", host, c.GetPhase(), err)
	}
	if m.Nodes != len(targets) {
		return nil, fmt.Errorf("%s: phase %s: %d nodes but %d hosts", host, c.GetPhase(), m.Nodes, len(targets))
	}
	node := int(c.GetRank())
	return &simMatrix{host: host, node: node, spec: c, id: agent.CollectiveID(c.GetPhase()), m: m,
		run: workloads.NewMatrixRun(m, node), targets: targets, waiting: m.FlowsOf(node)}, nil
}

// startMatrices starts every part at the measurement's start plus its
// offset, each flow with a start time at its time.
func (j *job) startMatrices(start int64) {
	clock := j.net.Clock()
	for _, sm := range j.mats {
		if sm.waiting == 0 {
			continue
		}
		j.issuing++
		clock.At(start+sm.spec.GetStartUnixNs(), func() {
			now := j.unixNow()
			for _, l := range sm.run.Start(now) {
				clock.At(clock.Now()+l.Ready-now, func() { j.launchFlows(sm, []workloads.MatrixLaunch{l}) })
			}
		})
	}
}

// matrixArrived tells host's part of a matrix of a flow or notification
// that has arrived whole.
func (j *job) matrixArrived(host string, req []byte) {
	id, notify, num, ok := agent.ParseMatrixMessage(req)
	if !ok {
		return
	}
	for _, sm := range j.mats {
		if sm.host != host || sm.id != id {
			continue
		}
		now := j.unixNow()
		if notify {
			j.launchFlows(sm, sm.run.Activate(num, now))
		} else if num >= 0 && num < len(sm.m.Flows) {
			j.activate(sm, sm.m.Flows[num].RecvDone, now)
		}
		return
	}
}

// launchFlows sends each flow and books it as the agent would; its
// answer activates its send_done trigger.
func (j *job) launchFlows(sm *simMatrix, ls []workloads.MatrixLaunch) {
	if j.closed {
		return
	}
	for _, l := range ls {
		f := sm.m.Flows[l.Flow]
		row := rundir.RPC{Experiment: j.name, Transport: j.transport, Phase: rundir.PhaseMeasure, Client: sm.host,
			Server: sm.targets[f.Dst].String(), ServerHost: sm.spec.GetHosts()[f.Dst], ReqBytes: max(f.Size, workloads.MinCollectiveMessage),
			IntendedNs: l.Ready, InputNs: l.Input, Matrix: sm.spec.GetPhase(), Flow: int64(f.ID), Trigger: int64(f.Trigger)}
		j.send(j.net.Node(sm.host), row, sm.targets[f.Dst], agent.MatrixMessage(int(f.Size), sm.id, false, l.Flow, sm.node), func(ok bool) {
			if ok {
				j.activate(sm, f.SendDone, j.unixNow())
			}
			if sm.waiting--; sm.waiting == 0 {
				j.issuing--
			}
		})
	}
}

// activate tells every part with a flow waiting on trigger k (0: none) of
// one activation at sm's host at at: its own at once, the others by a
// notification message.
func (j *job) activate(sm *simMatrix, k int, at int64) {
	if k == 0 || j.closed {
		return
	}
	for _, n := range sm.m.TriggerNodes(k) {
		if n == sm.node {
			j.launchFlows(sm, sm.run.Activate(k, at))
			continue
		}
		row := rundir.RPC{Experiment: j.name, Transport: j.transport, Phase: rundir.PhaseMeasure, Client: sm.host,
			Server: sm.targets[n].String(), ServerHost: sm.spec.GetHosts()[n], ReqBytes: workloads.MinCollectiveMessage,
			IntendedNs: at, InputNs: at, Matrix: sm.spec.GetPhase(), Trigger: int64(k)}
		j.send(j.net.Node(sm.host), row, sm.targets[n], agent.MatrixMessage(workloads.MinCollectiveMessage, sm.id, true, k, sm.node), func(bool) {})
	}
}
