package homa

import (
	"math"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// TestDCQCN steps one reaction point through the algorithm with the
// defaults at 25 Gbit/s (the published values unstretched): the first
// CNP halves the rate (alpha starts at 1) and raises alpha by g; alpha
// decays by (1-g) per interval; fast recovery halves the distance to the
// target F times, then additive increase raises the target by R_AI per
// timer event; the rate never leaves [min, line]; at line rate the
// timers stop.
func TestDCQCN(t *testing.T) {
	cfg, err := homaconf.Config{Variant: homaconf.VariantRoCE, LinkBps: 25e9}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	p := newDCQCNParams(cfg)
	if p.rateGap != 55*time.Microsecond || p.alphaGap != 50*time.Microsecond || p.ai != 5e6 || p.hai != 50e6 || p.g != 1.0/256 || p.f != 5 {
		t.Fatalf("defaults at 25 Gbit/s %+v, want the published values", p)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %g, want %g", what, got, want)
		}
	}
	c := newDCQCN(&p)
	c.cnp(0, &p)
	near("rate after the first CNP", c.rc, 12.5e9)
	near("target", c.rt, 25e9)
	near("alpha", c.alpha, 1-p.g+p.g)
	// One alpha interval without CNPs, before the first rate event.
	c.advance(p.rateGap-1, &p)
	near("alpha after one interval", c.alpha, 1-p.g)
	// Fast recovery: F timer events, each half way to the target.
	want := 12.5e9
	for i := 1; i <= p.f-1; i++ {
		c.advance(time.Duration(i)*p.rateGap, &p)
		want = (25e9 + want) / 2
		near("rate in fast recovery", c.rc, want)
	}
	if c.t != p.f-1 || c.rt != 25e9 {
		t.Errorf("after %d timer events t = %d, target %g", p.f-1, c.t, c.rt)
	}
	// A second CNP in the middle: cut from the current rate, target = it.
	before := c.rc
	c.cnp(time.Duration(p.f-1)*p.rateGap+time.Microsecond, &p)
	near("target after the second CNP", c.rt, before)
	if c.rc >= before || c.rc < p.min {
		t.Errorf("second cut %g from %g", c.rc, before)
	}
	// Additive increase once the timer passes F (the byte counter has not).
	now := time.Duration(p.f-1)*p.rateGap + time.Microsecond
	c.advance(now+time.Duration(p.f+1)*p.rateGap, &p)
	if c.rt <= before || c.rt > before+2*p.ai {
		t.Errorf("target %g after F+1 events from %g, want one or two additive steps of %g", c.rt, before, p.ai)
	}
	// Left alone for long, the rate is back at line rate and stays.
	c.advance(time.Hour, &p)
	if c.rc != p.line || c.limited {
		t.Errorf("after an hour: rate %g, limited %v", c.rc, c.limited)
	}
	// Many CNPs in a row never go below the lowest rate.
	for i := range 200 {
		c.cnp(time.Hour+time.Duration(i)*time.Microsecond, &p)
	}
	near("rate floor", c.rc, p.min)
}

// TestDCQCNStretch checks the defaults' scaling: at 50 Mbit/s DCQCN's
// times are 500 times the published ones and its rates a 500th.
func TestDCQCNStretch(t *testing.T) {
	cfg, err := homaconf.Config{Variant: homaconf.VariantRoCE, LinkBps: 50e6}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DCQCNRateTimer != 27500*time.Microsecond || cfg.DCQCNCNPInterval != 25*time.Millisecond ||
		cfg.DCQCNAdditiveBps != 10_000 || cfg.DCQCNHyperBps != 100_000 || cfg.DCQCNMinRateBps != 2_000_000 || cfg.DCQCNByteCounter != 10_000_000 {
		t.Errorf("at 50 Mbit/s: timer %v, CNP interval %v, AI %d, HAI %d, min %d, bytes %d", cfg.DCQCNRateTimer,
			cfg.DCQCNCNPInterval, cfg.DCQCNAdditiveBps, cfg.DCQCNHyperBps, cfg.DCQCNMinRateBps, cfg.DCQCNByteCounter)
	}
}
