package homaconf

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
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
		c.FrameOverhead != 42 || c.MaxIncompletePeerBytes != 16_000_000 || c.MaxIncompleteBytes != 64_000_000 {
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

// TestConfigErrors checks each refusal of WithDefaults and that it names
// the key that set the value, which is how a scenario finds its line.
func TestConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg Config
		key string
	}{
		{Config{Overcommit: 9}, "overcommit"},
		{Config{Variant: "tcp"}, "variant"},
		{Config{Variant: VariantNDP, StartMsg: true}, "start_msg"},
		{Config{Priorities: 3}, "priorities"},
		{Config{MTU: 100}, "mtu"},
		{Config{MaxIncompletePeerBytes: 1_999_999}, "max_incomplete_peer_bytes"},
		{Config{MaxIncompletePeerBytes: 4 << 20, MaxIncompleteBytes: 3 << 20}, "max_incomplete_bytes"},
		{Config{FIFOGrantPermille: 1000}, "fifo_grant_permille"},
		{Config{UnschedCutoffs: make([]uint32, 9)}, "unsched_cutoffs"},
		{Config{UnschedCutoffs: []uint32{100, 200}}, "unsched_cutoffs"},
		{Config{ResendTicks: 10, TimeoutTicks: 10}, "timeout_ticks"},
		{Config{Poll: -time.Microsecond}, "poll_us"},
		{Config{Poll: time.Second}, "poll_us"},
		{Config{FrameOverhead: -14}, "frame_overhead"},
		{Config{CreditWindow: 10_000}, "credit_window_bytes"},
		{Config{Variant: VariantPFabric, CreditWindow: 10_000}, "credit_window_bytes"},
	} {
		_, err := tt.cfg.WithDefaults()
		var ke *Error
		if !errors.As(err, &ke) || ke.Key != tt.key {
			t.Errorf("%+v: err %v, want a *homaconf.Error for key %s", tt.cfg, err, tt.key)
		}
		if ke != nil && !slices.Contains(append(Keys(), "mtu"), ke.Key) {
			t.Errorf("error key %q is no key", ke.Key)
		}
	}
}

// TestSet checks the keys' decoding: each value form a scenario may
// write, old string forms included, and the errors that name the key.
func TestSet(t *testing.T) {
	for _, tt := range []struct {
		key   string
		value any
		check func(Config) bool
		want  string // "" for valid
	}{
		{"poll_us", 50, func(c Config) bool { return c.Poll == 50*time.Microsecond }, ""},
		{"poll_us", "50", func(c Config) bool { return c.Poll == 50*time.Microsecond }, ""},
		{"max_nic_backlog_us", 0.001, func(c Config) bool { return c.MaxNICBacklog == time.Nanosecond }, ""},
		{"tick_us", 2.5, func(c Config) bool { return c.Tick == 2500*time.Nanosecond }, ""},
		{"pacer_spin_us", "off", func(c Config) bool { return c.PacerSpin < 0 }, ""},
		{"fifo_grants", "off", func(c Config) bool { return c.DisableFIFOGrants }, ""},
		{"fifo_grants", true, func(c Config) bool { return !c.DisableFIFOGrants }, ""},
		{"client_port", uint64(40000), func(c Config) bool { return c.ClientPort == 40000 }, ""},
		{"start_msg", "true", func(c Config) bool { return c.StartMsg }, ""},
		{"variant", "phost", func(c Config) bool { return c.Variant == VariantPHost }, ""},
		{"unsched_cutoffs", []any{3000, 1000}, func(c Config) bool { return slices.Equal(c.UnschedCutoffs, []uint32{3000, 1000}) }, ""},
		{"overcommit", 2.0, func(c Config) bool { return c.Overcommit == 2 }, ""},
		{"poll_uz", 50, nil, "poll_uz: unknown key"},
		{"poll_us", "x", nil, `poll_us: expected an integer`},
		{"poll_us", "off", nil, `poll_us: expected an integer`},
		{"client_port", 70000, nil, "client_port: expected an integer from 0 to 65535, got 70000"},
		{"unsched_bytes", -1, nil, "unsched_bytes: expected an integer from 0"},
		{"overcommit", 2.5, nil, "overcommit: expected an integer"},
		{"fifo_grants", "no way", nil, "fifo_grants: expected true or false"},
		{"variant", 3, nil, "variant: expected a string"},
		{"unsched_cutoffs", []any{1, -1}, nil, "unsched_cutoffs: entry 1: expected an integer"},
	} {
		var c Config
		err := c.Set(tt.key, tt.value)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s=%v: %v", tt.key, tt.value, err)
		case tt.want == "" && !tt.check(c):
			t.Errorf("%s=%v: config %+v", tt.key, tt.value, c)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s=%v: err %v, want one containing %q", tt.key, tt.value, err, tt.want)
		}
	}
}

