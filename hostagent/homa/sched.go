package homa

import (
	"cmp"
	"net/netip"
	"slices"
	"time"
)

// msgIn is an inbound message as the receiver and its grant scheduler see it.
type msgIn struct {
	buf      []byte // grown with the bytes that arrive (growIn), up to Endpoint.keep
	size     uint32 // the buffer's length as charged: len(buf) unless past keep
	held     uint64 // bytes charged for the message while incomplete
	length   uint32
	got      rangeSet
	received uint32 // bytes arrived (each counted once)
	granted  uint32 // bytes the sender may send: unscheduled or granted
	// fifoOwed is the part of granted-but-unreceived bytes that FIFO
	// grants gave, counted as the last to arrive; it stays out of the
	// SRPT headroom, so unanswered FIFO grants cannot stall SRPT grants.
	fifoOwed uint32
	// unschedOnly: the sender needs no grants (all of it unscheduled);
	// like Linux (RPC_GRANTABLE unset) its bytes do not count against
	// max_incoming.
	unschedOnly bool
	// wholeAsked is the end of the last gap asked for whole this round.
	wholeAsked uint32
	prio       uint8 // priority of the last grant
	birth      time.Duration
	peer       netip.Addr
	rpc        *rpc
	tracked    bool   // known to the scheduler
	started    bool   // first packet seen
	credited   bool   // in the pHost/NDP credit queue
	pulls      uint32 // NDP: arrivals not yet answered by a PULL
	pullSeq    uint32 // NDP: PULLs sent for the message
	nackOwed   uint32 // NDP: NACKed packets whose PULL has not gone yet
}

func (m *msgIn) remaining() uint32 { return m.length - m.received }

// grant is one GRANT decision of the scheduler.
type grant struct {
	m      *msgIn
	offset uint32
	prio   uint8
	fifo   bool
}

// schedParams are the scheduler's inputs from Config.
type schedParams struct {
	overcommit   int
	window       uint32 // 0: maxIncoming/(active+1)
	maxIncoming  uint32
	basic        bool
	basicWindow  uint32
	fifoPermille int
	fifoBytes    uint32
	packet       uint32 // grants are rounded up to whole packets
	increment    uint32 // smallest grant that is not the message's last
	highPrio     uint8  // priority of FIFO grants
	boostTail    uint32 // Config.BoostTail: UnschedBytes, else 0
}

// grantSched is the receiver's grant scheduler (homa_grant.c): it ranks
// inbound messages by fewest bytes remaining (SRPT, ties to the oldest),
// keeps at most overcommit of them active (one per sender first), grants
// each active message up to its window within the global max_incoming
// headroom, assigns scheduled priorities by rank on the lowest levels, and
// diverts a FIFO share of granted bytes to the oldest message. It is pure
// state plus arithmetic, so tests drive it without a network or a clock.
type grantSched struct {
	p            schedParams
	maxSchedPrio int
	// cut and prios are the receiver's own unscheduled cutoffs, for grants
	// boosted to an unscheduled level (schedParams.boostTail).
	cut        *cutoffTable
	prios      int
	msgs       []*msgIn // every incomplete inbound message
	order      []*msgIn // scratch: grantable messages by rank
	active     []*msgIn // scratch: the active set by rank
	out        []grant  // scratch: decisions of the last schedule
	fifoCredit int64
	srptBytes  uint64 // bytes granted by SRPT, for the FIFO share
	fifoBytes  uint64
}

func (s *grantSched) add(m *msgIn) {
	if !m.tracked {
		m.tracked = true
		s.msgs = append(s.msgs, m)
	}
}

func (s *grantSched) remove(m *msgIn) {
	if !m.tracked {
		return
	}
	m.tracked = false
	if i := slices.Index(s.msgs, m); i >= 0 {
		last := len(s.msgs) - 1
		s.msgs[i] = s.msgs[last]
		s.msgs[last] = nil
		s.msgs = s.msgs[:last]
	}
}

// compareRank orders messages by SRPT: fewest bytes remaining, then oldest.
func compareRank(a, b *msgIn) int {
	if c := cmp.Compare(a.remaining(), b.remaining()); c != 0 {
		return c
	}
	return cmp.Compare(a.birth, b.birth)
}

// incoming is the total of granted-but-unreceived bytes over all messages.
func (s *grantSched) incoming() uint32 {
	var n uint32
	for _, m := range s.msgs {
		n += m.incoming()
	}
	return n
}

// srptIncoming is incoming without the bytes FIFO grants still owe and
// without messages that need no grants: what the SRPT grants count
// against max_incoming.
func (s *grantSched) srptIncoming() uint32 {
	var n uint32
	for _, m := range s.msgs {
		if m.unschedOnly {
			continue
		}
		in := m.incoming()
		m.fifoOwed = min(m.fifoOwed, in)
		n += in - m.fifoOwed
	}
	return n
}

