package homaconf

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	pkt := uint32(DefaultMTU - 20 - 56)
	// 1 Gbit/s x 100 µs = 12,500 B plus two MTUs, rounded up to whole
	// 1424-byte packets.
	if want := 11 * pkt; c.UnschedBytes != want {
		t.Errorf("unsched bytes %d, want %d", c.UnschedBytes, want)
	}
	if c.Overcommit != 8 || c.Priorities != 8 || c.MaxIncoming != 9*c.UnschedBytes || c.FIFOGrantPermille != 50 ||
		c.Tick != time.Millisecond || c.ResendTicks != 5 || c.TimeoutTicks != 100 || c.MaxMessageBytes != 1_000_000 ||
		c.FrameOverhead != 42 {
		t.Errorf("defaults %+v", c)
	}
	basic, _ := Config{Basic: true}.WithDefaults()
	if basic.Priorities != 1 {
		t.Errorf("basic mode keeps %d priorities", basic.Priorities)
	}
}

// TestSlowLinkDefaults: the tick stretches with a slow link, and the
// default unscheduled bytes leave a window of several packets; one packet
// starved Homa's goodput under 10% loss at 20 Mbit/s (issue #29).
func TestSlowLinkDefaults(t *testing.T) {
	for _, tt := range []struct {
		bps        uint64
		tick       time.Duration
		unschedPkt uint32
	}{
		{10e6, 20 * time.Millisecond, 3},
		{20e6, 20 * time.Millisecond, 3},
		{100e6, 10 * time.Millisecond, 3},
		{200e6, 5 * time.Millisecond, 4},
		{500e6, 2 * time.Millisecond, 7},
		{10e9, time.Millisecond, 90},
	} {
		c, err := Config{LinkBps: tt.bps}.WithDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if c.Tick != tt.tick || c.UnschedBytes != tt.unschedPkt*c.PayloadPerPacket() {
			t.Errorf("%d bit/s: tick %v, unsched %d B; want %v, %d packets", tt.bps, c.Tick, c.UnschedBytes, tt.tick, tt.unschedPkt)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Overcommit: 9}, "overcommit"},
		{Config{Variant: "tcp"}, "variant"},
		{Config{Variant: VariantNDP, StartMsg: true}, "start_msg"},
		{Config{Priorities: 3}, "priorities"},
		{Config{MTU: 100}, "mtu"},
		{Config{FIFOGrantPermille: 1000}, "fifo"},
		{Config{UnschedCutoffs: make([]uint32, 9)}, "cutoffs"},
		{Config{ResendTicks: 10, TimeoutTicks: 10}, "timeout"},
		{Config{Poll: -time.Microsecond}, "poll"},
		{Config{Poll: time.Second}, "poll"},
		{Config{FrameOverhead: -14}, "frame overhead"},
	} {
		if _, err := tt.cfg.WithDefaults(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err %v, want one about %s", tt.cfg, err, tt.want)
		}
	}
}

func TestCheckExtra(t *testing.T) {
	for _, tt := range []struct {
		extra map[string]string
		want  string // "" for valid
	}{
		{map[string]string{"poll_us": "50", "pacer_spin_us": "off", "fifo_grants": "off", "client_port": "40000"}, ""},
		{map[string]string{"poll_uz": "50"}, `unknown key "poll_uz"`},
		{map[string]string{"poll_us": "x"}, `poll_us="x"`},
		{map[string]string{"poll_us": "20000"}, "poll 20ms not in 0..10ms"},
		{map[string]string{"client_port": "70000"}, `client_port="70000"`},
		{map[string]string{"fifo_grants": "no"}, "expected on or off"},
		{map[string]string{"frame_overhead": "2000"}, "frame overhead 2000 bytes not in 1..1000"},
		{map[string]string{"b_unknown": "1", "a_unknown": "1"}, `unknown key "a_unknown"`}, // first in key order
	} {
		err := CheckExtra(tt.extra)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.extra, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: err %v, want one containing %q", tt.extra, err, tt.want)
		}
	}
}

// TestVariantDefaults checks what each variant changes of the defaults:
// pFabric sends every byte blind and recovers on a short timeout; the
// others keep Homa's.
func TestVariantDefaults(t *testing.T) {
	homa, _ := Config{}.WithDefaults()
	if homa.Variant != VariantHoma {
		t.Errorf("default variant %q, want homa", homa.Variant)
	}
	for _, tt := range []struct {
		v                 Variant
		unsched           uint32
		resendTicks       int
		incastControlLeft bool
	}{
		{VariantPFabric, 1_000_000, 2, false},
		{VariantPHost, homa.UnschedBytes, 5, true},
		{VariantNDP, homa.UnschedBytes, 5, true},
	} {
		c, err := Config{Variant: tt.v, IncastControl: true}.WithDefaults()
		if err != nil {
			t.Fatalf("%s: %v", tt.v, err)
		}
		if c.UnschedBytes != tt.unsched || c.ResendTicks != tt.resendTicks || c.IncastControl != tt.incastControlLeft {
			t.Errorf("%s: unsched %d resend ticks %d incast %v, want %d %d %v", tt.v, c.UnschedBytes, c.ResendTicks,
				c.IncastControl, tt.unsched, tt.resendTicks, tt.incastControlLeft)
		}
	}
}

func TestVariantExtra(t *testing.T) {
	var c Config
	if err := c.SetExtra(map[string]string{"variant": "phost"}); err != nil || c.Variant != VariantPHost {
		t.Errorf("variant=phost: %v, %q", err, c.Variant)
	}
	if err := CheckExtra(map[string]string{"variant": "pias"}); err == nil || !strings.Contains(err.Error(), "variant") {
		t.Errorf("variant=pias: %v, want an error naming the key", err)
	}
}