// TestSettingsRoundTrip fills every keyed field with a value of its own
// and checks that Settings, read back by Set, gives the same Config: no
// key is lost or garbled, whatever field is added.
func TestSettingsRoundTrip(t *testing.T) {
	var c Config
	v := reflect.ValueOf(&c).Elem()
	for i, f := range keyFields() {
		fv := v.Field(f.index)
		switch {
		case fv.Type() == durationType:
			// Every other duration with a fraction of a microsecond.
			fv.SetInt(int64(i+1)*int64(time.Microsecond) + int64(i%2)*500)
		case fv.Kind() == reflect.Bool:
			fv.SetBool(true)
		case fv.Kind() == reflect.String:
			fv.SetString("s" + strconv.Itoa(i))
		case fv.CanInt():
			fv.SetInt(int64(i + 1))
		case fv.CanUint():
			fv.SetUint(uint64(i + 1))
		case fv.Kind() == reflect.Slice:
			fv.Set(reflect.ValueOf([]uint32{uint32(i), 1}))
		default:
			t.Fatalf("key %s: field kind %s not covered", f.key, fv.Kind())
		}
	}
	var back Config
	for _, s := range c.Settings() {
		if err := back.Set(s.Key, s.Value); err != nil {
			t.Fatalf("Set(%s, %v): %v", s.Key, s.Value, err)
		}
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip\n got %+v\nwant %+v", back, c)
	}
	off := Config{PacerSpin: -1}
	var offBack Config
	for _, s := range off.Settings() {
		if err := offBack.Set(s.Key, s.Value); err != nil {
			t.Fatal(err)
		}
	}
	if offBack.PacerSpin >= 0 {
		t.Errorf("pacer_spin_us off came back as %v", offBack.PacerSpin)
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

// TestCreditWindowDefaults: pHost's and NDP's credit window is
// UnschedBytes unless given; a value given is rounded up to whole
// packets.
func TestCreditWindowDefaults(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		pkts uint32
	}{
		{"phost", Config{Variant: VariantPHost, LinkBps: 25e6, UnschedBytes: 4272}, 3},
		{"ndp", Config{Variant: VariantNDP, LinkBps: 25e6, UnschedBytes: 4272}, 3},
		// scenarios/ai-cluster.yaml: 4,272 B + 25 Mbit/s x 500 µs
		// (1,562 B) + two 1,542-byte frames = 8,918 B, written as 7 packets.
		{"given", Config{Variant: VariantPHost, LinkBps: 25e6, UnschedBytes: 4272, CreditWindow: 9968}, 7},
		{"given, rounded up", Config{Variant: VariantNDP, CreditWindow: 1425}, 2},
	} {
		c, err := tt.cfg.WithDefaults()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if want := tt.pkts * c.PayloadPerPacket(); c.CreditWindow != want {
			t.Errorf("%s: credit window %d B, want %d (%d packets)", tt.name, c.CreditWindow, want, tt.pkts)
		}
	}
}