// incoming is m's granted-but-unreceived bytes.
func (m *msgIn) incoming() uint32 {
	if m.granted > m.received {
		return m.granted - m.received
	}
	return 0
}

// numActive reports the size of the active set chosen by the last schedule.
func (s *grantSched) numActive() int { return len(s.active) }

// schedule recomputes the active set and returns the grants to send now.
// The returned slice is reused by the next call.
func (s *grantSched) schedule() []grant {
	s.out = s.out[:0]
	s.order = s.order[:0]
	for _, m := range s.msgs {
		if m.granted < m.length {
			s.order = append(s.order, m)
		}
	}
	slices.SortFunc(s.order, compareRank)
	s.pickActive()
	headroom := int64(s.p.maxIncoming) - int64(s.srptIncoming())
	window := s.window()
	for rank, m := range s.active {
		prio := s.priority(rank, len(s.active))
		if left := m.length - m.granted; left < s.p.boostTail {
			prio = max(prio, unschedPriority(&s.cut.cut, s.prios, left))
		}
		target := min(m.length, roundUp(m.received+window, s.p.packet))
		if target <= m.granted {
			continue
		}
		inc := int64(target - m.granted)
		if !s.p.basic && inc > headroom {
			inc = headroom
		}
		// Skip grants smaller than the increment (at least a packet) unless
		// they finish the message: each costs a control packet.
		if inc <= 0 || (inc < int64(max(s.p.packet, s.p.increment)) && m.granted+uint32(inc) < m.length) {
			continue
		}
		m.granted += uint32(inc)
		m.prio = prio
		headroom -= inc
		s.srptBytes += uint64(inc)
		s.fifoCredit += inc * int64(s.p.fifoPermille) / int64(1000-s.p.fifoPermille)
		s.out = append(s.out, grant{m: m, offset: m.granted, prio: prio})
	}
	s.fifoGrant(window)
	return s.out
}

// window is the grant window of each active message.
func (s *grantSched) window() uint32 {
	switch {
	case s.p.window != 0:
		return s.p.window
	case s.p.basic:
		return s.p.basicWindow
	}
	return s.p.maxIncoming / uint32(len(s.active)+1)
}

// pickActive fills s.active: the best message of each sender first, then,
// if slots remain, further messages in rank order; the result is by rank.
func (s *grantSched) pickActive() {
	s.active = s.active[:0]
	if s.p.basic {
		s.active = append(s.active, s.order...)
		return
	}
	k := s.p.overcommit
	for _, m := range s.order {
		if len(s.active) == k {
			break
		}
		if !s.peerActive(m.peer) {
			s.active = append(s.active, m)
		}
	}
	if len(s.active) < k {
		for _, m := range s.order {
			if len(s.active) == k {
				break
			}
			if !slices.Contains(s.active, m) {
				s.active = append(s.active, m)
			}
		}
		slices.SortFunc(s.active, compareRank)
	}
}

func (s *grantSched) peerActive(p netip.Addr) bool {
	for _, a := range s.active {
		if a.peer == p {
			return true
		}
	}
	return false
}

// priority of the rank-th of n active messages (homa_grant_priority): with
// no more messages than scheduled levels the lowest n levels are used, so
// upper scheduled levels stay free for new short messages; extras share 0.
func (s *grantSched) priority(rank, n int) uint8 {
	if s.p.basic {
		return 0
	}
	levels := s.maxSchedPrio + 1
	if n <= levels {
		return uint8(n - 1 - rank)
	}
	return uint8(max(0, s.maxSchedPrio-rank))
}

// fifoGrant spends accumulated FIFO credit on the oldest message that is
// not fully granted, so a long message cannot starve under SRPT. Like
// homa_grant_find_oldest it passes over a message with more than a window
// plus two FIFO grants outstanding: its sender is not answering grants
// (busy with other messages, or gone), and more would only pile up.
func (s *grantSched) fifoGrant(window uint32) {
	if s.p.fifoPermille == 0 || s.p.basic || s.fifoCredit < int64(s.p.fifoBytes) || len(s.order) == 0 {
		return
	}
	deaf := window + 2*s.p.fifoBytes
	var oldest *msgIn
	for _, m := range s.order {
		if m.granted < m.length && m.incoming() < deaf && (oldest == nil || m.birth < oldest.birth) {
			oldest = m
		}
	}
	if oldest == nil {
		return
	}
	inc := min(s.p.fifoBytes, oldest.length-oldest.granted)
	oldest.granted += inc
	oldest.fifoOwed += inc
	s.fifoCredit -= int64(s.p.fifoBytes)
	s.fifoBytes += uint64(inc)
	s.out = append(s.out, grant{m: oldest, offset: oldest.granted, prio: s.p.highPrio, fifo: true})
}

// roundUp rounds n up to a multiple of unit.
func roundUp(n, unit uint32) uint32 { return (n + unit - 1) / unit * unit }
