package homaconf

import (
	"cmp"
	"reflect"
	"strings"

	"github.com/homatb/homatb/wire"
)

// The uet variant's defaults. NSCC's are htsim's (uec.cpp, initNscc and
// initNsccParams) where it has one, relative to the round trip: htsim's
// target queueing delay is 6 us of its 12 us reference round trip, and
// its window cap 1.5 BDP. An emulated link is slower by orders of
// magnitude with round trips of milliseconds, so the target is kept as
// the same share of UnloadedRTT rather than as 6 us (the way DCQCN's
// times are stretched, docs/transports.md).
const (
	uetDataLevel    = 3
	uetControlLevel = 6
	uetAckEvery     = 1
	uetEntropies    = 64
	uetReorderPkts  = 8
	// UETMaxWindowPermille is NSCC's default window cap in thousandths
	// of a PDC's BDP (htsim initNscc: _maxwnd = 1.5 * _bdp).
	UETMaxWindowPermille = 1500
)

// UETPayload is the data a full-size UET packet carries: the MTU less the
// IPv4, UDP, PDS request and SES standard request headers.
func (c *Config) UETPayload() uint32 {
	return uint32(c.MTU - IPHeaderLen - wire.UDPHeaderLen - wire.UETDataOverhead)
}

// uetDefaults fills in the uet variant's settings and checks them; for
// the other variants it refuses any uet_* key that is set.
func (c *Config) uetDefaults() error {
	if c.Variant != VariantUET {
		if keys := c.prefixedKeys("uet_"); len(keys) > 0 {
			return keyErr(keys[0], "a setting of the uet variant; variant %q does not read it", c.Variant)
		}
		return nil
	}
	// As RoCE: no grants (NSCC's window is the only limit), no Homa ACKs
	// (the PSNs make delivery exactly once).
	c.UnschedBytes = c.MaxMessageBytes
	c.IncastControl = false
	c.AtLeastOnce = true
	c.UETPriority = cmp.Or(c.UETPriority, uetDataLevel)
	c.UETCtrlPriority = cmp.Or(c.UETCtrlPriority, uetControlLevel)
	if err := c.checkLevels("uet_priority", c.UETPriority, "uet_ctrl_priority", c.UETCtrlPriority); err != nil {
		return err
	}
	c.UETAckEvery = cmp.Or(c.UETAckEvery, uetAckEvery)
	if c.UETAckEvery < 1 || c.UETAckEvery > 64 {
		return keyErr("uet_ack_every", "%d packets not in 1..64", c.UETAckEvery)
	}
	c.UETEntropies = cmp.Or(c.UETEntropies, uetEntropies)
	if c.UETEntropies < 1 || c.UETEntropies > 1<<14 {
		return keyErr("uet_entropies", "%d not in 1..%d", c.UETEntropies, 1<<14)
	}
	c.UETReorderPkts = cmp.Or(c.UETReorderPkts, uetReorderPkts)
	if c.UETReorderPkts < 1 || c.UETReorderPkts > 512 {
		return keyErr("uet_reorder_pkts", "%d not in 1..512", c.UETReorderPkts)
	}
	c.UETRTO = cmp.Or(c.UETRTO, max(4*c.UnloadedRTT, 2*c.Tick))
	if c.UETRTO < 0 {
		return keyErr("uet_rto_us", "%v, expected a positive timeout", c.UETRTO)
	}
	c.UETTargetDelay = cmp.Or(c.UETTargetDelay, c.UnloadedRTT/2)
	if c.UETTargetDelay <= 0 {
		return keyErr("uet_target_qdelay_us", "%v, expected a positive delay", c.UETTargetDelay)
	}
	if c.UETMaxWindow != 0 && c.UETMaxWindow < uint32(c.MTU) {
		return keyErr("uet_max_window_bytes", "%d below one packet (mtu %d)", c.UETMaxWindow, c.MTU)
	}
	c.UETPort = cmp.Or(c.UETPort, wire.UETPort)
	if c.UETPort == wire.RoCEPort {
		return keyErr("uet_udp_port", "%d is RoCEv2's port; expected another (0: the default %d)", c.UETPort, wire.UETPort)
	}
	if c.UETPayload() < 64 {
		return keyErr("mtu", "%d leaves %d bytes of payload after UET's headers, want at least 64", c.MTU, c.UETPayload())
	}
	return nil
}

// prefixedKeys lists the keys with prefix that c sets (nonzero).
func (c *Config) prefixedKeys(prefix string) []string {
	v := reflect.ValueOf(c).Elem()
	var out []string
	for _, f := range keyFields() {
		if strings.HasPrefix(f.key, prefix) && !v.Field(f.index).IsZero() {
			out = append(out, f.key)
		}
	}
	return out
}

// checkLevels checks a transport's data and control levels against the
// priorities in use.
func (c *Config) checkLevels(dataKey string, data int, ctrlKey string, ctrl int) error {
	for _, p := range []struct {
		key string
		v   int
	}{{dataKey, data}, {ctrlKey, ctrl}} {
		if p.v < 0 || p.v >= c.Priorities {
			return keyErr(p.key, "%d not in 0..%d (priorities %d)", p.v, c.Priorities-1, c.Priorities)
		}
	}
	return nil
}
