package switches

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/testbed/topo"
)

type fakeCounters struct {
	queues   []controller.Sample
	defences []controller.DefenceCount
}

func (f fakeCounters) QueueCounters(context.Context, string) ([]controller.Sample, error) {
	return f.queues, nil
}

func (f fakeCounters) DefenceCounters(context.Context, string) ([]controller.DefenceCount, error) {
	return f.defences, nil
}

// shaperJSON is `tc -s -j qdisc show` of one port shaper: the htb root
// and a FIFO per queue, queue q under class 1:1q.
func shaperJSON(sent, drops, qlen map[int]uint64) string {
	parts := []string{`{"kind":"htb","handle":"1:","root":true,"bytes":999999,"packets":9999,"drops":0,"backlog":0,"qlen":0}`}
	for q := range 8 {
		parts = append(parts, fmt.Sprintf(`{"kind":"pfifo","handle":"2%d:","parent":"1:1%d","options":{"limit":64},"bytes":%d,"packets":%d,"drops":%d,"overlimits":0,"requeues":0,"backlog":%d,"qlen":%d}`,
			q, q, sent[q]*1000, sent[q], drops[q], qlen[q]*1000, qlen[q]))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestBMv2StatsFetch: a BMv2 port's queue statistics join tor.p4's
// counters (what entered BMv2's queue, what left it) with the port
// shaper's classes (what left the port, what its FIFO dropped).
func TestBMv2StatsFetch(t *testing.T) {
	sw := topo.Switch{Name: "s1", DeviceID: 1, Ports: []int{1, 2}, Intfs: map[int]string{1: "hb-s1-p1", 2: "hb-s1-p2"}, NetNS: "/proc/1/ns/net"}
	ctr := fakeCounters{queues: []controller.Sample{
		{Switch: "s1", Port: 1, Queue: 0, EnqPkts: 100, EnqBytes: 100000, SentPkts: 90, SentBytes: 90000}, // 10 dropped in BMv2
		{Switch: "s1", Port: 1, Queue: 7, EnqPkts: 50, EnqBytes: 5000, SentPkts: 50, SentBytes: 5000},
		{Switch: "s1", Port: 2, Queue: 3, EnqPkts: 7, EnqBytes: 700, SentPkts: 7, SentBytes: 700},
	}, defences: []controller.DefenceCount{{Port: 1}, {Port: 2, Remarked: 4, Metered: 5, Spoofed: 6}}}
	tc := map[string]string{
		"hb-s1-p1": shaperJSON(map[int]uint64{0: 85, 7: 50}, map[int]uint64{0: 3}, map[int]uint64{0: 2}),
		"hb-s1-p2": shaperJSON(map[int]uint64{3: 7}, nil, nil),
	}
	b := NewBMv2Stats(sw, 10e6, ctr)
	var calls []string
	b.tc = func(_ context.Context, args ...string) ([]byte, error) {
		calls = append(calls, strings.Join(args, " "))
		return []byte(tc[args[len(args)-1]]), nil
	}
	st, err := b.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0] != "-s -j qdisc show dev hb-s1-p1" {
		t.Errorf("tc calls %q", calls)
	}
	if len(st.Ports) != 2 || st.Ports[0].Port != 1 || st.Ports[0].RateBps != 10e6 || len(st.Ports[0].Queues) != 8 {
		t.Fatalf("ports %+v", st.Ports)
	}
	q0, q7 := st.Ports[0].Queues[0], st.Ports[0].Queues[7]
	want0 := switchstats.Queue{Queue: 0, EnqPkts: 100, EnqBytes: 100000, SentPkts: 85, SentBytes: 85000, DropPkts: 10 + 3, DepthPkts: 2, DepthBytes: 2000}
	if q0 != want0 {
		t.Errorf("queue 0 = %+v, want %+v", q0, want0)
	}
	if q7.SentPkts != 50 || q7.DropPkts != 0 || st.Ports[0].TxPkts != 135 || st.Ports[1].Queues[3].SentPkts != 7 {
		t.Errorf("queue 7 %+v, port tx %d, port 2 queue 3 %+v", q7, st.Ports[0].TxPkts, st.Ports[1].Queues[3])
	}

	if p1, p2 := st.Ports[0], st.Ports[1]; p1.RemarkedPkts+p1.MeteredPkts+p1.SpoofDrops != 0 ||
		p2.RemarkedPkts != 4 || p2.MeteredPkts != 5 || p2.SpoofDrops != 6 {
		t.Errorf("defences: port 1 %d/%d/%d, port 2 %d/%d/%d, want 0/0/0 and 4/5/6", p1.RemarkedPkts, p1.MeteredPkts, p1.SpoofDrops,
			p2.RemarkedPkts, p2.MeteredPkts, p2.SpoofDrops)
	}

	// A port without its shaper (the network was built without one) is an
	// error, not zeros.
	tc["hb-s1-p2"] = `[{"kind":"noqueue","handle":"0:","root":true}]`
	if _, err := b.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "0 of 8 queues") {
		t.Errorf("fetch without a shaper: %v", err)
	}
	if err := b.ResetWindow(context.Background()); err != nil {
		t.Errorf("resetWindow: %v", err)
	}
}

