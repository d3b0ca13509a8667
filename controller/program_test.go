package controller

import (
	"errors"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/controller/p4rtclient"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/pipeline"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestProgramThreeHostsReadsBackExactly(t *testing.T) {
	sw := startSwitch(t, "127.0.0.1:0", 1)
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
	sw.pl.Ingress(frame, 1, &v)
	if v.Drop || v.EgressPort != 2 || v.Queue != 5 {
		t.Fatalf("verdict = %+v, want port 2 queue 5", v)
	}
	if got := MAC(frame[0:6]); got != topo.Hosts[1].MAC {
		t.Errorf("dst mac = %v, want %v", got, topo.Hosts[1].MAC)
	}
}

func TestProgramMultiSwitchPaths(t *testing.T) {
	// s1 - s2 - s3 in a line, one host on port 1 of each: the middle
	// switch routes both ways, the ends send everything else to s2.
	sws := []*testSwitch{startSwitch(t, "127.0.0.1:0", 1), startSwitch(t, "127.0.0.1:0", 2), startSwitch(t, "127.0.0.1:0", 3)}
	topo := &Topology{Links: []Link{{A: "s1", APort: 4, B: "s2", BPort: 4}, {A: "s2", APort: 5, B: "s3", BPort: 4}}}
	for i, sw := range sws {
		name := "s" + string(rune('1'+i))
		topo.Switches = append(topo.Switches, Switch{Name: name, DeviceID: sw.device, Address: sw.addr})
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
		sws[tt.sw].pl.Ingress(ipv4Frame(netip.MustParseAddr(tt.dst), 0, 0), 9, &v)
		if v.Drop || v.EgressPort != tt.wantPort {
			t.Errorf("s%d to %s: verdict %+v, want port %d", tt.sw+1, tt.dst, v, tt.wantPort)
		}
	}
}

func TestBackupControllerTakesOver(t *testing.T) {
	sw := startSwitch(t, "127.0.0.1:0", 7)
	ctx := testContext(t)
	first := dial(t, sw, p4rtclient.WithElectionID(p4rtclient.ElectionID{Low: 10}))
	if err := first.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	info := torSchema(t).P4Info()
	if err := first.SetPipeline(ctx, info, nil); err != nil {
		t.Fatal(err)
	}
	second := dial(t, sw, p4rtclient.WithElectionID(p4rtclient.ElectionID{Low: 5}))
	if v, err := second.APIVersion(ctx); err != nil || v == "" {
		t.Errorf("APIVersion = %q, %v", v, err)
	}
	if second.IsPrimary() {
		t.Fatal("a controller with a lower election id became primary")
	}
	if err := second.SetPipeline(ctx, info, nil); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup SetPipeline error = %v, want PERMISSION_DENIED", err)
	}
	if err := second.FetchPipeline(ctx); err != nil {
		t.Fatal(err)
	}
	entry := p4rtclient.Entry{Table: tableDSCPToQueue, Match: []p4rtclient.Match{p4rtclient.Exact(fieldDSCP, p4rtclient.Uint(46))}, Action: actionSetQueue, Params: map[string]p4rtclient.Value{"queue": p4rtclient.Uint(7)}}
	if err := second.Insert(ctx, entry); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup Write error = %v, want PERMISSION_DENIED", err)
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := second.SetElectionID(p4rtclient.ElectionID{Low: 11}); err != nil {
		t.Fatal(err)
	}
	if err := second.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	if err := second.Insert(ctx, entry); err != nil {
		t.Fatalf("Write after taking over: %v", err)
	}
	got, err := second.ReadEntries(ctx, tableDSCPToQueue)
	if err != nil {
		t.Fatal(err)
	}
	if err := diffEntries(second.Schema(), "s", []p4rtclient.Entry{entry}, got); err != nil {
		t.Fatal(err)
	}
}

