package simulate

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/homatb/homatb/hostagent/agent"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/workloads"
)

// simColl is one host's part in a collective, as its agent would run it:
// the same workloads.CollectiveRun, the same step messages and records,
// on the simulator's clock.
type simColl struct {
	host    string
	spec    *agentpb.Collective
	id      uint32
	run     *workloads.CollectiveRun
	rng     *rand.Rand
	targets []netip.AddrPort
	iter    int
	// begun is the virtual time of the first iteration; computing is set
	// while an iteration's compute is scheduled, so an iteration is begun
	// once however many events see the last one done.
	begun     int64
	computing bool
}

// collectivesOf are the hosts' parts in the experiment's collectives, in
// the layout's order.
func collectivesOf(ro agents.Roles) ([]*simColl, []*simMatrix, error) {
	var out []*simColl
	var mats []*simMatrix
	for _, host := range ro.Used {
		for _, c := range ro.Collectives[host] {
			var targets []netip.AddrPort
			for _, t := range c.GetTargets() {
				ap, err := netip.ParseAddrPort(t)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: collective %s: target %q: %w", host, c.GetPhase(), t, err)
				}
				targets = append(targets, ap)
			}
			if c.GetKind() == workloads.KindConnectionMatrix {
				sm, err := newSimMatrix(host, c, targets)
				if err != nil {
					return nil, nil, err
				}
				mats = append(mats, sm)
				continue
			}
			out = append(out, &simColl{host: host, spec: c, id: agent.CollectiveID(c.GetPhase()), targets: targets,
				run: workloads.NewCollectiveRun(workloads.PlanCollective(c.GetKind(), len(c.GetTargets()), int(c.GetRank()), int(c.GetBytes()))),
				rng: rand.New(rand.NewPCG(c.GetSeed(), uint64(c.GetRank())))})
		}
	}
	return out, mats, nil
}

// startCollectives begins every part at the measurement's start (the
// collective's start_unix_ns is the offset from start here, as PlanRoles
// is given 0) and routes the servers' requests to them.
func (j *job) startCollectives(start int64) {
	if len(j.colls) == 0 && len(j.mats) == 0 {
		return
	}
	j.startMatrices(start)
	byHost := map[string][]*simColl{}
	for _, c := range j.colls {
		byHost[c.host] = append(byHost[c.host], c)
		j.issuing++
		at := start + c.spec.GetStartUnixNs()
		j.net.Clock().At(at, func() {
			c.begun = j.net.Clock().Now()
			j.compute(c)
		})
	}
	j.arrived = func(host string, req []byte) {
		st, ok := agent.ParseCollectiveMessage(req)
		if !ok {
			j.matrixArrived(host, req)
			return
		}
		for _, c := range byHost[host] {
			if c.id == st.ID {
				j.launch(c, c.run.Arrived(st.Iter, st.Step, j.unixNow()))
				j.checkDone(c)
				return
			}
		}
	}
}

func (j *job) unixNow() int64 { return j.epoch.Add(time.Duration(j.net.Clock().Now())).UnixNano() }

// compute schedules c's next iteration after its compute, or ends c once
// its iterations are done or the measurement is over.
func (j *job) compute(c *simColl) {
	clock := j.net.Clock()
	if j.closed || c.iter >= int(c.spec.GetIterations()) ||
		(c.spec.GetDurationMs() > 0 && clock.Now()-c.begun >= int64(c.spec.GetDurationMs())*int64(time.Millisecond)) {
		j.issuing--
		return
	}
	d := int64(c.spec.GetComputeNs())
	if jit := int64(c.spec.GetJitterNs()); jit > 0 {
		d += c.rng.Int64N(jit)
	}
	c.computing = true
	clock.At(clock.Now()+d, func() {
		c.computing = false
		j.launch(c, c.run.Begin(c.iter, j.unixNow(), d))
		j.checkDone(c)
	})
}

// launch sends each step message and books it as the agent would.
func (j *job) launch(c *simColl, ls []workloads.CollectiveLaunch) {
	node := j.net.Node(c.host)
	for _, l := range ls {
		req := agent.CollectiveMessage(l.Bytes, agent.CollectiveStep{ID: c.id, Iter: l.Iter, Step: l.Step, Rank: int(c.spec.GetRank())})
		row := rundir.RPC{Experiment: j.name, Transport: j.transport, Phase: rundir.PhaseMeasure, Client: c.host,
			Server: c.targets[l.Dest].String(), ServerHost: c.spec.GetHosts()[l.Dest], ReqBytes: int64(l.Bytes),
			IntendedNs: l.Ready, Collective: c.spec.GetPhase(), Iteration: int64(l.Iter), Step: int64(l.Step),
			InputNs: l.Input, ComputeNs: l.ComputeNs}
		j.send(node, row, c.targets[l.Dest], req, func(ok bool) {
			c.run.Answered(l.Iter, ok)
			j.checkDone(c)
		})
	}
}

// checkDone begins c's next iteration once its part of this one is done;
// a failed step ends c, as it ends an agent's.
func (j *job) checkDone(c *simColl) {
	done, failed := c.run.Done()
	if !done || c.computing || c.iter > c.run.Iter() {
		return
	}
	c.iter++
	if failed {
		j.issuing--
		return
	}
	j.compute(c)
}
