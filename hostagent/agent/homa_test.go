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