func TestRepushAfterSwitchRestart(t *testing.T) {
	sw := startSwitch(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	ctx := testContext(t)
	f := programmed(t, topo, DefaultPolicy())
	c := f.Client("s1")
	// One more entry written after Program must come back too.
	extra := p4rtclient.Entry{Table: tableDSCPToQueue, Match: []p4rtclient.Match{p4rtclient.Exact(fieldDSCP, p4rtclient.Uint(46))}, Action: actionSetQueue, Params: map[string]p4rtclient.Value{"queue": p4rtclient.Uint(7)}}
	if err := c.Insert(ctx, extra); err != nil {
		t.Fatal(err)
	}

	sw.stop()
	waitFor(t, 5*time.Second, "the client to notice the stream broke", func() bool { return !c.IsPrimary() })
	restarted := startSwitch(t, sw.addr, sw.device)
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
	restarted.pl.Ingress(ipv4Frame(netip.MustParseAddr("10.0.0.3"), 46<<2, 0), 1, &v)
	if v.Drop || v.EgressPort != 3 || v.Queue != 7 {
		t.Fatalf("restarted switch verdict = %+v, want port 3 queue 7", v)
	}
	if s := c.Stats(); s.Streams != 2 || s.PrimaryLost != 1 {
		t.Errorf("stats = %+v, want 2 streams and 1 primacy loss", s)
	}
}

func TestInvalidEntriesNameTableFieldValue(t *testing.T) {
	sw := startSwitch(t, "127.0.0.1:0", 1)
	ctx := testContext(t)
	c := dial(t, sw)
	if err := c.SetPipeline(ctx, torSchema(t).P4Info(), nil); err != nil {
		t.Fatal(err)
	}
	// Caught before the wire: a 6-bit DSCP of 64.
	err := c.Insert(ctx, p4rtclient.Entry{Table: tableDSCPToQueue, Match: []p4rtclient.Match{p4rtclient.Exact(fieldDSCP, p4rtclient.Uint(64))}, Action: actionSetQueue, Params: map[string]p4rtclient.Value{"queue": p4rtclient.Uint(1)}})
	var ee *p4rtclient.EntryError
	if !errors.As(err, &ee) || ee.Table != tableDSCPToQueue || ee.Field != fieldDSCP || !strings.Contains(err.Error(), "0x40") {
		t.Fatalf("error = %v, want an p4rtclient.EntryError naming %s, %s and 0x40", err, tableDSCPToQueue, fieldDSCP)
	}
	// Caught by the switch: inserting the same key twice in one batch; the
	// first applies, the second fails and is named.
	e := p4rtclient.Entry{Table: tableARPProxy, Match: []p4rtclient.Match{p4rtclient.Exact(fieldARPTarget, p4rtclient.IPv4(netip.MustParseAddr("10.0.0.9")))}, Action: actionARPReply, Params: map[string]p4rtclient.Value{"mac": p4rtclient.Uint(9)}}
	err = c.Insert(ctx, e, e)
	var we *p4rtclient.WriteError
	if !errors.As(err, &we) || len(we.Failed) != 1 || we.Failed[0].Index != 1 || we.Failed[0].Code != codes.AlreadyExists {
		t.Fatalf("error = %v, want one ALREADY_EXISTS failure at index 1", err)
	}
	for _, want := range []string{tableARPProxy, fieldARPTarget + "=0x0a000009"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	got, err := c.ReadEntries(ctx, tableARPProxy)
	if err != nil || len(got) != 1 {
		t.Fatalf("read back %v, %v; want the one applied entry", got, err)
	}
}

func TestWriteBeforePipelineKeepsStatus(t *testing.T) {
	sw := startSwitch(t, "127.0.0.1:0", 1)
	c := dial(t, sw)
	te, err := torSchema(t).TableEntry(p4rtclient.Entry{Table: tableDSCPToQueue, Match: []p4rtclient.Match{p4rtclient.Exact(fieldDSCP, p4rtclient.Uint(8))}, Action: actionSetQueue, Params: map[string]p4rtclient.Value{"queue": p4rtclient.Uint(1)}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Write(testContext(t), &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Write before any pipeline: %v, want FAILED_PRECONDITION", err)
	}
}

func TestDialFailsFastOnWrongDevice(t *testing.T) {
	sw := startSwitch(t, "127.0.0.1:0", 1)
	// Retrying until the timeout would end in a timeout error, not the
	// switch's NOT_FOUND.
	_, err := p4rtclient.Dial(testContext(t), sw.addr, 99, p4rtclient.WithDialTimeout(10*time.Second))
	if status.Code(err) != codes.NotFound {
		t.Fatalf("Dial of an unknown device: %v, want NOT_FOUND", err)
	}
}

func TestClientCloseLeavesNoGoroutines(t *testing.T) {
	sw := startSwitch(t, "127.0.0.1:0", 1)
	// The switch's own goroutines start asynchronously: count once they have.
	before := runtime.NumGoroutine()
	for settled := 0; settled < 5; settled++ {
		time.Sleep(10 * time.Millisecond)
		if n := runtime.NumGoroutine(); n != before {
			before, settled = n, 0
		}
	}
	c, err := p4rtclient.Dial(testContext(t), sw.addr, sw.device)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPipeline(testContext(t), torSchema(t).P4Info(), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "client and server stream goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestSyncChangesPolicyAndKeepsCounters(t *testing.T) {
	sw := startSwitch(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	ctx := testContext(t)
	f := programmed(t, topo, Policy{DSCPQueue: map[uint8]uint8{46: 7, 8: 1}})
	var v pipeline.Verdict
	sw.pl.Ingress(ipv4Frame(netip.MustParseAddr("10.0.0.1"), 46<<2, 0), 2, &v)
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
	sw.pl.Ingress(ipv4Frame(netip.MustParseAddr("10.0.0.1"), 7<<5, 0), 2, &v)
	if v.Queue != 1 {
		t.Fatalf("CS7 after collapse:2 went to queue %d, want 1", v.Queue)
	}
	// The EF packet counted before the sync is still counted: no pipeline push.
	if pkts, _, err := sw.pl.Counter(p4.CounterIngressQueue, int(p4.QueueIndex(1, 7))); err != nil || pkts != 1 {
		t.Fatalf("ingress counter of port 1 queue 7 = %d, %v; want 1 kept across Sync", pkts, err)
	}
}

func TestDialWaitsForALateSwitch(t *testing.T) {
	// Reserve a port, then start the switch on it only after Dial began.
	probe := startSwitch(t, "127.0.0.1:0", 1)
	addr := probe.addr
	probe.stop()
	type dialed struct {
		c   *p4rtclient.Client
		err error
	}
	result := make(chan dialed, 1)
	go func() {
		c, err := p4rtclient.Dial(testContext(t), addr, 1, p4rtclient.WithDialTimeout(10*time.Second))
		result <- dialed{c, err}
	}()
	time.Sleep(300 * time.Millisecond) // p4rtclient.Dial is retrying meanwhile
	sw := startSwitch(t, addr, 1)
	r := <-result
	if r.err != nil {
		t.Fatalf("Dial of a switch that starts late: %v", r.err)
	}
	c := r.c
	t.Cleanup(func() { _ = c.Close() })
	if err := c.WaitPrimary(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPipeline(testContext(t), torSchema(t).P4Info(), nil); err != nil {
		t.Fatalf("SetPipeline on %s: %v", sw.addr, err)
	}
}

func TestDialTimesOutWithoutSwitch(t *testing.T) {
	probe := startSwitch(t, "127.0.0.1:0", 1)
	probe.stop()
	_, err := p4rtclient.Dial(testContext(t), probe.addr, 1, p4rtclient.WithDialTimeout(300*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "no arbitration answer") || !strings.Contains(err.Error(), probe.addr) {
		t.Fatalf("Dial of a dead address: %v, want a timeout naming %s", err, probe.addr)
	}
}

// After a controller used a higher election id, a later one with a lower id
// can never be primary on a switch that follows the spec: WaitPrimary must
// say so at once instead of waiting out its deadline.
func TestWaitPrimaryFailsFastBelowTheSwitchsElectionID(t *testing.T) {
	sw := startSwitch(t, "127.0.0.1:0", 7)
	high := dial(t, sw, p4rtclient.WithElectionID(p4rtclient.ElectionID{Low: 100}))
	if err := high.WaitPrimary(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := high.Close(); err != nil {
		t.Fatal(err)
	}
	low := dial(t, sw, p4rtclient.WithElectionID(p4rtclient.ElectionID{Low: 5}))
	start := time.Now()
	err := low.WaitPrimary(testContext(t))
	if err == nil || !strings.Contains(err.Error(), "switch has seen election id 100; use an id of at least 100") {
		t.Fatalf("WaitPrimary = %v, want the switch's election id named", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("WaitPrimary took %v to fail", d)
	}
	if err := low.SetElectionID(p4rtclient.ElectionID{Low: 100}); err != nil {
		t.Fatal(err)
	}
	if err := low.WaitPrimary(testContext(t)); err != nil {
		t.Fatalf("WaitPrimary after taking the id the switch asked for: %v", err)
	}
}
