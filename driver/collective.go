package driver

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"

	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/workloads"
)

// Application header: the first 4 bytes of every request carry the
// response length the client wants (big endian, 0 = echo the request's
// length), as cp_node's short_response bit does. Requests shorter than the
// header are always echoed.
const appHeaderLen = 4

// RequestBuffer returns a read-only request buffer of maxLen bytes asking
// for respBytes in the reply; an RPC of n bytes sends its first n bytes.
func RequestBuffer(maxLen int, respBytes uint32) []byte {
	b := make([]byte, max(maxLen, appHeaderLen))
	binary.BigEndian.PutUint32(b, respBytes)
	return b
}

// ResponseLength is the response length req asks for: its first four
// bytes, or its own length (an echo) when they are zero or it is shorter.
func ResponseLength(req []byte) int { return ResponseLengthOf(req, len(req)) }

// ResponseLengthOf is ResponseLength of a request of length bytes of
// which head holds the first ones (all of them, or at least the
// application header's), as a simulator that keeps only a message's
// first bytes hands it over.
func ResponseLengthOf(head []byte, length int) int {
	if length >= appHeaderLen && len(head) >= appHeaderLen {
		if want := binary.BigEndian.Uint32(head); want > 0 {
			return int(want)
		}
	}
	return length
}

// A collective's step message starts with the application header (the
// response length, 1 byte: an acknowledgement) and then StepHeaderLen-4
// bytes that tell the receiving host which input has arrived:
//
//	[4:12]  collMagic
//	[12:16] the phase's id (CollectiveID)
//	[16:20] iteration
//	[20:24] step
//	[24:26] the sender's rank
//
// Ordinary requests carry zeros there, so they never match.
const StepHeaderLen = 26

var collMagic = [8]byte{'h', 'o', 'm', 'a', 't', 'b', 'C', 'o'}

// CollectiveStep is what a step message's header says: the phase's id
// (CollectiveID), the iteration, the step and the sender's rank.
type CollectiveStep struct {
	ID               uint32
	Iter, Step, Rank int
}

// CollectiveMessage is a step message of n bytes (at least
// workloads.MinCollectiveMessage) carrying st, asking for a 1-byte
// answer.
func CollectiveMessage(n int, st CollectiveStep) []byte {
	return stepMessage(n, collMagic, st)
}

// ParseCollectiveMessage reads a request's step header; false for a
// request that is not a step message.
func ParseCollectiveMessage(req []byte) (CollectiveStep, bool) {
	return parseStepMessage(req, collMagic)
}

// IsStepMessage reports whether req is a collective's or a connection
// matrix's message, which Host.Arrived wants to hear of.
func IsStepMessage(req []byte) bool {
	if len(req) < StepHeaderLen {
		return false
	}
	m := [8]byte(req[4:12])
	return m == collMagic || m == matrixMagic
}

// stepMessage is an n-byte request asking for a 1-byte answer whose
// header, after magic, carries st's four numbers; connection matrices'
// messages use the same layout under their own magic.
func stepMessage(n int, magic [8]byte, st CollectiveStep) []byte {
	return putStepHeader(make([]byte, max(n, StepHeaderLen)), magic, st)
}

// BufferLender is a Transport that lends the buffers of the step messages
// (collectives' and matrices' requests) it is given: the simulator's,
// whose endpoints copy a message's first bytes when they take it and
// carry its length only, lends one buffer to every host instead of one
// allocated per message.
type BufferLender interface {
	// LendBuffer returns n bytes, zero past the step header, to be filled
	// and passed to Call at once; nil when it lends none.
	LendBuffer(n int) []byte
}

// stepMessage is stepMessage in a buffer the host's transport lends, if
// it does.
func (h *Host) stepMessage(n int, magic [8]byte, st CollectiveStep) []byte {
	if l, ok := h.tr.(BufferLender); ok {
		if b := l.LendBuffer(max(n, StepHeaderLen)); b != nil {
			return putStepHeader(b, magic, st)
		}
	}
	return stepMessage(n, magic, st)
}

