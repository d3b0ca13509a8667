package homa_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// TestPacerLateness sends one message from a Driven pFabric Endpoint (no
// grants: only the pacer holds its DATA) at 25 Mbit/s with a backlog of
// 500 µs, one 1,542 B packet, and delivers every pacer wake-up late by a
// fixed amount. The pacer wakes with half the backlog (250 µs) still
// queued, so a wake-up up to that late costs the link nothing, and
// PacerLateNs counts the rest of each later one: the link time lost to
// the wake-ups.
func TestPacerLateness(t *testing.T) {
	const us = time.Microsecond
	for _, tt := range []struct {
		name    string
		late    time.Duration
		perWake time.Duration // link time lost per late wake-up
	}{
		{"on time", 0, 0},
		{"within the backlog left", 200 * us, 0},
		{"beyond it", 800 * us, 550 * us},
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

// TestEqualMessagesGoOldestFirst starts three equal messages from a
// Driven pFabric Endpoint at 25 Mbit/s, a few µs apart, and checks that
// the pacer sends them whole in the order they were started: SRPT has no
// preference among them, and the oldest is the one a collective's next
// step waits for.
func TestEqualMessagesGoOldestFirst(t *testing.T) {
	var now time.Duration
	o := &outbox{addr: cliAddr}
	cfg := homaconf.Config{LinkBps: 25e6, MaxNICBacklog: 500 * time.Microsecond, Variant: homaconf.VariantPFabric}
	d, err := homa.NewDriven(o, cfg, homa.DrivenConfig{Clock: func() time.Duration { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const n = 3
	for range n {
		d.Call(netip.AddrPortFrom(srvAddr, serverPort), make([]byte, 20000), func([]byte, homa.CallInfo, error) {})
		now += 5 * time.Microsecond
	}
	var order []uint64 // sender ids, each once, in the order of their first DATA
	var pkts []homa.Packet
	for range 200 {
		pkts = append(pkts, o.take()...)
		at, armed := d.Timer()
		if !armed {
			break
		}
		now = at
		d.Wake()
	}
	last := uint64(0)
	for _, p := range pkts {
		dt, _, err := wire.ParseData(p.Buf)
		if err != nil {
			continue
		}
		if id := dt.SenderID; id != last {
			if slices.Contains(order, id) {
				t.Fatalf("message %d resumed after another began: order %v", id, order)
			}
			order, last = append(order, id), id
		}
	}
	if len(order) != n || !slices.IsSorted(order) {
		t.Errorf("messages sent in the order of their ids %v, want %d in the order started (ascending)", order, n)
	}
}

// TestPFabricSenderSRPTOnly starts a long message from a Driven pFabric
// Endpoint, then a shorter one, and checks that no packet of the long
// message leaves between the short one's first and last: a pFabric host
// sends by SRPT alone, without the share Homa's pacer gives the oldest
// message (one pick in twenty).
func TestPFabricSenderSRPTOnly(t *testing.T) {
	var now time.Duration
	o := &outbox{addr: cliAddr}
	cfg := homaconf.Config{LinkBps: 25e6, MaxNICBacklog: time.Nanosecond, Variant: homaconf.VariantPFabric}
	d, err := homa.NewDriven(o, cfg, homa.DrivenConfig{Clock: func() time.Duration { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	to := netip.AddrPortFrom(srvAddr, serverPort)
	d.Call(to, make([]byte, 200_000), func([]byte, homa.CallInfo, error) {})
	var lengths []uint32 // each DATA packet's message length, in order
	step := func() bool {
		for _, p := range o.take() {
			if dt, _, err := wire.ParseData(p.Buf); err == nil {
				lengths = append(lengths, dt.MessageLength)
			}
		}
		at, armed := d.Timer()
		if !armed {
			return false
		}
		now = at
		d.Wake()
		return true
	}
	for range 5 {
		step()
	}
	d.Call(to, make([]byte, 60_000), func([]byte, homa.CallInfo, error) {})
	for range 2000 {
		if !step() {
			break
		}
	}
	first, last, short := -1, -1, 0
	for i, n := range lengths {
		if n == 60_000 {
			if first < 0 {
				first = i
			}
			last = i
			short++
		}
	}
	if short < 40 {
		t.Fatalf("the short message sent %d packets, want at least 40", short)
	}
	if long := slices.Index(lengths[first:last], 200_000); long >= 0 {
		t.Errorf("a packet of the long message left between the short one's first and last (after its %d of %d)", long, short)
	}
}

// TestRoCEResumeRearmsPacer: a RoCE queue pair paused by PFC arms the
// pacer for the PAUSE's end; after a resume it sends until the NIC's
// backlog is full (here one packet: the twin's default; no DCQCN: the
// queue pair sends at line rate, only the pacer holds it), and the pacer
// must then wake it when the backlog has drained, not when the PAUSE
// would have run out (1.3 s at 25 Mbit/s): in the twin, hosts that waited
// for that sent a fraction of their link.
func TestRoCEResumeRearmsPacer(t *testing.T) {
	var now time.Duration
	o := &outbox{addr: cliAddr}
	cfg := homaconf.Config{LinkBps: 25e6, MaxNICBacklog: time.Nanosecond, Variant: homaconf.VariantRoCE, RoCEPriority: 3, RoCENoDCQCN: true}
	d, err := homa.NewDriven(o, cfg, homa.DrivenConfig{Clock: func() time.Duration { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var quanta [wire.PFCClasses]uint16
	quanta[3] = wire.PFCQuantaMax
	d.Pause(1<<3, &quanta)
	d.Call(netip.AddrPortFrom(srvAddr, serverPort), make([]byte, 32000), func([]byte, homa.CallInfo, error) {})
	if n := len(o.take()); n != 0 {
		t.Fatalf("paused queue pair sent %d packets", n)
	}
	now = 10 * time.Millisecond
	quanta[3] = 0
	d.Pause(1<<3, &quanta)
	if n := len(o.take()); n == 0 {
		t.Fatal("nothing sent after the resume")
	}
	// One 1,542 B frame takes 493 µs at 25 Mbit/s.
	if at, armed := d.Timer(); !armed || at > now+time.Millisecond {
		t.Errorf("after the resume at %v, the pacer wakes at %v (armed %v), want when the frame sent has left, within 1 ms", now, at, armed)
	}
}
