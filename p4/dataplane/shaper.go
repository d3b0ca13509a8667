package dataplane

import (
	"time"

	"github.com/homatb/homatb/internal/fabric"
)

// wireOverhead is what a frame costs on the wire beyond its bytes as the
// dataplane sees them (AF_PACKET hands over frames without their FCS):
// the fabric's one framing constant less the Ethernet header.
const wireOverhead = fabric.WireOverhead

// shaperEarly is how far ahead of its booked start a frame may be handed
// to the kernel. Sleeping for less than this costs more than the frames'
// wire time (a thread wake-up is tens of µs here), so the scheduler sends
// them in one batch instead; their booked times, and so the rate and the
// queueing delays, are unchanged.
const shaperEarly = 20_000

// shaper books departures on one link at a fixed bit rate. Times are
// nanoseconds on the dataplane clock. It is a pure function of the times it is
// given, so tests drive it with a computed clock.
type shaper struct {
	rate  uint64 // bit/s; 0 means unshaped
	early int64  // see shaperEarly
	// extra is added to wireOverhead for each frame: a model of another
	// link's framing (PortModelConfig.WireOverhead); 0 on the switch.
	extra  int
	lag    int64  // how far in the past a departure may be booked
	freeAt int64  // when the link finishes the last booked frame
	rem    uint64 // carry of bits*1e9 mod rate, so rounding never drifts
	// lost is the link time, in ns, that a frame waiting for the link
	// did not get because the scheduler woke more than lag late: the
	// capacity the port lost to this machine's CPU, not to its rate.
	lost int64
}

// ready reports whether a frame may be handed over at now.
func (s *shaper) ready(now int64) bool { return s.rate == 0 || s.freeAt <= now+s.early }

// readyAt is when ready becomes true.
func (s *shaper) readyAt() int64 { return s.freeAt - s.early }

// book schedules a frame of n bytes that arrived at arrival, at the earliest
// when the link is free, and returns its start time. A scheduler that woke
// late books frames back to back from up to lag before now, so the long-run
// rate stays exact and the lateness shows up as a short burst.
func (s *shaper) book(now, arrival int64, n int) int64 {
	due := max(s.freeAt, arrival)
	start := max(due, now-s.lag)
	if s.rate == 0 {
		s.freeAt = start
		return start
	}
	s.lost += start - due
	num := uint64(n+wireOverhead+s.extra)*8*1_000_000_000 + s.rem
	s.freeAt = start + int64(num/s.rate)
	s.rem = num % s.rate
	return start
}

// lagFor is the catch-up bound of a port at rate bit/s: the configured
// lag, but at least lagFrames full frames of maxFrame bytes. At 10 Mbit/s
// one 1,514 B frame takes 1.2 ms, so a 1 ms bound turned every wake-up
// later than that into link time lost for good.
func lagFor(lag time.Duration, rate uint64, maxFrame int) int64 {
	if rate == 0 {
		return int64(lag)
	}
	return max(int64(lag), int64(lagFrames*serializationNs(maxFrame, rate)))
}

// fullFrame is an Ethernet frame of a 1,500 B MTU without its FCS.
const fullFrame = 1514

// lagFrames is how many full frames a late port may send back to back to
// catch up (see lagFor).
const lagFrames = 4

// serializationNs is the wire time of an n-byte frame at rate bit/s.
func serializationNs(n int, rate uint64) float64 {
	return float64(n+wireOverhead) * 8 * 1e9 / float64(rate)
}