// putStepHeader writes the step header (the application header, magic and
// st's four numbers) into buf's first StepHeaderLen bytes.
func putStepHeader(buf []byte, magic [8]byte, st CollectiveStep) []byte {
	binary.BigEndian.PutUint32(buf[0:4], 1)
	copy(buf[4:12], magic[:])
	binary.BigEndian.PutUint32(buf[12:16], st.ID)
	binary.BigEndian.PutUint32(buf[16:20], uint32(st.Iter))
	binary.BigEndian.PutUint32(buf[20:24], uint32(st.Step))
	binary.BigEndian.PutUint16(buf[24:26], uint16(st.Rank))
	return buf
}

func parseStepMessage(req []byte, magic [8]byte) (CollectiveStep, bool) {
	if len(req) < StepHeaderLen || [8]byte(req[4:12]) != magic {
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

// collective runs one host's part in a collective phase: it computes,
// then begins an iteration; every later send is started by the arrival of
// the input it depends on, so no coordinator sits on the critical path.
// The dependencies are workloads.CollectiveRun's.
type collective struct {
	h    *Host
	spec *CollectiveSpec
	run  *workloads.CollectiveRun
	rng  *rand.Rand
	iter int
	// begun is when the first iteration began; computing is set while an
	// iteration's compute is scheduled (pending), so an iteration is begun
	// once however many events see the last one done.
	begun     int64
	computing bool
	pending   Event
}

func newCollective(h *Host, s *CollectiveSpec) *collective {
	p := workloads.PlanCollective(s.Kind, len(s.Targets), s.Rank, s.Bytes)
	p.SetWindow(s.Window)
	return &collective{h: h, spec: s, run: workloads.NewCollectiveRun(p), rng: rand.New(rand.NewPCG(s.Seed, uint64(s.Rank)))}
}

func (c *collective) start() {
	h := c.h
	h.issuing++
	at := c.spec.StartNs
	if at == 0 {
		at = h.sched.Now()
	}
	c.pending = h.sched.At(at, func() {
		c.begun = h.sched.Now()
		c.compute()
	})
}

func (c *collective) stop() {
	if c.pending != nil {
		c.pending.Cancel()
	}
}

// compute schedules the next iteration after its compute, or ends the
// part once its iterations are done or its duration is over.
func (c *collective) compute() {
	h, s := c.h, c.spec
	now := h.sched.Now()
	if h.stopped || c.iter >= s.Iterations || (s.Duration > 0 && now-c.begun >= s.Duration.Nanoseconds()) {
		h.issuing--
		return
	}
	d := s.Compute.Nanoseconds()
	if s.Jitter > 0 {
		d += c.rng.Int64N(s.Jitter.Nanoseconds())
	}
	c.computing = true
	c.pending = h.sched.At(now+d, func() {
		c.computing = false
		c.launch(c.run.Begin(c.iter, h.sched.Now(), d))
		c.checkDone()
	})
}

// arrived is told of a step message of this part's that arrived at at.
func (c *collective) arrived(st CollectiveStep, at int64) {
	c.launch(c.run.Arrived(st.Iter, st.Step, at))
	c.checkDone()
}

// launch sends and books each step message.
func (c *collective) launch(ls []workloads.CollectiveLaunch) {
	for _, l := range ls {
		req := c.h.stepMessage(l.Bytes, collMagic, CollectiveStep{ID: c.spec.ID, Iter: l.Iter, Step: l.Step, Rank: c.spec.Rank})
		row := &rundir.RPC{Phase: rundir.PhaseMeasure, ReqBytes: int64(l.Bytes), IntendedNs: l.Ready,
			Collective: c.spec.Phase, Iteration: int64(l.Iter), Step: int64(l.Step), InputNs: l.Input, ComputeNs: l.ComputeNs}
		iter := l.Iter // the callback keeps this, not all of l (one allocation less a message)
		sent := c.h.call(row, c.spec.Targets[l.Dest], req, func(ok bool) {
			c.launch(c.run.Answered(iter, ok, c.h.sched.Now()))
			c.checkDone()
		})
		if !sent {
			c.launch(c.run.Answered(l.Iter, false, c.h.sched.Now()))
		}
	}
}

// checkDone begins the next iteration once this part of the current one
// is done; a failed step ends the part: a lost step leaves its successors
// waiting for ever.
func (c *collective) checkDone() {
	done, failed := c.run.Done()
	if !done || c.computing || c.iter > c.run.Iter() {
		return
	}
	c.iter++
	if failed {
		c.h.log.Warn("collective step failed; no further iterations", "phase", c.spec.Phase, "iteration", c.iter-1)
		c.h.issuing--
		return
	}
	c.compute()
}
