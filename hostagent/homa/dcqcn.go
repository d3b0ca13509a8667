package homa

import (
	"math"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// DCQCN (Zhu et al., SIGCOMM 2015) at a RoCE requester: the reaction
// point's rate control of one queue pair. A CNP cuts the current rate Rc
// by alpha/2 after remembering it as the target Rt, and raises alpha by
// the gain g; without CNPs alpha decays by (1-g) every alpha interval.
// Rates rise on two clocks, the rate-increase timer and the byte counter:
// while fewer than F events of either have passed since the cut, fast
// recovery halves the distance to Rt; once both exceed F, hyper increase
// raises Rt by i x R_HAI; otherwise additive increase raises Rt by R_AI;
// and Rc moves half way to Rt each time.
//
// The timers are not armed: each is brought up to date when the queue
// pair next sends or gets a CNP (advance), which gives the same rates at
// every moment they are used and costs nothing while a queue pair is
// idle or at line rate.

// dcqcnParams are an Endpoint's DCQCN settings as the algorithm uses them.
type dcqcnParams struct {
	line, min, ai, hai, g float64
	f                     int
	bytes                 uint32
	alphaGap, rateGap     time.Duration
}

func newDCQCNParams(cfg homaconf.Config) dcqcnParams {
	return dcqcnParams{line: float64(cfg.LinkBps), min: float64(cfg.DCQCNMinRateBps), ai: float64(cfg.DCQCNAdditiveBps),
		hai: float64(cfg.DCQCNHyperBps), g: 1 / float64(cfg.DCQCNGainInverse), f: cfg.DCQCNFastRecovery,
		bytes: cfg.DCQCNByteCounter, alphaGap: cfg.DCQCNAlphaInterval, rateGap: cfg.DCQCNRateTimer}
}

// dcqcn is one queue pair's reaction point.
type dcqcn struct {
	rc, rt, alpha float64
	// cut: a CNP has come (alpha's timer runs from then on); limited: Rc
	// is below line rate (the increase timer and byte counter run).
	cut, limited   bool
	alphaAt, incAt time.Duration
	t, bc          int
	bytes          uint32
}

// newDCQCN starts at line rate with alpha 1, as the paper's and NICs'
// initial value.
func newDCQCN(p *dcqcnParams) dcqcn { return dcqcn{rc: p.line, rt: p.line, alpha: 1} }

// advance runs the timers due by now.
func (c *dcqcn) advance(now time.Duration, p *dcqcnParams) {
	if c.cut && now >= c.alphaAt {
		n := int64((now-c.alphaAt)/p.alphaGap) + 1
		c.alpha *= math.Pow(1-p.g, float64(n))
		c.alphaAt += time.Duration(n) * p.alphaGap
	}
	for i := 0; c.limited && now >= c.incAt; i++ {
		if i == 1<<12 {
			// Thousands of increases: long past hyper increase to the
			// line rate; skip the rest of an idle stretch.
			c.rc, c.rt, c.limited = p.line, p.line, false
			break
		}
		c.incAt += p.rateGap
		c.t++
		c.increase(p)
	}
}

// increase is one rate-increase event (timer or byte counter).
func (c *dcqcn) increase(p *dcqcnParams) {
	switch {
	case max(c.t, c.bc) < p.f: // fast recovery: Rt stays
	case min(c.t, c.bc) > p.f:
		c.rt += float64(min(c.t, c.bc)-p.f) * p.hai
	default:
		c.rt += p.ai
	}
	c.rt = min(c.rt, p.line)
	c.rc = (c.rt + c.rc) / 2
	if c.rt >= p.line && p.line-c.rc < p.line/1024 {
		c.rc, c.limited = p.line, false
	}
}

// cnp reacts to a congestion notification.
func (c *dcqcn) cnp(now time.Duration, p *dcqcnParams) {
	c.advance(now, p)
	c.rt = c.rc
	c.rc = max(p.min, c.rc*(1-c.alpha/2))
	c.alpha = (1-p.g)*c.alpha + p.g
	c.t, c.bc, c.bytes = 0, 0, 0
	c.alphaAt, c.incAt = now+p.alphaGap, now+p.rateGap
	c.cut, c.limited = true, true
}

// sent counts n bytes sent, for the byte counter.
func (c *dcqcn) sent(now time.Duration, p *dcqcnParams, n uint32) {
	c.advance(now, p)
	if !c.limited {
		return
	}
	if c.bytes += n; c.bytes >= p.bytes {
		c.bytes -= p.bytes
		c.bc++
		c.increase(p)
	}
}
