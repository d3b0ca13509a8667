package agent

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/internal/hrtime"
	"github.com/homatb/homatb/rundir"
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

// CollectiveStep is what a step message's header says: the phase's id
// (CollectiveID), the iteration, the step and the sender's rank.
type CollectiveStep struct {
	ID               uint32
	Iter, Step, Rank int
}

// CollectiveMessage is a step message of n bytes (at least
// workloads.MinCollectiveMessage) carrying st, asking for a 1-byte
// answer. The simulator sends the same bytes as the agents.
func CollectiveMessage(n int, st CollectiveStep) []byte {
	return stepMessage(n, collMagic, st)
}

// ParseCollectiveMessage reads a request's step header; false for a
// request that is not a step message.
func ParseCollectiveMessage(req []byte) (CollectiveStep, bool) {
	return parseStepMessage(req, collMagic)
}

// stepMessage is an n-byte request asking for a 1-byte answer whose
// header, after magic, carries st's four numbers; connection matrices'
// messages use the same layout under their own magic.
func stepMessage(n int, magic [8]byte, st CollectiveStep) []byte {
	buf := make([]byte, max(n, collHeaderLen))
	binary.BigEndian.PutUint32(buf[0:4], 1)
	copy(buf[4:12], magic[:])
	binary.BigEndian.PutUint32(buf[12:16], st.ID)
	binary.BigEndian.PutUint32(buf[16:20], uint32(st.Iter))
	binary.BigEndian.PutUint32(buf[20:24], uint32(st.Step))
	binary.BigEndian.PutUint16(buf[24:26], uint16(st.Rank))
	return buf
}

func parseStepMessage(req []byte, magic [8]byte) (CollectiveStep, bool) {
	if len(req) < collHeaderLen || [8]byte(req[4:12]) != magic {
		return CollectiveStep{}, false
	}
	return CollectiveStep{ID: binary.BigEndian.Uint32(req[12:16]), Iter: int(binary.BigEndian.Uint32(req[16:20])),
		Step: int(binary.BigEndian.Uint32(req[20:24])), Rank: int(binary.BigEndian.Uint16(req[24:26]))}, true
}

// CollectiveID is the number a phase's step messages carry for it.
func CollectiveID(phase string) uint32 {
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
	// matrix is a connection-matrix phase's, nil for a collective.
	matrix *workloads.Matrix
}

// parseCollective checks the i-th collective of a Configure request
// against the transport's longest message.
func parseCollective(c *agentpb.Collective, i, maxMessage int) (*collSpec, error) {
	f := func(name string) string { return "collectives[" + strconv.Itoa(i) + "]." + name }
	s := &collSpec{
		phase: c.GetPhase(), kind: c.GetKind(), id: CollectiveID(c.GetPhase()),
		targets: c.GetTargets(), hosts: c.GetHosts(), rank: int(c.GetRank()),
		bytes: int(c.GetBytes()), iterations: int(c.GetIterations()),
		compute: time.Duration(c.GetComputeNs()), jitter: time.Duration(c.GetJitterNs()),
		seed: c.GetSeed(), duration: time.Duration(c.GetDurationMs()) * time.Millisecond,
	}
	if s.phase == "" {
		return nil, invalid(f("phase"), "", "expected the phase's name")
	}
	if s.kind == workloads.KindConnectionMatrix {
		return parseMatrixSpec(c, s, f, maxMessage)
	}
	known := false
	for _, k := range workloads.CollectiveKinds {
		known = known || k == s.kind
	}
	if !known {
		return nil, invalid(f("kind"), s.kind, "expected one of %v", workloads.CollectiveKinds)
	}
	n := len(s.targets)
	if err := s.checkMembers(f); err != nil {
		return nil, err
	}
	if s.bytes/n < workloads.MinCollectiveMessage || s.bytes/n > maxMessage {
		return nil, invalid(f("bytes"), s.bytes, "each of the %d members' messages (bytes/%d) must be %d to %d bytes", n, n, workloads.MinCollectiveMessage, maxMessage)
	}
	if s.iterations < 1 {
		return nil, invalid(f("iterations"), s.iterations, "expected at least 1")
	}
	if err := s.setStart(c, f); err != nil {
		return nil, err
	}
	return s, nil
}

// checkMembers checks the members' addresses, names and this host's rank.
func (s *collSpec) checkMembers(f func(string) string) error {
	n := len(s.targets)
	if n < 2 || len(s.hosts) != n {
		return invalid(f("targets"), n, "expected at least 2 members, each with a host name (got %d names)", len(s.hosts))
	}
	for _, t := range s.targets {
		if host, port, err := net.SplitHostPort(t); err != nil || net.ParseIP(host) == nil || port == "" {
			return invalid(f("targets"), t, "expected \"ip:port\"")
		}
	}
	if s.rank >= n {
		return invalid(f("rank"), s.rank, "expected less than the %d members", n)
	}
	return nil
}

