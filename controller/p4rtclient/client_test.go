package p4rtclient

import (
	"errors"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/p4/target/targettest"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestBackupControllerTakesOver(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 7)
	ctx := testContext(t)
	first := dial(t, sw, WithElectionID(ElectionID{Low: 10}))
	if err := first.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	info := torSchema(t).P4Info()
	if err := first.SetPipeline(ctx, info, nil); err != nil {
		t.Fatal(err)
	}
	second := dial(t, sw, WithElectionID(ElectionID{Low: 5}))
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
	entry := Entry{Table: "TorIngress.dscp_to_queue", Match: []Match{Exact("hdr.ipv4.dscp", Uint(46))}, Action: "TorIngress.set_queue", Params: map[string]Value{"queue": Uint(7)}}
	if err := second.Insert(ctx, entry); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup Write error = %v, want PERMISSION_DENIED", err)
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := second.SetElectionID(ElectionID{Low: 11}); err != nil {
		t.Fatal(err)
	}
	if err := second.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	if err := second.Insert(ctx, entry); err != nil {
		t.Fatalf("Write after taking over: %v", err)
	}
	got, err := second.ReadEntries(ctx, "TorIngress.dscp_to_queue")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].String() != entry.String() {
		t.Fatalf("read back %v, want [%v]", got, entry)
	}
}