// closerFunc is an io.Closer from a function.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TestBMv2LinkDown: a BMv2 port's link is cut, not taken down (the FIFOs
// of its shaper go to a limit of 0, an XDP program drops what arrives),
// and is mended with the FIFOs' old limits when its time is over or when
// cleared; packet loss, which BMv2 cannot inject, is refused.
func TestBMv2LinkDown(t *testing.T) {
	sw := topo.Switch{Name: "l1", Ports: []int{3}, Intfs: map[int]string{3: "hb-l1-p3"}, NetNS: "/proc/1/ns/net"}
	b := NewBMv2Stats(sw, 10e6, fakeCounters{})
	calls := make(chan string, 64)
	b.tc = func(_ context.Context, args ...string) ([]byte, error) {
		cmd := strings.Join(args, " ")
		if cmd == "-j qdisc show dev hb-l1-p3" {
			return []byte(shaperJSON(nil, nil, nil)), nil
		}
		calls <- "tc " + cmd
		return nil, nil
	}
	b.dropRx = func(netns, dev string) (io.Closer, error) {
		calls <- "drop rx " + netns + " " + dev
		return closerFunc(func() error { calls <- "pass rx " + dev; return nil }), nil
	}
	next := func(want string) {
		t.Helper()
		select {
		case got := <-calls:
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %q", want)
		}
	}
	fifos := func(limit int) {
		t.Helper()
		for q := range 8 {
			next(fmt.Sprintf("tc qdisc change dev hb-l1-p3 parent 1:1%d handle 2%d: pfifo limit %d", q, q, limit))
		}
	}
	str := func(s string) *string { return &s }
	ctx := context.Background()

	if err := b.SetFault(ctx, switchstats.FaultSetting{Port: 3, DownFor: str("50ms")}); err != nil {
		t.Fatal(err)
	}
	next("drop rx /proc/1/ns/net hb-l1-p3")
	fifos(0)
	fifos(64) // by the timer
	next("pass rx hb-l1-p3")

	// Down again while down: one cut, the later time. Cleared before its
	// time: mended at once, and the timer does nothing.
	zero, egress := 0.0, switchstats.DirectionEgress
	if err := b.SetFault(ctx, switchstats.FaultSetting{Port: 3, DownFor: str("1h")}); err != nil {
		t.Fatal(err)
	}
	next("drop rx /proc/1/ns/net hb-l1-p3")
	fifos(0)
	if err := b.SetFault(ctx, switchstats.FaultSetting{Port: 3, DownFor: str("2h")}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetFault(ctx, switchstats.FaultSetting{Port: 3, DropProb: &zero, Direction: &egress, DownFor: str("0s")}); err != nil {
		t.Fatal(err)
	}
	fifos(64)
	next("pass rx hb-l1-p3")
	if len(b.down) != 0 {
		t.Errorf("ports left down: %v", b.down)
	}
	// Up when up: nothing to do.
	if err := b.SetFault(ctx, switchstats.FaultSetting{Port: 3, DownFor: str("0s")}); err != nil {
		t.Fatal(err)
	}

	half := 0.5
	for _, fs := range []switchstats.FaultSetting{
		{Port: 3, DropProb: &half},
		{Port: 4, DownFor: str("1s")},
		{Port: 3, DownFor: str("soon")},
	} {
		if err := b.SetFault(ctx, fs); err == nil {
			t.Errorf("SetFault(%+v): no error", fs)
		}
	}
	select {
	case c := <-calls:
		t.Errorf("a refused fault ran %q", c)
	default:
	}
}
