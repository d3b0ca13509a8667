package controller

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/pipeline"
	"github.com/homatb/homatb/p4/target/targettest"
)

func TestDefencesValidate(t *testing.T) {
	meter := func(queues ...uint8) Meter { return Meter{Queues: queues, RateBytes: 125000, BurstBytes: 15000} }
	tests := []struct {
		name    string
		d       Defences
		wantErr string
	}{
		{"none", Defences{}, ""},
		{"all", Defences{Untrusted: []string{"h1"}, AntiSpoofing: true, Meters: []Meter{meter(6, 7)}}, ""},
		{"remark beyond DSCP", Defences{RemarkDSCP: 64}, "outside 0..63"},
		{"queue twice", Defences{Meters: []Meter{meter(7), meter(6, 7)}}, "queue 7 is in meters 0 and 1"},
		{"queue 8", Defences{Meters: []Meter{meter(8)}}, "queue 8 outside"},
		{"no queue", Defences{Meters: []Meter{meter()}}, "no queue"},
		{"zero rate", Defences{Meters: []Meter{{Queues: []uint8{7}, BurstBytes: 1}}}, "expected positive"},
		{"five meters", Defences{Meters: []Meter{meter(0), meter(1), meter(2), meter(3), meter(4)}}, "room for 4"},
	}
	for _, tc := range tests {
		errorChecked(t, tc.name, tc.d.Validate(), tc.wantErr)
	}
}

// TestProgramDefences programs every defence on an embedded switch with
// h1 untrusted, reads entries and meters back (Program verifies both),
// and checks the pipeline: h1's CS7 re-marked to queue 0, h2's kept; a
// spoofed source dropped and counted; h2's CS7 metered into queue 0 once
// its burst is spent. Syncing to no defences removes every entry.
func TestProgramDefences(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	pol := Policy{Defences: Defences{Untrusted: []string{"h1"}, AntiSpoofing: true,
		Meters: []Meter{{Queues: []uint8{6, 7}, RateBytes: 1000, BurstBytes: 3000}}}}
	f := programmed(t, topo, pol)
	pl := sw.Pipeline()
	send := func(src string, inPort uint16, tos byte) pipeline.Verdict {
		fr := ipv4Frame(netip.MustParseAddr("10.0.0.3"), tos, 1000)
		s := netip.MustParseAddr(src).As4()
		copy(fr[14+12:], s[:])
		var v pipeline.Verdict
		pl.Ingress(fr, inPort, &v)
		return v
	}
	if v := send("10.0.0.1", 1, 7<<5); v.Drop || v.Queue != 0 {
		t.Errorf("untrusted h1's CS7: %+v, want queue 0", v)
	}
	if v := send("10.0.0.9", 1, 0); !v.Drop {
		t.Errorf("h1 spoofing 10.0.0.9: %+v, want dropped", v)
	}
	// h2 is trusted: two 1,034-byte frames fit the 3,000-byte burst; at
	// 1,000 B/s the third is red and re-marked to queue 0.
	var queues []uint8
	for range 3 {
		queues = append(queues, send("10.0.0.2", 2, 7<<5).Queue)
	}
	if queues[0] != 7 || queues[1] != 7 || queues[2] != 0 {
		t.Errorf("h2's metered CS7 queues %v, want [7 7 0]", queues)
	}
	for _, c := range []struct {
		id   uint32
		port int
		want uint64
	}{{p4.CounterRemark, 1, 1}, {p4.CounterSpoof, 1, 1}, {p4.CounterMeter, 2, 1}, {p4.CounterMeter, 1, 0}} {
		if got, _, _ := pl.Counter(c.id, c.port); got != c.want {
			t.Errorf("counter %#x[%d] = %d, want %d", c.id, c.port, got, c.want)
		}
	}
	ctx := testContext(t)
	// The same counts over P4Runtime, as a BMv2 run reads them.
	counts, err := f.DefenceCounters(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := []DefenceCount{{Port: 1, Remarked: 1, Spoofed: 1}, {Port: 2, Metered: 1}, {Port: 3}}
	if !slices.Equal(counts, wantCounts) {
		t.Errorf("DefenceCounters = %+v, want %+v", counts, wantCounts)
	}
	if _, err := f.DefenceCounters(ctx, "s9"); err == nil {
		t.Error("DefenceCounters of an unknown switch: no error")
	}
	if err := f.Sync(ctx, Policy{}); err != nil {
		t.Fatal(err)
	}
	all, err := f.Client("s1").ReadEntries(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if strings.Contains(e.Table, "defence") || e.Table == tableSourceGuard || e.Table == tableMeterSelect {
			t.Errorf("after a sync to no defences: %v", e)
		}
	}
	if v := send("10.0.0.9", 1, 7<<5); v.Drop || v.Queue != 7 {
		t.Errorf("no defences: %+v, want queue 7", v)
	}
}

func TestDefencesNameHosts(t *testing.T) {
	topo := twoSwitchTopology()
	_, err := topo.switchEntries("s1", Policy{Defences: Defences{Untrusted: []string{"h9"}}})
	if err == nil || !strings.Contains(err.Error(), `untrusted host "h9"`) {
		t.Errorf("unknown untrusted host: %v", err)
	}
	// Ports between switches carry no defence entry.
	es, err := topo.switchEntries("s1", Policy{Defences: Defences{AntiSpoofing: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Table == tableDefence {
			if p, _ := e.Match[0].Value.Uint64(); p == 4 {
				t.Errorf("the inter-switch port has a defence entry: %v", e)
			}
		}
	}
}
