package agent

import (
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
)

func TestHomaConfig(t *testing.T) {
	p := &agentpb.HomaParams{LinkBps: 10e9, Overcommit: 2, Priorities: 4, TickUs: 250, UnloadedRttUs: 20,
		Extra: map[string]string{"fifo_grants": "off", "resend_interval": "3", "max_nic_backlog_us": "40", "poll_us": "50", "frame_overhead": "14"}}
	c, err := homaConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.LinkBps != 10e9 || c.Overcommit != 2 || c.Priorities != 4 || c.Tick != 250*time.Microsecond ||
		c.UnloadedRTT != 20*time.Microsecond || !c.DisableFIFOGrants || c.ResendInterval != 3 || c.MaxNICBacklog != 40*time.Microsecond ||
		c.Poll != 50*time.Microsecond || c.FrameOverhead != 14 {
		t.Errorf("config %+v", c)
	}
	if d, _ := c.WithDefaults(); d.FIFOGrantPermille != 0 {
		t.Errorf("fifo_grants=off left permille %d", d.FIFOGrantPermille)
	}
	for _, extra := range []map[string]string{{"nope": "1"}, {"resend_interval": "x"}} {
		if _, err := homaConfig(&agentpb.HomaParams{Extra: extra}); err == nil {
			t.Errorf("extra %v accepted", extra)
		}
	}
}

// TestEngineVariants checks that the comparison transports are built on
// the engine: each name selects its variant through the extra key, and
// the records carry the name.
func TestEngineVariants(t *testing.T) {
	for _, name := range []string{"homa", "pfabric", "phost", "ndp"} {
		v, ok := EngineVariant(name)
		if !ok || string(v) != name {
			t.Errorf("EngineVariant(%q) = %q, %v", name, v, ok)
		}
		req := &agentpb.ConfigureRequest{Transport: agentpb.Transport_TRANSPORT_HOMA,
			Homa: &agentpb.HomaParams{Extra: map[string]string{"variant": name}}}
		c, err := homaConfig(req.GetHoma())
		if err != nil || c.Variant != v {
			t.Errorf("%s: config variant %q, %v", name, c.Variant, err)
		}
		if got := transportLabel(req); got != name {
			t.Errorf("%s: records name %q", name, got)
		}
	}
	if _, ok := EngineVariant("pias"); ok {
		t.Error("pias is not an engine variant")
	}
	if got := transportLabel(&agentpb.ConfigureRequest{Transport: agentpb.Transport_TRANSPORT_HOMA}); got != "homa" {
		t.Errorf("plain homa named %q", got)
	}
}
