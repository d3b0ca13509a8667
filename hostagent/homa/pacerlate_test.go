package homa_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// TestPacerLateness sends one message from a Driven pFabric Endpoint (no
// grants: only the pacer holds its DATA) at 25 Mbit/s with a backlog of
// 500 µs, one 1,542 B packet, and delivers every pacer wake-up late by a
// fixed amount. The pacer wakes with the whole backlog still queued, so
// a wake-up up to 500 µs late costs the link nothing, and PacerLateNs
// counts the rest of each later one: the link time lost to the wake-ups.
func TestPacerLateness(t *testing.T) {
	const us = time.Microsecond
	for _, tt := range []struct {
		name    string
		late    time.Duration
		perWake time.Duration // link time lost per late wake-up
	}{
		{"on time", 0, 0},
		{"within the backlog", 450 * us, 0},
		{"beyond the backlog", 800 * us, 300 * us},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var now time.Duration
			o := &outbox{addr: cliAddr}
			cfg := homaconf.Config{LinkBps: 25e6, MaxNICBacklog: 500 * us, Variant: homaconf.VariantPFabric}
			d, err := homa.NewDriven(o, cfg, homa.DrivenConfig{Clock: func() time.Duration { return now }}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			d.Call(netip.AddrPortFrom(srvAddr, serverPort), make([]byte, 32000), func([]byte, homa.CallInfo, error) {})
			wakes := 0
			for ; wakes < 100; wakes++ {
				at, armed := d.Timer()
				if !armed {
					break
				}
				sent := len(o.take())
				now = at + tt.late
				d.Wake()
				if sent == 0 && wakes > 0 {
					t.Fatalf("wake-up %d found no room for a packet", wakes)
				}
			}
			if wakes < 5 || wakes == 100 {
				t.Fatalf("%d pacer wake-ups for a 32 KB message", wakes)
			}
			got := time.Duration(d.Endpoint().Stats().PacerLateNs)
			if want := time.Duration(wakes) * tt.perWake; got != want {
				t.Errorf("PacerLateNs %v after %d wake-ups %v late, want %v", got, wakes, tt.late, want)
			}
		})
	}
}
