package homaconf

import (
	"cmp"
	"time"

	"github.com/homatb/homatb/wire"
)

// DCQCN's published settings are for datacenter links; the HPCC
// simulator's presets are for 25 Gbit/s, the rate its run.py scales its
// increase steps from (ai = 5 x bw/25, hai = 50 x bw/25). An emulated
// link is a datacenter link slowed down by s = 25 Gbit/s / LinkBps (a
// 50 Mbit/s link: s = 500), and its round trips are in proportion (a
// millisecond here, microseconds there), so homatb stretches DCQCN's
// times by s and divides its rates by s: the algorithm then makes the
// same decisions per packet and per round trip as at 25 Gbit/s. Byte
// counts are unchanged by the stretch. Keeping the times as published
// (what the HPCC simulator does between 25 and 100 Gbit/s, where round
// trips hardly change) was tried first: at 50 Mbit/s a rate cut was made
// good by fast recovery within one packet time, and the incast's queue
// sat at its 256-packet limit with 146,000 drops (simulated).
const (
	dcqcnRefBps     = 25_000_000_000
	dcqcnAIBps      = 5_000_000     // HPCC dcqcn presets: RATE_AI 5 Mb/s at 25 Gbit/s
	dcqcnHAIBps     = 50_000_000    // HPCC dcqcn presets: RATE_HAI 50 Mb/s at 25 Gbit/s
	dcqcnMinBps     = 1_000_000_000 // HPCC config: MIN_RATE 1000 Mb/s (its 25 Gbit/s runs)
	dcqcnByteCount  = 10_000_000    // DCQCN paper: byte counter B = 10 MB
	dcqcnGInverse   = 256           // DCQCN paper and HPCC: g = 1/256
	dcqcnFast       = 5             // DCQCN paper: F = 5 fast-recovery steps
	dcqcnCNPGap     = 50 * time.Microsecond
	dcqcnAlphaGap   = 50 * time.Microsecond // HPCC dcqcn_paper: ALPHA_RESUME_INTERVAL 50
	dcqcnRateTimer  = 55 * time.Microsecond // DCQCN paper and HPCC dcqcn_paper: RP_TIMER 55
	roceAckEvery    = 4
	roceDataLevel   = 3
	roceControlPrio = 6
)

// RoCEPayload is the data a full-size RoCE packet carries: the MTU less
// the IPv4, UDP and BTH headers and the ICRC.
func (c *Config) RoCEPayload() uint32 {
	return uint32(c.MTU - IPHeaderLen - wire.UDPHeaderLen - wire.RoCEOverhead)
}

// roceDefaults fills in the roce variant's settings and checks them.
func (c *Config) roceDefaults() error {
	// Homa's own machinery stays off: every byte goes without grants
	// (the queue pair's rate is the only limit), and a delivered message
	// needs no ACK or tombstone (the PSNs make delivery exactly once).
	c.UnschedBytes = c.MaxMessageBytes
	c.IncastControl = false
	c.AtLeastOnce = true
	c.RoCEQPsPerPeer = cmp.Or(c.RoCEQPsPerPeer, 1)
	if c.RoCEQPsPerPeer < 1 || c.RoCEQPsPerPeer > 256 {
		return keyErr("roce_qps_per_peer", "%d not in 1..256", c.RoCEQPsPerPeer)
	}
	c.RoCEPriority = cmp.Or(c.RoCEPriority, roceDataLevel)
	c.RoCECtrlPriority = cmp.Or(c.RoCECtrlPriority, roceControlPrio)
	if err := c.checkLevels("roce_priority", c.RoCEPriority, "roce_ctrl_priority", c.RoCECtrlPriority); err != nil {
		return err
	}
	c.RoCEAckEvery = cmp.Or(c.RoCEAckEvery, roceAckEvery)
	if c.RoCEAckEvery < 1 {
		return keyErr("roce_ack_every", "%d packets, expected at least 1", c.RoCEAckEvery)
	}
	if c.RoCETimeoutTicks == 0 {
		// Well above a full queue's delay (a NIC's local ACK timeout is
		// thousands of round trips: 67 ms at its common setting 14):
		// a timeout that fires while the packets still wait in a queue
		// sends a whole window again into it.
		c.RoCETimeoutTicks = max(1, c.TimeoutTicks/5)
	}
	if c.RoCETimeoutTicks < 1 || c.RoCETimeoutTicks >= c.TimeoutTicks {
		return keyErr("roce_timeout_ticks", "%d not in 1..%d (below timeout_ticks)", c.RoCETimeoutTicks, c.TimeoutTicks-1)
	}
	if c.RoCEPayload() <= wire.RoCEMsgHeaderLen {
		return keyErr("mtu", "%d leaves no room for a RoCE message header", c.MTU)
	}
	rate := func(v uint64) uint64 { return max(1, v*c.LinkBps/dcqcnRefBps) }
	setDur := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = time.Duration(float64(v) * dcqcnRefBps / float64(c.LinkBps))
		}
	}
	setDur(&c.DCQCNCNPInterval, dcqcnCNPGap)
	setDur(&c.DCQCNAlphaInterval, dcqcnAlphaGap)
	setDur(&c.DCQCNRateTimer, dcqcnRateTimer)
	c.DCQCNByteCounter = cmp.Or(c.DCQCNByteCounter, dcqcnByteCount)
	c.DCQCNGainInverse = cmp.Or(c.DCQCNGainInverse, dcqcnGInverse)
	c.DCQCNFastRecovery = cmp.Or(c.DCQCNFastRecovery, dcqcnFast)
	c.DCQCNAdditiveBps = cmp.Or(c.DCQCNAdditiveBps, rate(dcqcnAIBps))
	c.DCQCNHyperBps = cmp.Or(c.DCQCNHyperBps, rate(dcqcnHAIBps))
	c.DCQCNMinRateBps = cmp.Or(c.DCQCNMinRateBps, rate(dcqcnMinBps))
	switch {
	case c.DCQCNCNPInterval < 0 || c.DCQCNAlphaInterval <= 0 || c.DCQCNRateTimer <= 0:
		return keyErr("roce_rate_timer_us", "DCQCN's intervals must be positive")
	case c.DCQCNGainInverse < 1:
		return keyErr("roce_g_inverse", "%d, expected at least 1 (g = 1/roce_g_inverse)", c.DCQCNGainInverse)
	case c.DCQCNFastRecovery < 1:
		return keyErr("roce_fast_recovery", "%d steps, expected at least 1", c.DCQCNFastRecovery)
	case c.DCQCNMinRateBps > c.LinkBps:
		return keyErr("roce_min_rate_bps", "%d above the link rate %d", c.DCQCNMinRateBps, c.LinkBps)
	}
	return nil
}

// RoCEKeys lists the roce_* keys c sets (nonzero), which only the roce
// variant reads.
func (c *Config) RoCEKeys() []string { return c.prefixedKeys("roce_") }