// setStart reads the start time: 0 starts at once.
func (s *collSpec) setStart(c *agentpb.Collective, f func(string) string) error {
	if ns := c.GetStartUnixNs(); ns < 0 {
		return invalid(f("start_unix_ns"), ns, "expected a Unix time in ns, or 0 to start at once")
	} else if ns > 0 {
		s.startAt = time.Unix(0, ns)
	}
	return nil
}

// collective runs one host's part in a collective phase. Its loop computes
// then begins an iteration; every later send is started by the arrival of
// the input it depends on (arrived, called by this host's server as the
// message comes in), so no coordinator sits on the critical path. The
// dependencies are workloads.CollectiveRun's, which the simulator runs too.
type collective struct {
	e    *experiment
	spec *collSpec

	mu  sync.Mutex
	run *workloads.CollectiveRun
	// issueCtx and callCtx are loop's: no step is launched once issuing
	// has stopped; nil until loop begins.
	issueCtx, callCtx context.Context
	done              chan struct{} // closed when the current iteration's part is done
}

func newCollective(e *experiment, spec *collSpec) *collective {
	p := workloads.PlanCollective(spec.kind, len(spec.targets), spec.rank, spec.bytes)
	return &collective{e: e, spec: spec, run: workloads.NewCollectiveRun(p)}
}

// arrived is told of every request this host's servers receive; it
// returns false for a request that is not one of this collective's steps.
func (c *collective) arrived(req []byte, at time.Time) bool {
	st, ok := ParseCollectiveMessage(req)
	if !ok || st.ID != c.spec.id {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.launch(c.run.Arrived(st.Iter, st.Step, at.UnixNano()))
	c.checkDone()
	return true
}

// loop computes and begins each iteration in turn, and waits for this
// host's part of it to be done before the next.
func (c *collective) loop(ctx, callCtx context.Context) {
	s := c.spec
	tm, start, ok := s.awaitStart(ctx, c.e.log)
	if !ok {
		return
	}
	defer tm.Close()
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
		c.issueCtx, c.callCtx, c.done = ctx, callCtx, done
		c.launch(c.run.Begin(i, end.UnixNano(), end.Sub(from).Nanoseconds()))
		c.checkDone()
		c.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
		c.mu.Lock()
		_, failed := c.run.Done()
		c.mu.Unlock()
		if failed {
			// A lost step leaves its successors waiting for ever: stop
			// here rather than begin iterations that cannot finish.
			c.e.log.Warn("collective step failed; no further iterations", "phase", s.phase, "iteration", i)
			return
		}
	}
}

// launch books and sends each message; c.mu held. Booking here, before
// the sending goroutine runs, lets a Stop's drain wait for it.
func (c *collective) launch(ls []workloads.CollectiveLaunch) {
	for _, l := range ls {
		if c.issueCtx == nil || c.issueCtx.Err() != nil {
			c.run.Answered(l.Iter, false)
			continue
		}
		buf := CollectiveMessage(l.Bytes, CollectiveStep{ID: c.spec.id, Iter: l.Iter, Step: l.Step, Rank: c.spec.rank})
		r := c.e.book(Record{
			Experiment: c.e.name, Transport: c.e.transport, Phase: rundir.PhaseMeasure, Client: c.e.client,
			Server: c.spec.targets[l.Dest], ServerHost: c.spec.hosts[l.Dest], ReqBytes: int64(l.Bytes),
			IntendedNs: l.Ready, Collective: c.spec.phase, Iteration: int64(l.Iter), Step: int64(l.Step),
			InputNs: l.Input, ComputeNs: l.ComputeNs,
		})
		if r == nil {
			c.run.Answered(l.Iter, false)
			continue
		}
		go c.send(l.Iter, r, buf)
	}
}

// send issues one booked step message and accounts for its answer.
func (c *collective) send(iter int, r *rpcState, buf []byte) {
	_, ok := c.e.send(c.callCtx, r, buf)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.run.Answered(iter, ok)
	c.checkDone()
}

// checkDone ends the current iteration's wait once its part is done;
// c.mu held.
func (c *collective) checkDone() {
	if done, _ := c.run.Done(); done && c.done != nil {
		select {
		case <-c.done:
		default:
			close(c.done)
		}
	}
}

// awaitStart waits for the part's start time (now when it has none) on
// a new issue timer, which the caller closes; false when ctx ended first
// or no timer could be made.
func (s *collSpec) awaitStart(ctx context.Context, log *slog.Logger) (*hrtime.Timer, time.Time, bool) {
	tm, err := issueTimer(ctx)
	if err != nil {
		log.Error("collective", "phase", s.phase, "err", err)
		return nil, time.Time{}, false
	}
	start := s.startAt
	if start.IsZero() {
		start = time.Now()
	}
	if !sleepUntil(ctx, tm, start) {
		tm.Close()
		return nil, time.Time{}, false
	}
	return tm, start, true
}
