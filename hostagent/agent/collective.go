package agent

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/runfmt"
	"github.com/homatb/homatb/workloads"
)

// A collective's step message starts with the application header (the
// response length, 1 byte: an acknowledgement) and then collHeaderLen-4
// bytes that tell the receiving agent which input has arrived:
//
//	[4:12]  collMagic
//	[12:16] the phase's id (collectiveID)
//	[16:20] iteration
//	[20:24] step
//	[24:26] the sender's rank
//
// Ordinary requests carry zeros there, so they never match.
const (
	collHeaderLen = 26
)

var collMagic = [8]byte{'h', 'o', 'm', 'a', 't', 'b', 'C', 'o'}

// collectiveID is the number a phase's step messages carry for it.
func collectiveID(phase string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(phase))
	return h.Sum32()
}

// collSpec is a validated agentpb.Collective.
type collSpec struct {
	phase, kind    string
	id             uint32
	targets, hosts []string
	rank           int
	bytes          int
	iterations     int
	compute        time.Duration
	jitter         time.Duration
	seed           uint64
	startAt        time.Time
	duration       time.Duration
}

// parseCollective checks the i-th collective of a Configure request
// against the transport's longest message.
func parseCollective(c *agentpb.Collective, i, maxMessage int) (*collSpec, error) {
	f := func(name string) string { return "collectives[" + strconv.Itoa(i) + "]." + name }
	s := &collSpec{
		phase: c.GetPhase(), kind: c.GetKind(), id: collectiveID(c.GetPhase()),
		targets: c.GetTargets(), hosts: c.GetHosts(), rank: int(c.GetRank()),
		bytes: int(c.GetBytes()), iterations: int(c.GetIterations()),
		compute: time.Duration(c.GetComputeNs()), jitter: time.Duration(c.GetJitterNs()),
		seed: c.GetSeed(), duration: time.Duration(c.GetDurationMs()) * time.Millisecond,
	}
	if s.phase == "" {
		return nil, invalid(f("phase"), "", "expected the phase's name")
	}
	known := false
	for _, k := range workloads.CollectiveKinds {
		known = known || k == s.kind
	}
	if !known {
		return nil, invalid(f("kind"), s.kind, "expected one of %v", workloads.CollectiveKinds)
	}
	n := len(s.targets)
	if n < 2 || len(s.hosts) != n {
		return nil, invalid(f("targets"), n, "expected at least 2 members, each with a host name (got %d names)", len(s.hosts))
	}
	for _, t := range s.targets {
		if host, port, err := net.SplitHostPort(t); err != nil || net.ParseIP(host) == nil || port == "" {
			return nil, invalid(f("targets"), t, "expected \"ip:port\"")
		}
	}
	if s.rank >= n {
		return nil, invalid(f("rank"), s.rank, "expected less than the %d members", n)
	}
	if s.bytes/n < workloads.MinCollectiveMessage || s.bytes/n > maxMessage {
		return nil, invalid(f("bytes"), s.bytes, "each of the %d members' messages (bytes/%d) must be %d to %d bytes", n, n, workloads.MinCollectiveMessage, maxMessage)
	}
	if s.iterations < 1 {
		return nil, invalid(f("iterations"), s.iterations, "expected at least 1")
	}
	if ns := c.GetStartUnixNs(); ns < 0 {
		return nil, invalid(f("start_unix_ns"), ns, "expected a Unix time in ns, or 0 to start at once")
	} else if ns > 0 {
		s.startAt = time.Unix(0, ns)
	}
	return s, nil
}

// stepKey names one step of one iteration.
type stepKey struct{ iter, step int }

// arrivals counts a step's inputs at this host and when the last came.
type arrivals struct {
	n    int
	last time.Time
}

// collective runs one host's part in a collective phase. Its loop computes
// then starts an iteration; every later send is started by the arrival of
// the input it depends on (arrived, called by this host's server as the
// message comes in), so no coordinator sits on the critical path.
type collective struct {
	e    *experiment
	spec *collSpec
	plan workloads.CollectivePlan

	mu sync.Mutex
	// issueCtx and callCtx are run's: no step is launched once issuing
	// has stopped; nil until run begins.
	issueCtx, callCtx context.Context
	in                map[stepKey]*arrivals
	iter              int // the iteration being run, -1 before the first
	started           bool
	// computeEnd and computeNs describe the current iteration's compute.
	computeEnd time.Time
	computeNs  int64
	launched   []bool // by index in plan.sends, current iteration
	pending    int    // sends of the current iteration not yet answered
	failed     bool
	done       chan struct{} // closed when the current iteration's part is done
}

func newCollective(e *experiment, spec *collSpec) *collective {
	p := workloads.PlanCollective(spec.kind, len(spec.targets), spec.rank, spec.bytes)
	return &collective{e: e, spec: spec, plan: p, in: map[stepKey]*arrivals{}, iter: -1}
}

