package controller

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/controller/p4rtclient"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/pipeline"
	"github.com/homatb/homatb/p4/target/targettest"
)

func TestProgramThreeHostsReadsBackExactly(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	ctx := testContext(t)
	policy := Policy{ECNThresholdPkts: 20}
	f := programmed(t, topo, policy)
	want, err := topo.switchEntries("s1", policy)
	if err != nil {
		t.Fatal(err)
	}
	// 3 routes, 8 DSCP classes, 3 ARP answers, 3 ECN ports.
	if len(want) != 3+p4.QueuesPerPort+3+3 {
		t.Fatalf("switchEntries = %d entries, want %d", len(want), 3+p4.QueuesPerPort+3+3)
	}
	got, err := f.Client("s1").ReadEntries(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read back %d entries, wrote %d", len(got), len(want))
	}
	if err := diffEntries(f.Client("s1").Schema(), "s1", want, got); err != nil {
		t.Fatal(err)
	}

	// The pipeline now forwards: CS5 to h2 leaves on port 2, queue 5, with
	// h2's MAC as destination.
	frame := ipv4Frame(netip.MustParseAddr("10.0.0.2"), 5<<5, 10)
	var v pipeline.Verdict
	sw.Pipeline().Ingress(frame, 1, &v)
	if v.Drop || v.EgressPort != 2 || v.Queue != 5 {
		t.Fatalf("verdict = %+v, want port 2 queue 5", v)
	}
	if got := MAC(frame[0:6]); got != topo.Hosts[1].MAC {
		t.Errorf("dst mac = %v, want %v", got, topo.Hosts[1].MAC)
	}
}

// TestProgramREDProfile programs a RED profile and reads it back: the
// embedded target's ecn_config holds set_ecn_red with the slope of the
// profile on every port.
func TestProgramREDProfile(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	policy := Policy{ECNRED: ECNProfile{KminPkts: 5, KmaxPkts: 37, Pmax: 0.25}}
	f := programmed(t, topo, policy)
	got, err := f.Client("s1").ReadEntries(testContext(t), tableECNConfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("read back %d ecn_config entries, want one per port (3)", len(got))
	}
	const slope uint64 = 0.25 * p4.ECNSlopeOne / 32
	for _, e := range got {
		if v, err := e.Params["slope"].Uint64(); e.Action != actionSetECNRED || err != nil || v != slope {
			t.Errorf("entry %+v, want set_ecn_red with slope %d", e, slope)
		}
	}
}

func TestProgramMultiSwitchPaths(t *testing.T) {
	// s1 - s2 - s3 in a line, one host on port 1 of each: the middle
	// switch routes both ways, the ends send everything else to s2.
	sws := []*targettest.Switch{targettest.Start(t, "127.0.0.1:0", 1), targettest.Start(t, "127.0.0.1:0", 2), targettest.Start(t, "127.0.0.1:0", 3)}
	topo := &Topology{Links: []Link{{A: "s1", APort: 4, B: "s2", BPort: 4}, {A: "s2", APort: 5, B: "s3", BPort: 4}}}
	for i, sw := range sws {
		name := "s" + string(rune('1'+i))
		topo.Switches = append(topo.Switches, Switch{Name: name, DeviceID: sw.DeviceID(), Address: sw.Addr()})
		topo.Hosts = append(topo.Hosts, Host{Name: "h" + string(rune('1'+i)), IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}),
			MAC: MAC{2, 0, 0, 0, 0, byte(i + 1)}, Switch: name, Port: 1})
	}
	ctx := testContext(t)
	if err := program(ctx, topo, DefaultPolicy(), p4rtclient.WithDialTimeout(5*time.Second)); err != nil {
		t.Fatalf("Program: %v", err)
	}
	tests := []struct {
		sw       int
		dst      string
		wantPort uint16
	}{
		{0, "10.0.0.1", 1}, {0, "10.0.0.2", 4}, {0, "10.0.0.3", 4},
		{1, "10.0.0.1", 4}, {1, "10.0.0.3", 5},
		{2, "10.0.0.1", 4}, {2, "10.0.0.3", 1},
	}
	for _, tt := range tests {
		var v pipeline.Verdict
		sws[tt.sw].Pipeline().Ingress(ipv4Frame(netip.MustParseAddr(tt.dst), 0, 0), 9, &v)
		if v.Drop || v.EgressPort != tt.wantPort {
			t.Errorf("s%d to %s: verdict %+v, want port %d", tt.sw+1, tt.dst, v, tt.wantPort)
		}
	}
}

