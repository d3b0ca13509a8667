package homa

// sendQueue holds the outbound messages that may have DATA to send, as a
// heap in the pacer's SRPT order: fewest bytes left, then the oldest,
// then the first queued. The pacer picks once per packet, and a host
// with thousands of messages waiting (a transport overloaded) spent most
// of a run scanning them all each time.
//
// An entry's key changes only through the Endpoint's own sends (the head,
// fixed after each) and through retransmissions or a restart (enqueue
// fixes it); entries with nothing to send stay where they are until they
// reach the head, so a grant that makes one sendable again needs no
// update.
type sendQueue struct {
	q   []*rpc
	seq uint32 // enqueues so far: the last tie-break
}

// sendsBefore is the pacer's order (pickSender).
func sendsBefore(a, b *msgOut) bool {
	if la, lb := a.left(), b.left(); la != lb {
		return la < lb
	}
	if a.birth != b.birth {
		return a.birth < b.birth
	}
	return a.seq < b.seq
}

// bornBefore is the order of the oldest's share (oldest).
func bornBefore(a, b *msgOut) bool {
	return a.birth < b.birth || (a.birth == b.birth && a.seq < b.seq)
}

// Len is the number of queued entries, sendable or not.
func (s *sendQueue) Len() int { return len(s.q) }

func (s *sendQueue) less(i, j int) bool { return sendsBefore(&s.q[i].out, &s.q[j].out) }

func (s *sendQueue) swap(i, j int) {
	s.q[i], s.q[j] = s.q[j], s.q[i]
	s.q[i].out.slot = int32(i)
	s.q[j].out.slot = int32(j)
}

// The heap's sifts, typed rather than container/heap's: the pacer picks
// once per packet, and its comparisons need no interface calls. The
// order is total (seq is unique), so the head does not depend on the
// heap's layout.
func (s *sendQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *sendQueue) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(s.q) {
			break
		}
		if r := c + 1; r < len(s.q) && s.less(r, c) {
			c = r
		}
		if !s.less(c, i) {
			break
		}
		s.swap(i, c)
		i = c
	}
	return i > start
}

// add queues r, or reorders it if it is queued and its key changed.
func (s *sendQueue) add(r *rpc) {
	if r.out.queued {
		if i := int(r.out.slot); !s.down(i) {
			s.up(i)
		}
		return
	}
	r.out.queued = true
	s.seq++
	r.out.seq = s.seq
	r.out.slot = int32(len(s.q))
	s.q = append(s.q, r)
	s.up(len(s.q) - 1)
}

// pop removes the head.
func (s *sendQueue) pop() {
	last := len(s.q) - 1
	s.swap(0, last)
	s.q[last].out.queued = false
	s.q[last] = nil
	s.q = s.q[:last]
	s.down(0)
}

// head returns the first message with something to send, dropping the
// entries before it that have none (finished, or waiting for grants).
func (s *sendQueue) head() *rpc {
	for len(s.q) > 0 {
		r := s.q[0]
		if !r.dead && r.out.sendable() {
			return r
		}
		s.pop()
	}
	return nil
}

// oldest returns the queued message born first that has something to
// send (ties to the first queued), or nil.
func (s *sendQueue) oldest() *rpc {
	var old *rpc
	for _, r := range s.q {
		if r.dead || !r.out.sendable() {
			continue
		}
		if old == nil || bornBefore(&r.out, &old.out) {
			old = r
		}
	}
	return old
}
