package homa

import (
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// NSCC's constants, as htsim's UEC sender has them (uec.cpp,
// initNsccParams): the multiplicative decrease's gain and floor, the
// quick-adapt threshold in target delays, and the increases in packets per
// round trip at htsim's reference network (proportional increase up to
// 4ab MSS = 2 with b = 6/12; fair increase _fi_scale 0.25).
const (
	nsccGamma      = 0.8
	nsccMaxMD      = 0.5
	nsccQAFactor   = 4
	nsccPropPkts   = 2.0
	nsccFairPkts   = 0.25
	nsccDelayAlpha = 0.0125 // htsim _delay_alpha: the average delay's gain
)

// nscc is one PDC's network-signal-based congestion control (UET 1.0
// 3.6.13, as htsim's UecSrc runs it): a window in bytes moved on every
// ACK by the ECN mark the ACK echoes and the queueing delay its packet
// saw (round trip less the smallest seen), in four cases: no mark and
// delay below the target, proportional increase (more the lower the
// delay); no mark and delay above it, fair increase (the queue is
// draining: a small step); a mark and a high delay, multiplicative
// decrease (at most once per base round trip, by gamma times the delay's
// excess share, at most half); a mark and a low delay, hold (a queue
// builds on some path: wait). Quick adapt: a delay above four targets
// sets the window to what the last round trip delivered. A packet
// declared lost takes its size off the window. The window stays between
// one MTU and its cap (uet_max_window_bytes, or 1.5 BDP of the PDC's
// smallest round trip).
type nscc struct {
	cwnd, maxwnd, mtu float64
	fixedCap          bool    // uet_max_window_bytes set: the cap does not follow the round trip
	bytesPerNs        float64 // the link rate
	// cfgBase is the configured base round trip of a full packet: the
	// calibrated small-message round trip and two full-packet
	// serialisations (the sender's link and the switch's egress, as
	// Homa's RTTbytes counts them). A measured round trip is trusted up
	// to twice it: a PDC's first packets may already meet a queue (an
	// incast's senders start together), and a base taken from them would
	// hide the queue from the delay and raise the cap with it.
	cfgBase         time.Duration
	target          time.Duration
	minRTT, avg     time.Duration
	lastDec, lastQA time.Duration
	winStart        time.Duration
	cur, prev       float64 // bytes acknowledged in this and the last base round trip
	// uet_nack_qa's state (htsim's quick adapt on loss): the end of the
	// current period, the bytes acknowledged in it, whether a trim was
	// NACKed since the last quick adapt, and the bytes to let pass
	// (acknowledged or trimmed) before a trim counts again.
	qaEnd           time.Duration
	achieved        float64
	trigger         bool
	ignore, ignored float64
}

func (c *nscc) init(cfg *homaconf.Config) {
	c.mtu, c.target = float64(cfg.MTU), cfg.UETTargetDelay
	c.bytesPerNs = float64(cfg.LinkBps) / 8e9
	c.cfgBase = cfg.UnloadedRTT + 2*wireTime(cfg.MTU+cfg.FrameOverhead, cfg.LinkBps)
	c.fixedCap = cfg.UETMaxWindow != 0
	if c.fixedCap {
		c.maxwnd = float64(cfg.UETMaxWindow)
	} else {
		c.setCap(c.cfgBase)
	}
	c.cwnd = c.maxwnd // htsim initNscc: the first window is the cap
}

// setCap makes the window cap 1.5 BDP of round trip rtt, at least two
// packets; a window at the old cap follows it.
func (c *nscc) setCap(rtt time.Duration) {
	atCap := c.cwnd >= c.maxwnd
	c.maxwnd = max(float64(rtt)*c.bytesPerNs*homaconf.UETMaxWindowPermille/1000, 2*c.mtu)
	if atCap {
		c.cwnd = c.maxwnd
	}
	c.clamp()
}

// window is the bytes the PDC may have in flight.
func (c *nscc) window() uint32 { return uint32(c.cwnd) }

// sample takes a full-size packet's round trip and returns its queueing
// delay: the round trip less the base.
func (c *nscc) sample(rtt time.Duration) time.Duration {
	if c.minRTT == 0 || rtt < c.minRTT {
		c.minRTT = rtt
		if !c.fixedCap {
			c.setCap(c.base())
		}
	}
	return max(0, rtt-c.base())
}

// base is the PDC's base round trip: the smallest measured, at most twice
// the configured one (cfgBase), which stands until one is measured.
func (c *nscc) base() time.Duration {
	if c.minRTT > 0 {
		return min(c.minRTT, 2*c.cfgBase)
	}
	return c.cfgBase
}

// onAck moves the window for an ACK of acked new bytes at now; delay is
// the queueing delay of its packet when sampled (a full-size packet sent
// once), else the last one stands. It reports a decrease.
func (c *nscc) onAck(now time.Duration, ecn bool, delay time.Duration, sampled bool, acked uint32, cfg *homaconf.Config) (cut bool) {
	base := c.base()
	if now-c.winStart >= base {
		c.prev, c.cur, c.winStart = c.cur, 0, now
	}
	c.cur += float64(acked)
	if sampled {
		c.avg += time.Duration(nsccDelayAlpha * float64(delay-c.avg))
	} else {
		delay = c.avg
	}
	if sampled && delay > nsccQAFactor*c.target && now-c.lastQA >= base {
		c.lastQA = now
		c.cwnd = max(c.prev, c.cur, c.mtu)
		c.clamp()
		return true
	}
	step := float64(acked) / c.cwnd * c.mtu
	switch {
	case !ecn && delay < c.target:
		c.cwnd += nsccPropPkts * step * float64(c.target-delay) / float64(c.target)
	case !ecn:
		c.cwnd += nsccFairPkts * step
	case delay >= c.target && delay > 0:
		if now-c.lastDec < base {
			return false
		}
		c.lastDec = now
		c.cwnd *= max(1-nsccGamma*float64(delay-c.target)/float64(delay), nsccMaxMD)
		cut = true
	}
	c.clamp()
	return cut
}

// loss takes a lost packet's bytes off the window.
func (c *nscc) loss(n uint32, _ *homaconf.Config) {
	c.cwnd -= float64(n)
	c.clamp()
}

// nsccLossQAGate: htsim's quick adapt on loss acts when a period
// delivered less than the cap shifted right by its _qa_gate, 3.
const nsccLossQAGate = 3

// onTrim is uet_nack_qa's answer to a NACKed trim of n bytes at now with
// inflight bytes in flight, as htsim's NSCC answers one
// (updateCwndOnNack, quick_adapt): nothing while the bytes of the last
// quick adapt pass; else a quick adapt if the period is over, or the
// packet's bytes off the window. It reports a quick adapt.
func (c *nscc) onTrim(now time.Duration, n, inflight uint32) bool {
	c.trigger = true
	c.ignored += float64(n)
	if c.ignored < c.ignore {
		return false
	}
	if c.lossQA(now, inflight) {
		return true
	}
	c.cwnd -= float64(n)
	c.clamp()
	return false
}

// ackQA counts acked bytes toward uet_nack_qa's period at now and ends the
// period when it is over; it reports a quick adapt.
func (c *nscc) ackQA(now time.Duration, acked, inflight uint32) bool {
	c.achieved += float64(acked)
	c.ignored += float64(acked)
	return c.lossQA(now, inflight)
}

// lossQA ends uet_nack_qa's period (a base round trip and the target
// delay) once it is over: if a trim was NACKed and the period delivered
// less than an eighth of the cap, the window becomes what it delivered
// and the trims of the bytes now in flight take nothing more off it.
func (c *nscc) lossQA(now time.Duration, inflight uint32) bool {
	if now <= c.qaEnd {
		return false
	}
	qa := c.qaEnd != 0 && c.trigger && c.achieved < c.maxwnd/(1<<nsccLossQAGate)
	if qa {
		c.cwnd = max(c.achieved, c.mtu)
		c.clamp()
		c.ignore, c.ignored, c.trigger = float64(inflight), 0, false
	}
	c.achieved, c.qaEnd = 0, now+c.base()+c.target
	return qa
}

// SLEEK's threshold (htsim uec.cpp, runSleek): 1.5 windows, at most the
// cap, at least 5 packets.
const (
	sleekWindows = 1.5
	sleekMinPkts = 5
)

// sleekPkts is how many packets acknowledged after an unacknowledged one
// declare it lost under uet_sleek: SLEEK's threshold in packets of pkt
// bytes.
func (c *nscc) sleekPkts(pkt uint32) uint64 {
	return max(uint64(min(sleekWindows*c.cwnd, c.maxwnd)/float64(pkt)), sleekMinPkts)
}

func (c *nscc) clamp() { c.cwnd = min(max(c.cwnd, c.mtu), c.maxwnd) }
