package hostqdisc

import (
	"strings"
	"testing"
)

// TestNewPlan: each class is guaranteed half the link and may take all of
// it, Homa's is served first, and bad links are refused.
func TestNewPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bps     uint64
		mtu     int
		want    Plan
		wantErr string
	}{
		{name: "100 Mbit/s", bps: 100_000_000, mtu: 1500, want: Plan{
			Homa: Class{Minor: HomaMinor, RateBps: 50_000_000, CeilBps: 100_000_000, Prio: 0, BurstBytes: 15000, QuantumBytes: 1514},
			TCP:  Class{Minor: TCPMinor, RateBps: 50_000_000, CeilBps: 100_000_000, Prio: 1, BurstBytes: 15000, QuantumBytes: 1514}}},
		{name: "jumbo frames keep a burst of one frame", bps: 1_000_000_000, mtu: 20000, want: Plan{
			Homa: Class{Minor: HomaMinor, RateBps: 500_000_000, CeilBps: 1_000_000_000, Prio: 0, BurstBytes: 20014, QuantumBytes: 20014},
			TCP:  Class{Minor: TCPMinor, RateBps: 500_000_000, CeilBps: 1_000_000_000, Prio: 1, BurstBytes: 20014, QuantumBytes: 20014}}},
		{name: "no rate", bps: 0, mtu: 1500, wantErr: "expected a rate to divide"},
		{name: "bad MTU", bps: 1e8, mtu: 40, wantErr: "MTU 40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(tc.bps, tc.mtu)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p != tc.want {
				t.Errorf("got %+v\nwant %+v", p, tc.want)
			}
			if cs := p.Classes(); cs[0].RateBps+cs[1].RateBps > tc.bps {
				t.Errorf("guarantees %d + %d exceed the link's %d", cs[0].RateBps, cs[1].RateBps, tc.bps)
			}
		})
	}
}

// TestStatsMap: the counters are differenced against the start.
func TestStatsMap(t *testing.T) {
	a := Stats{Homa: Counters{Bytes: 100, Packets: 2, Drops: 1}, TCP: Counters{Bytes: 1000, Packets: 10}}
	b := Stats{Homa: Counters{Bytes: 600, Packets: 7, Drops: 1}, TCP: Counters{Bytes: 9000, Packets: 20, Drops: 3}}
	m := b.Map(a)
	want := map[string]uint64{"qdisc_homa_bytes": 500, "qdisc_homa_packets": 5, "qdisc_homa_drops": 0,
		"qdisc_tcp_bytes": 8000, "qdisc_tcp_packets": 10, "qdisc_tcp_drops": 3}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %d, want %d", k, m[k], v)
		}
	}
	if len(m) != len(want) {
		t.Errorf("got %d counters, want %d: %v", len(m), len(want), m)
	}
}
