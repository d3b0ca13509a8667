package simnet

import "github.com/homatb/homatb/wire"

// PFC in the simulated switches, as the embedded switch runs it
// (p4/dataplane's PFCIngress): each switch port counts the frames it
// received that its switch still queues, per priority; at XOFF it sends a
// PAUSE frame to its peer, ahead of its queues, at XON a resume, and it
// repeats a PAUSE it still means each half of its quanta. A switch obeys a
// PAUSE on the port it came in on (the port model stops that queue), a
// host hands it to its roce endpoint.

// held counts a frame of priority q that came in on inPort and was just
// queued.
func (s *swtch) held(inPort uint16, q uint8) {
	if in := s.ports.get(inPort); in != nil && in.pfc.Held(s.n.cfg.PFC, q) {
		s.announce(in)
	}
}

// left uncounts a frame of priority q from inPort that leaves at now.
func (s *swtch) left(inPort uint16, q uint8, now int64) {
	if in := s.ports.get(inPort); in != nil && in.pfc.Left(s.n.cfg.PFC, q, now, in.pm.HalfPauseNs()) {
		s.announce(in)
	}
}

// announce sends port p's pending PAUSE or resume to its peer: it arrives
// after the link's delay and a minimum frame's serialisation.
func (s *swtch) announce(p *port) {
	now := s.n.clock.now
	vec, quanta := p.pfc.Announce(now)
	if vec == 0 {
		return
	}
	f := s.n.newFrame(wire.PFCFrameLen)
	wire.PutPFCFrame(f, [6]byte{0x02, 0, 0, 0, byte(p.num >> 8), byte(p.num)}, vec, &quanta)
	s.n.clock.AtFrame(now+wireNs(wire.PFCFrameLen+s.n.cfg.WireOverhead, p.rate)+p.delay, p.out, f)
}

// wireNs is how long n bytes take at rate bit/s.
func wireNs(n int, rate uint64) int64 { return int64(uint64(n) * 8 * 1e9 / rate) }

// pause obeys f when it is a PAUSE frame that came in on inPort, and
// reports whether it was (the frame is consumed).
func (s *swtch) pause(f []byte, inPort uint16) bool {
	vec, quanta, ok := wire.ParsePFCFrame(f)
	if !ok {
		return false
	}
	s.n.freeFrame(f)
	p := s.ports.get(inPort)
	if p == nil {
		return true
	}
	p.pm.Pause(vec, &quanta, s.n.clock.now)
	p.pfc.Received(vec, &quanta)
	p.kick() // a resume lets it send again, before the pause would have ended
	return true
}

// pauseNode hands a PAUSE frame that arrived at h to its roce endpoint,
// and reports whether f was one (consumed).
func (h *Node) pauseNode(f []byte) bool {
	vec, quanta, ok := wire.ParsePFCFrame(f)
	if !ok {
		return false
	}
	h.n.freeFrame(f)
	if h.d != nil {
		h.d.Pause(vec, &quanta)
		h.settle()
	}
	return true
}