// arrived is told of every request this host's servers receive; it
// returns false for a request that is not one of this collective's steps.
func (c *collective) arrived(req []byte, at time.Time) bool {
	if len(req) < collHeaderLen || [8]byte(req[4:12]) != collMagic || binary.BigEndian.Uint32(req[12:16]) != c.spec.id {
		return false
	}
	k := stepKey{int(binary.BigEndian.Uint32(req[16:20])), int(binary.BigEndian.Uint32(req[20:24]))}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.in[k]
	if a == nil {
		a = &arrivals{}
		c.in[k] = a
	}
	a.n++
	a.last = at
	if k.iter == c.iter && c.started {
		c.launchReady()
		c.checkDone()
	}
	return true
}

// run computes and starts each iteration in turn, and waits for this
// host's part of it to be done before the next.
func (c *collective) run(ctx, callCtx context.Context) {
	s := c.spec
	tm, err := issueTimer(ctx)
	if err != nil {
		c.e.log.Error("collective", "phase", s.phase, "err", err)
		return
	}
	defer tm.Close()
	start := s.startAt
	if start.IsZero() {
		start = time.Now()
	}
	if !sleepUntil(ctx, tm, start) {
		return
	}
	rng := rand.New(rand.NewPCG(s.seed, uint64(s.rank)))
	for i := range s.iterations {
		if s.duration > 0 && time.Since(start) >= s.duration {
			return
		}
		from := time.Now()
		d := s.compute
		if s.jitter > 0 {
			d += time.Duration(rng.Int64N(int64(s.jitter)))
		}
		if !sleepUntil(ctx, tm, from.Add(d)) {
			return
		}
		end := time.Now()
		done := make(chan struct{})
		c.mu.Lock()
		for k := range c.in {
			if k.iter < i {
				delete(c.in, k) // inputs of an iteration given up on
			}
		}
		c.issueCtx, c.callCtx = ctx, callCtx
		c.iter, c.started, c.computeEnd, c.computeNs = i, true, end, end.Sub(from).Nanoseconds()
		c.launched, c.pending, c.failed, c.done = make([]bool, len(c.plan.Sends)), 0, false, done
		c.launchReady()
		c.checkDone()
		c.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
		c.mu.Lock()
		failed := c.failed
		c.mu.Unlock()
		if failed {
			// A lost step leaves its successors waiting for ever: stop
			// here rather than start iterations that cannot finish.
			c.e.log.Warn("collective step failed; no further iterations", "phase", s.phase, "iteration", i)
			return
		}
	}
}

// launchReady starts every send of the current iteration whose inputs are
// all here; c.mu held.
func (c *collective) launchReady() {
	if c.issueCtx.Err() != nil {
		return
	}
	for i, s := range c.plan.Sends {
		if c.launched[i] {
			continue
		}
		ready := c.computeEnd
		var input time.Time
		if s.Dep >= 0 {
			a := c.in[stepKey{c.iter, s.Dep}]
			if a == nil || a.n < s.Deps {
				continue
			}
			input = a.last
			if input.After(ready) {
				ready = input
			}
		}
		c.launched[i] = true
		compute := int64(0)
		if s.Dep < 0 || i == 0 {
			compute = c.computeNs
		}
		for _, d := range s.Dests {
			buf := c.message(c.iter, s)
			// Booked here, under c.mu, so that a Stop's drain waits for it.
			r := c.e.book(Record{
				Experiment: c.e.name, Transport: c.e.transport, Phase: runfmt.PhaseMeasure, Client: c.e.client,
				Server: c.spec.targets[d], ServerHost: c.spec.hosts[d], ReqBytes: int64(s.Bytes),
				IntendedNs: ready.UnixNano(), Collective: c.spec.phase, Iteration: int64(c.iter), Step: int64(s.Step),
				InputNs: unixOrZero(input), ComputeNs: compute,
			})
			if r == nil {
				return
			}
			c.pending++
			go c.send(c.iter, r, buf)
		}
	}
}

// message is a step's request: a buffer of its own, as the header differs
// by step and a transport may still read a request after a later step is
// sent.
func (c *collective) message(iter int, s workloads.CollectiveSend) []byte {
	buf := make([]byte, s.Bytes)
	binary.BigEndian.PutUint32(buf[0:4], 1)
	copy(buf[4:12], collMagic[:])
	binary.BigEndian.PutUint32(buf[12:16], c.spec.id)
	binary.BigEndian.PutUint32(buf[16:20], uint32(iter))
	binary.BigEndian.PutUint32(buf[20:24], uint32(s.Step))
	binary.BigEndian.PutUint16(buf[24:26], uint16(c.spec.rank))
	return buf
}

// send issues one booked step message and accounts for its answer.
func (c *collective) send(iter int, r *rpcState, buf []byte) {
	_, ok := c.e.send(c.callCtx, r, buf)
	c.mu.Lock()
	defer c.mu.Unlock()
	if iter != c.iter {
		return
	}
	c.pending--
	if !ok {
		c.failed = true
		c.closeDone()
		return
	}
	c.checkDone()
}

// checkDone ends the current iteration's wait once every send is answered
// and every expected input has arrived; c.mu held.
func (c *collective) checkDone() {
	if !c.started || c.pending > 0 {
		return
	}
	for _, l := range c.launched {
		if !l {
			return
		}
	}
	for step, n := range c.plan.Expect {
		if a := c.in[stepKey{c.iter, step}]; a == nil || a.n < n {
			return
		}
	}
	c.closeDone()
}

func (c *collective) closeDone() {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
}
