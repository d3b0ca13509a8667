package homa

import (
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// TestNSCCFourCases drives one PDC's NSCC by hand, each case from a
// window half its cap, with a 10 µs base round trip: no mark and low
// delay grows the window more the lower the delay (proportional
// increase); no mark and high delay grows it a little (fair increase); a
// mark and high delay cuts it by gamma times the delay's excess share, at
// most once per base round trip; a mark and low delay holds it. Quick
// adapt and loss are checked after.
func TestNSCCFourCases(t *testing.T) {
	cfg, err := homaconf.Config{Variant: homaconf.VariantUET, LinkBps: 10e9, UnloadedRTT: 10 * time.Microsecond}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() *nscc {
		var c nscc
		c.init(&cfg)
		c.sample(10 * time.Microsecond) // the base round trip
		c.cwnd = c.maxwnd / 2
		return &c
	}
	target := cfg.UETTargetDelay
	const acked = 1000
	now := time.Millisecond
	for _, tt := range []struct {
		name  string
		ecn   bool
		delay time.Duration
		check func(t *testing.T, before, after float64, cut bool)
	}{
		{"no_mark/low_delay/proportional_increase", false, 0, func(t *testing.T, b, a float64, cut bool) {
			// 2 packets per window of acks at zero delay.
			if want := b + nsccPropPkts*acked/b*float64(cfg.MTU); cut || !near(a, want) {
				t.Errorf("window %.0f -> %.0f (cut %v), want %.0f", b, a, cut, want)
			}
		}},
		{"no_mark/half_target/smaller_increase", false, target / 2, func(t *testing.T, b, a float64, cut bool) {
			if want := b + nsccPropPkts*acked/b*float64(cfg.MTU)/2; cut || !near(a, want) {
				t.Errorf("window %.0f -> %.0f, want %.0f", b, a, want)
			}
		}},
		{"no_mark/high_delay/fair_increase", false, 2 * target, func(t *testing.T, b, a float64, cut bool) {
			if want := b + nsccFairPkts*acked/b*float64(cfg.MTU); cut || !near(a, want) {
				t.Errorf("window %.0f -> %.0f, want %.0f", b, a, want)
			}
		}},
		{"mark/high_delay/multiplicative_decrease", true, 2 * target, func(t *testing.T, b, a float64, cut bool) {
			// 1 - 0.8 x (2T - T)/2T = 0.6.
			if want := b * 0.6; !cut || !near(a, want) {
				t.Errorf("window %.0f -> %.0f (cut %v), want %.0f", b, a, cut, want)
			}
		}},
		{"mark/low_delay/hold", true, target / 2, func(t *testing.T, b, a float64, cut bool) {
			if cut || a != b {
				t.Errorf("window %.0f -> %.0f (cut %v), want it held", b, a, cut)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fresh()
			c.avg = tt.delay
			before := c.cwnd
			cut := c.onAck(now, tt.ecn, tt.delay, true, acked, &cfg)
			tt.check(t, before, c.cwnd, cut)
		})
	}
	t.Run("decrease_once_per_base_rtt", func(t *testing.T) {
		c := fresh()
		c.avg = 2 * target
		c.onAck(now, true, 2*target, true, acked, &cfg)
		w := c.cwnd
		if c.onAck(now+time.Microsecond, true, 2*target, true, acked, &cfg) || c.cwnd != w {
			t.Errorf("a second decrease within a base round trip: %.0f -> %.0f", w, c.cwnd)
		}
		if !c.onAck(now+c.base(), true, 2*target, true, acked, &cfg) || c.cwnd >= w {
			t.Errorf("no decrease a base round trip later: %.0f -> %.0f", w, c.cwnd)
		}
	})
	t.Run("quick_adapt", func(t *testing.T) {
		c := fresh()
		c.onAck(now, false, 0, true, 3000, &cfg) // 3000 bytes acked in this round trip
		c.avg = 5 * target
		if !c.onAck(now+time.Microsecond, false, 5*target, true, 1000, &cfg) || !near(c.cwnd, max(4000, c.mtu)) {
			t.Errorf("delay of 5 targets: window %.0f, want what the round trip delivered (4000 B, at least an MTU)", c.cwnd)
		}
	})
	t.Run("loss_and_bounds", func(t *testing.T) {
		c := fresh()
		w := c.cwnd
		c.loss(1000, &cfg)
		if c.cwnd != w-1000 {
			t.Errorf("loss of 1000 B: %.0f -> %.0f", w, c.cwnd)
		}
		for range 100 {
			c.loss(uint32(cfg.MTU), &cfg)
		}
		if c.cwnd != c.mtu {
			t.Errorf("window %.0f after many losses, want its floor of one MTU", c.cwnd)
		}
		for i := range 10000 {
			c.onAck(now+time.Duration(i), false, 0, true, 100000, &cfg)
		}
		if c.cwnd != c.maxwnd || !near(c.maxwnd, 1.5*float64(10*time.Microsecond)*c.bytesPerNs) {
			t.Errorf("window %.0f, cap %.0f: want the cap, 1.5 BDP of the 10 µs base", c.cwnd, c.maxwnd)
		}
	})
}

func near(a, b float64) bool { return a > b*0.999 && a < b*1.001 }

// TestNSCCNackQuickAdapt drives uet_nack_qa's answer to trims by hand, as
// htsim's NSCC answers NACKs: the first trim only takes its bytes off the
// window (no period has ended yet); a trim after a period that delivered
// less than an eighth of the cap sets the window to what it delivered;
// the trims of the bytes in flight then take nothing off; once they have
// passed, a trim inside a period takes its bytes off again; and a period
// that delivered more than an eighth of the cap ends without a quick
// adapt.
func TestNSCCNackQuickAdapt(t *testing.T) {
	cfg, err := homaconf.Config{Variant: homaconf.VariantUET, LinkBps: 10e9, UnloadedRTT: 10 * time.Microsecond, UETNackQA: true}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var c nscc
	c.init(&cfg)
	c.sample(10 * time.Microsecond)
	period := c.base() + c.target
	const pkt, inflight = 1500, 30_000
	now := time.Millisecond
	w := c.cwnd
	if c.onTrim(now, pkt, inflight) || !near(c.cwnd, w-pkt) {
		t.Fatalf("first trim: window %.0f from %.0f, want %d bytes off and no quick adapt", c.cwnd, w, pkt)
	}
	delivered := c.maxwnd/(1<<nsccLossQAGate) - 300 // under the gate, above one MTU
	if c.ackQA(now+period/2, uint32(delivered), inflight) {
		t.Fatal("quick adapt inside a period")
	}
	now += period + time.Microsecond
	if !c.onTrim(now, pkt, inflight) || !near(c.cwnd, delivered) {
		t.Fatalf("trim after a period delivering %.0f of cap %.0f: window %.0f, want it set to what was delivered", delivered, c.maxwnd, c.cwnd)
	}
	w = c.cwnd
	for range inflight/pkt - 1 {
		if c.onTrim(now, pkt, inflight); c.cwnd != w {
			t.Fatalf("a trim of the bytes in flight at the quick adapt moved the window %.0f to %.0f", w, c.cwnd)
		}
	}
	if c.onTrim(now, pkt, inflight) || !near(c.cwnd, max(w-pkt, c.mtu)) {
		t.Fatalf("trim after the ignored bytes: window %.0f from %.0f, want %d bytes off", c.cwnd, w, pkt)
	}
	c.cwnd = c.maxwnd
	c.ackQA(now+period/2, uint32(c.maxwnd/4), inflight)
	c.onTrim(now+period/2, pkt, inflight)
	if now += period + time.Microsecond; c.ackQA(now, pkt, inflight) {
		t.Errorf("quick adapt after a period that delivered a quarter of the cap: window %.0f", c.cwnd)
	}
}
