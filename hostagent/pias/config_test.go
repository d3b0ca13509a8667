package pias

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" for valid
	}{
		{"one level", Config{}, ""},
		{"default", DefaultConfig(10e6, time.Millisecond), ""},
		{"custom dscp", Config{Thresholds: []uint64{10, 20}, DSCP: []uint8{46, 10, 0}}, ""},
		{"too many", Config{Thresholds: []uint64{1, 2, 3, 4, 5, 6, 7, 8}}, "Thresholds has 8 values, at most 7"},
		{"zero", Config{Thresholds: []uint64{0, 5}}, "Thresholds[0] is 0"},
		{"equal", Config{Thresholds: []uint64{5, 5}}, "Thresholds[1] = 5 not above Thresholds[0] = 5"},
		{"descending", Config{Thresholds: []uint64{9, 5}}, "Thresholds[1] = 5 not above"},
		{"dscp count", Config{Thresholds: []uint64{10}, DSCP: []uint8{8}}, "DSCP has 1 values, want len(Thresholds)+1 = 2"},
		{"dscp range", Config{Thresholds: []uint64{10}, DSCP: []uint8{8, 64}}, "DSCP[1] = 64 outside 0..63"},
		{"idle", Config{IdleReset: -time.Second}, "IdleReset = -1s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	// 10 Mbit/s, 2 ms: one BDP is 2500 bytes.
	c := DefaultConfig(10e6, 2*time.Millisecond)
	want := []uint64{2500, 10000, 40000, 160000, 640000, 2560000, 10240000}
	if len(c.Thresholds) != len(want) {
		t.Fatalf("Thresholds = %v, want %v", c.Thresholds, want)
	}
	for i := range want {
		if c.Thresholds[i] != want[i] {
			t.Fatalf("Thresholds = %v, want %v", c.Thresholds, want)
		}
	}
	if c.IdleReset != 8*time.Millisecond {
		t.Errorf("IdleReset = %v, want 8ms", c.IdleReset)
	}
	if got := DefaultConfig(10e6, 10*time.Microsecond); got.Thresholds[0] != 1500 || got.IdleReset != time.Millisecond {
		t.Errorf("tiny BDP: Thresholds[0] = %d, IdleReset = %v; want the floors 1500 and 1ms", got.Thresholds[0], got.IdleReset)
	}
	for i, wantDSCP := range []uint8{56, 48, 40, 32, 24, 16, 8, 0} {
		if d := c.LevelDSCP(i); d != wantDSCP {
			t.Errorf("LevelDSCP(%d) = %d, want CS%d = %d", i, d, 7-i, wantDSCP)
		}
	}
}

// TestForRun: a run's tagging is the defaults for the link and round trip
// unless the scenario sets thresholds or an idle gap.
func TestForRun(t *testing.T) {
	def := DefaultConfig(10_000_000, 2*time.Millisecond)
	tests := []struct {
		name     string
		th       []uint64
		idle     time.Duration
		wantTh   []uint64
		wantIdle time.Duration
	}{
		{"defaults", nil, 0, def.Thresholds, def.IdleReset},
		{"thresholds", []uint64{5000, 50000}, 0, []uint64{5000, 50000}, def.IdleReset},
		{"idle gap", nil, 3 * time.Millisecond, def.Thresholds, 3 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ForRun(10_000_000, 2*time.Millisecond, tc.th, tc.idle)
			if !slices.Equal(c.Thresholds, tc.wantTh) || c.IdleReset != tc.wantIdle || c.DSCP != nil {
				t.Errorf("ForRun = %+v, want thresholds %v, idle %v", c, tc.wantTh, tc.wantIdle)
			}
		})
	}
}

func TestSettings(t *testing.T) {
	c := Config{Thresholds: []uint64{100, 200}, DSCP: []uint8{46, 10, 1}, IdleReset: 3 * time.Millisecond}
	s := c.settings()
	if s.Levels != 3 || s.IdleResetNs != 3e6 || s.Threshold[0] != 100 || s.Threshold[1] != 200 || s.Threshold[2] != 0 {
		t.Errorf("settings = %+v", s)
	}
	if s.Dscp[0] != 46 || s.Dscp[1] != 10 || s.Dscp[2] != 1 {
		t.Errorf("settings DSCP = %v, want [46 10 1 ...]", s.Dscp)
	}
}

func TestAttachRefuses(t *testing.T) {
	tests := []struct {
		name, iface string
		cfg         Config
		want        string
	}{
		{"bad config", "lo", Config{Thresholds: []uint64{0}}, "Thresholds[0] is 0"},
		{"no interface", "pias-none0", Config{}, `interface "pias-none0"`},
		{"not ethernet", "lo", Config{}, `interface "lo" is not Ethernet`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, err := Attach(tt.iface, tt.cfg)
			if err == nil {
				tg.Close()
				t.Fatalf("Attach(%q) succeeded, want an error containing %q", tt.iface, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Attach(%q) = %v, want an error containing %q", tt.iface, err, tt.want)
			}
		})
	}
}