func TestRepushAfterSwitchRestart(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	ctx := testContext(t)
	f := programmed(t, topo, DefaultPolicy())
	c := f.Client("s1")
	// One more entry written after Program must come back too.
	extra := p4rtclient.Entry{Table: tableDSCPToQueue, Match: []p4rtclient.Match{p4rtclient.Exact(fieldDSCP, p4rtclient.Uint(46))}, Action: actionSetQueue, Params: map[string]p4rtclient.Value{"queue": p4rtclient.Uint(7)}}
	if err := c.Insert(ctx, extra); err != nil {
		t.Fatal(err)
	}

	if err := sw.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the client to notice the stream broke", func() bool { return !c.IsPrimary() })
	restarted := targettest.Start(t, sw.Addr(), sw.DeviceID())
	waitFor(t, 10*time.Second, "the re-push", func() bool { return c.Stats().Repushes == 1 })
	if err := c.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := topo.switchEntries("s1", DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ReadEntries(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := diffEntries(c.Schema(), "s1", append(want, extra), got); err != nil {
		t.Fatal(err)
	}
	var v pipeline.Verdict
	restarted.Pipeline().Ingress(ipv4Frame(netip.MustParseAddr("10.0.0.3"), 46<<2, 0), 1, &v)
	if v.Drop || v.EgressPort != 3 || v.Queue != 7 {
		t.Fatalf("restarted switch verdict = %+v, want port 3 queue 7", v)
	}
	if s := c.Stats(); s.Streams != 2 || s.PrimaryLost != 1 {
		t.Errorf("stats = %+v, want 2 streams and 1 primacy loss", s)
	}
}

func TestSyncChangesPolicyAndKeepsCounters(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	ctx := testContext(t)
	f := programmed(t, topo, Policy{DSCPQueue: map[uint8]uint8{46: 7, 8: 1}})
	var v pipeline.Verdict
	sw.Pipeline().Ingress(ipv4Frame(netip.MustParseAddr("10.0.0.1"), 46<<2, 0), 2, &v)
	if v.Queue != 7 {
		t.Fatalf("EF before sync went to queue %d, want 7", v.Queue)
	}

	// collapse:2 keeps DSCP 8 (CS1) but moves it to queue 0, drops 46, adds
	// the other class selectors; ECN entries appear on every port.
	next, err := CollapsedDSCPQueues(2)
	if err != nil {
		t.Fatal(err)
	}
	policy := Policy{DSCPQueue: next, ECNThresholdPkts: 15}
	want, err := topo.switchEntries("s1", policy)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Client("s1").ReadEntries(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planSync(f.Client("s1").Schema(), want, got)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Delete) != 1 || len(plan.Modify) != 1 || len(plan.Insert) != 7+3 {
		t.Fatalf("plan: %d deletes, %d modifies, %d inserts; want 1, 1 (CS1), 10 (7 DSCP + 3 ECN)", len(plan.Delete), len(plan.Modify), len(plan.Insert))
	}
	if err := f.Sync(ctx, policy); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	sw.Pipeline().Ingress(ipv4Frame(netip.MustParseAddr("10.0.0.1"), 7<<5, 0), 2, &v)
	if v.Queue != 1 {
		t.Fatalf("CS7 after collapse:2 went to queue %d, want 1", v.Queue)
	}
	// The EF packet counted before the sync is still counted: no pipeline push.
	if pkts, _, err := sw.Pipeline().Counter(p4.CounterIngressQueue, int(p4.QueueIndex(1, 7))); err != nil || pkts != 1 {
		t.Fatalf("ingress counter of port 1 queue 7 = %d, %v; want 1 kept across Sync", pkts, err)
	}
}
