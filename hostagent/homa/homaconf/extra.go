package homaconf

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// extraSetters are the extra keys, each setting a field of c from its
// string value: numbers, except "pacer_spin_us" (also "off"),
// "fifo_grants" ("on" or "off"), "start_msg" (true or false) and
// "variant" (homa, pfabric, phost or ndp).
func extraSetters(c *Config) map[string]func(string) error {
	num := func(v string, bits int) (uint64, error) { return strconv.ParseUint(v, 10, bits) }
	u32 := func(dst *uint32) func(string) error {
		return func(v string) error {
			n, err := num(v, 32)
			*dst = uint32(n)
			return err
		}
	}
	integer := func(dst *int) func(string) error {
		return func(v string) error {
			n, err := num(v, 31)
			*dst = int(n)
			return err
		}
	}
	micros := func(dst *time.Duration, off time.Duration) func(string) error {
		return func(v string) error {
			if v == "off" && off != 0 {
				*dst = off
				return nil
			}
			n, err := num(v, 32)
			*dst = time.Duration(n) * time.Microsecond
			return err
		}
	}
	return map[string]func(string) error{
		"resend_interval":      integer(&c.ResendInterval),
		"request_ack_ticks":    integer(&c.RequestAckTicks),
		"incast_threshold":     integer(&c.IncastThreshold),
		"cutoff_samples":       integer(&c.CutoffSamples),
		"fifo_grant_bytes":     u32(&c.FIFOGrantBytes),
		"incast_unsched_bytes": u32(&c.IncastUnschedBytes),
		"bypass_bytes":         u32(&c.BypassBytes),
		"grant_increment":      u32(&c.GrantIncrement),
		"frame_overhead":       integer(&c.FrameOverhead),
		"max_nic_backlog_us":   micros(&c.MaxNICBacklog, 0),
		"pacer_spin_us":        micros(&c.PacerSpin, -1), // "off": never poll
		"poll_us":              micros(&c.Poll, 0),
		"client_port": func(v string) error {
			n, err := num(v, 16)
			c.ClientPort = uint16(n)
			return err
		},
		"variant": func(v string) error {
			c.Variant = Variant(v)
			if !slices.Contains(Variants, c.Variant) {
				return fmt.Errorf("expected one of %v", Variants)
			}
			return nil
		},
		"start_msg": func(v string) error {
			b, err := strconv.ParseBool(v)
			c.StartMsg = b
			return err
		},
		"fifo_grants": func(v string) error {
			if v != "on" && v != "off" {
				return fmt.Errorf("expected on or off")
			}
			c.DisableFIFOGrants = v == "off"
			return nil
		},
	}
}

// SetExtra sets c's fields from extra keys and their string values (the
// agent API's HomaParams.extra, a scenario's homa.extra), in key order so
// that the first error is always the same one. Values are not checked
// against their limits here: WithDefaults does that.
func (c *Config) SetExtra(extra map[string]string) error {
	set := extraSetters(c)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		f := set[k]
		if f == nil {
			return fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(slices.Sorted(maps.Keys(set)), ", "))
		}
		if err := f(extra[k]); err != nil {
			return fmt.Errorf("%s=%q: %w", k, extra[k], err)
		}
	}
	return nil
}

// CheckExtra reports the first unknown key or invalid value of an extra
// map, so that scenario validation can name it before a run starts.
func CheckExtra(extra map[string]string) error {
	var c Config
	if err := c.SetExtra(extra); err != nil {
		return err
	}
	_, err := c.WithDefaults()
	return err
}