func TestInvalidEntriesNameTableFieldValue(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	ctx := testContext(t)
	c := dial(t, sw)
	if err := c.SetPipeline(ctx, torSchema(t).P4Info(), nil); err != nil {
		t.Fatal(err)
	}
	// Caught before the wire: a 6-bit DSCP of 64.
	err := c.Insert(ctx, Entry{Table: "TorIngress.dscp_to_queue", Match: []Match{Exact("hdr.ipv4.dscp", Uint(64))}, Action: "TorIngress.set_queue", Params: map[string]Value{"queue": Uint(1)}})
	var ee *EntryError
	if !errors.As(err, &ee) || ee.Table != "TorIngress.dscp_to_queue" || ee.Field != "hdr.ipv4.dscp" || !strings.Contains(err.Error(), "0x40") {
		t.Fatalf("error = %v, want an *EntryError naming %s, %s and 0x40", err, "TorIngress.dscp_to_queue", "hdr.ipv4.dscp")
	}
	// Caught by the switch: inserting the same key twice in one batch; the
	// first applies, the second fails and is named.
	e := Entry{Table: "TorIngress.arp_proxy", Match: []Match{Exact("hdr.arp.tpa", IPv4(netip.MustParseAddr("10.0.0.9")))}, Action: "TorIngress.arp_reply", Params: map[string]Value{"mac": Uint(9)}}
	err = c.Insert(ctx, e, e)
	var we *WriteError
	if !errors.As(err, &we) || len(we.Failed) != 1 || we.Failed[0].Index != 1 || we.Failed[0].Code != codes.AlreadyExists {
		t.Fatalf("error = %v, want one ALREADY_EXISTS failure at index 1", err)
	}
	for _, want := range []string{"TorIngress.arp_proxy", "hdr.arp.tpa" + "=0x0a000009"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	got, err := c.ReadEntries(ctx, "TorIngress.arp_proxy")
	if err != nil || len(got) != 1 {
		t.Fatalf("read back %v, %v; want the one applied entry", got, err)
	}
}

func TestWriteBeforePipelineKeepsStatus(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	c := dial(t, sw)
	te, err := torSchema(t).TableEntry(Entry{Table: "TorIngress.dscp_to_queue", Match: []Match{Exact("hdr.ipv4.dscp", Uint(8))}, Action: "TorIngress.set_queue", Params: map[string]Value{"queue": Uint(1)}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Write(testContext(t), &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Write before any pipeline: %v, want FAILED_PRECONDITION", err)
	}
}

func TestDialFailsFastOnWrongDevice(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	// Retrying until the timeout would end in a timeout error, not the
	// switch's NOT_FOUND.
	_, err := Dial(testContext(t), sw.Addr(), 99, WithDialTimeout(10*time.Second))
	if status.Code(err) != codes.NotFound {
		t.Fatalf("Dial of an unknown device: %v, want NOT_FOUND", err)
	}
}

func TestClientCloseLeavesNoGoroutines(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	// The switch's own goroutines start asynchronously: count once they have.
	before := runtime.NumGoroutine()
	for settled := 0; settled < 5; settled++ {
		time.Sleep(10 * time.Millisecond)
		if n := runtime.NumGoroutine(); n != before {
			before, settled = n, 0
		}
	}
	c, err := Dial(testContext(t), sw.Addr(), sw.DeviceID())
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

func TestDialWaitsForALateSwitch(t *testing.T) {
	// Reserve a port, then start the switch on it only after Dial began.
	probe := targettest.Start(t, "127.0.0.1:0", 1)
	addr := probe.Addr()
	if err := probe.Stop(); err != nil {
		t.Fatal(err)
	}
	type dialed struct {
		c   *Client
		err error
	}
	result := make(chan dialed, 1)
	go func() {
		c, err := Dial(testContext(t), addr, 1, WithDialTimeout(10*time.Second))
		result <- dialed{c, err}
	}()
	time.Sleep(300 * time.Millisecond) // Dial is retrying meanwhile
	sw := targettest.Start(t, addr, 1)
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
		t.Fatalf("SetPipeline on %s: %v", sw.Addr(), err)
	}
}

func TestDialTimesOutWithoutSwitch(t *testing.T) {
	probe := targettest.Start(t, "127.0.0.1:0", 1)
	if err := probe.Stop(); err != nil {
		t.Fatal(err)
	}
	_, err := Dial(testContext(t), probe.Addr(), 1, WithDialTimeout(300*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "no arbitration answer") || !strings.Contains(err.Error(), probe.Addr()) {
		t.Fatalf("Dial of a dead address: %v, want a timeout naming %s", err, probe.Addr())
	}
}

// After a controller used a higher election id, a later one with a lower id
// can never be primary on a switch that follows the spec: WaitPrimary must
// say so at once instead of waiting out its deadline.
func TestWaitPrimaryFailsFastBelowTheSwitchsElectionID(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 7)
	high := dial(t, sw, WithElectionID(ElectionID{Low: 100}))
	if err := high.WaitPrimary(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := high.Close(); err != nil {
		t.Fatal(err)
	}
	low := dial(t, sw, WithElectionID(ElectionID{Low: 5}))
	start := time.Now()
	err := low.WaitPrimary(testContext(t))
	if err == nil || !strings.Contains(err.Error(), "switch has seen election id 100; use an id of at least 100") {
		t.Fatalf("WaitPrimary = %v, want the switch's election id named", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("WaitPrimary took %v to fail", d)
	}
	if err := low.SetElectionID(ElectionID{Low: 100}); err != nil {
		t.Fatal(err)
	}
	if err := low.WaitPrimary(testContext(t)); err != nil {
		t.Fatalf("WaitPrimary after taking the id the switch asked for: %v", err)
	}
}

// TestRepushNeedsTheCopy has another controller replace the switch's
// pipeline (clearing its tables) while the client is a backup, then hand
// primacy back: the client re-pushes its entries from its copy, and one
// made WithoutRepush keeps none and says so instead.
func TestRepushNeedsTheCopy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []Option
		repush  bool
		entries int
	}{
		{name: "default", repush: true, entries: 1},
		{name: "without repush", opts: []Option{WithoutRepush()}, repush: false, entries: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := targettest.Start(t, "127.0.0.1:0", 7)
			ctx := testContext(t)
			c := dial(t, sw, append([]Option{WithElectionID(ElectionID{Low: 10})}, tc.opts...)...)
			if err := c.WaitPrimary(ctx); err != nil {
				t.Fatal(err)
			}
			info := torSchema(t).P4Info()
			if err := c.SetPipeline(ctx, info, nil); err != nil {
				t.Fatal(err)
			}
			entry := Entry{Table: "TorIngress.dscp_to_queue", Match: []Match{Exact("hdr.ipv4.dscp", Uint(46))}, Action: "TorIngress.set_queue", Params: map[string]Value{"queue": Uint(7)}}
			if err := c.Insert(ctx, entry); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			kept := len(c.written)
			c.mu.Unlock()
			if want := map[bool]int{true: 1, false: 0}[tc.repush]; kept != want {
				t.Fatalf("the client keeps %d entities to re-push, want %d", kept, want)
			}

			other := dial(t, sw, WithElectionID(ElectionID{Low: 11}))
			if err := other.WaitPrimary(ctx); err != nil {
				t.Fatal(err)
			}
			if err := other.SetPipeline(ctx, info, nil); err != nil {
				t.Fatal(err)
			}
			if err := other.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.SetElectionID(ElectionID{Low: 12}); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitPrimary(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.repush {
				waitFor(t, 10*time.Second, "the re-push", func() bool { return c.Stats().Repushes == 1 })
			} else {
				waitFor(t, 10*time.Second, "the client's error", func() bool { return c.LastError() != nil })
				if !strings.Contains(c.LastError().Error(), "no copy") || c.Stats().Repushes != 0 {
					t.Fatalf("LastError %v after %d re-pushes, want the missing copy named and none", c.LastError(), c.Stats().Repushes)
				}
			}
			got, err := c.ReadEntries(ctx, "TorIngress.dscp_to_queue")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.entries {
				t.Fatalf("the switch holds %v, want %d entries", got, tc.entries)
			}
		})
	}
}
