package homa_test

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// outbox is a Driven Endpoint's Conn: it keeps a copy of every packet the
// Endpoint writes, for the test to deliver, drop or inspect.
type outbox struct {
	addr netip.Addr
	pkts []homa.Packet
}

func (o *outbox) ReadBatch([]homa.Packet) (int, error) { return 0, net.ErrClosed }
func (o *outbox) LocalAddr() netip.Addr                { return o.addr }
func (o *outbox) BatchSize() int                       { return 64 }
func (o *outbox) Close() error                         { return nil }
func (o *outbox) WriteBatch(pkts []homa.Packet) error {
	for _, p := range pkts {
		o.pkts = append(o.pkts, homa.Packet{Buf: bytes.Clone(p.Buf), Addr: p.Addr, TOS: p.TOS})
	}
	return nil
}

// take empties the outbox.
func (o *outbox) take() []homa.Packet {
	p := o.pkts
	o.pkts = nil
	return p
}

// drivenPair is a client and a server Driven Endpoint joined by a
// lossless, instant network the test runs by hand (pump), on a clock it
// advances itself.
type drivenPair struct {
	now      time.Duration
	cli, srv *homa.Driven
	co, so   *outbox
}

var (
	cliAddr  = netip.MustParseAddr("10.146.1.1")
	srvAddr  = netip.MustParseAddr("10.146.1.2")
	evilAddr = netip.MustParseAddr("10.146.1.66")
)

func newDrivenPair(t testing.TB, cfg homaconf.Config) *drivenPair {
	t.Helper()
	p := &drivenPair{co: &outbox{addr: cliAddr}, so: &outbox{addr: srvAddr}}
	clock := func() time.Duration { return p.now }
	var err error
	if p.cli, err = homa.NewDriven(p.co, cfg, homa.DrivenConfig{Clock: clock, FirstID: 1000}, nil); err != nil {
		t.Fatal(err)
	}
	if p.srv, err = homa.NewDriven(p.so, cfg, homa.DrivenConfig{Clock: clock, FirstID: 2000}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.srv.Serve(serverPort, func(r *homa.ServerRPC) { _ = r.Reply(bytes.Clone(r.Request())) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cli.Close(); p.srv.Close() })
	return p
}

// pump delivers what each side sent to the other, waking pacers and
// ticking every Tick of the clock, until done says so or rounds run out;
// it reports whether done.
func (p *drivenPair) pump(rounds int, done func() bool) bool {
	tick := p.cli.Endpoint().Config().Tick
	next := p.now + tick
	for range rounds {
		if done() {
			return true
		}
		if pk := p.co.take(); len(pk) > 0 {
			p.srv.Deliver(from(pk, cliAddr))
		}
		if pk := p.so.take(); len(pk) > 0 {
			p.cli.Deliver(from(pk, srvAddr))
		}
		p.now += 10 * time.Microsecond
		for _, d := range []*homa.Driven{p.cli, p.srv} {
			if at, ok := d.Timer(); ok && at <= p.now {
				d.Wake()
			}
		}
		if p.now >= next {
			next += tick
			p.cli.Tick()
			p.srv.Tick()
		}
	}
	return done()
}

// from sets the packets' source address, as a receiver sees them.
func from(pkts []homa.Packet, src netip.Addr) []homa.Packet {
	for i := range pkts {
		pkts[i].Addr = src
	}
	return pkts
}

// dataOf returns the first DATA packet among pkts.
func dataOf(t testing.TB, pkts []homa.Packet) wire.Data {
	t.Helper()
	for _, p := range pkts {
		if d, _, err := wire.ParseData(p.Buf); err == nil {
			return d
		}
	}
	t.Fatal("no DATA packet sent")
	return wire.Data{}
}

// dataBytes is the DATA payload among pkts.
func dataBytes(pkts []homa.Packet) int {
	n := 0
	for _, p := range pkts {
		if _, pl, err := wire.ParseData(p.Buf); err == nil {
			n += len(pl)
		}
	}
	return n
}

// TestForgedControl: a Call's client refuses GRANTs and RESENDs that are
// not from its server (another address; the right address but other
// ports), GRANTs past the request's end and RESENDs starting past it,
// and counts each by reason; none of them makes it send a byte, and the
// Call then completes with its real server.
func TestForgedControl(t *testing.T) {
	p := newDrivenPair(t, homaconf.Config{LinkBps: 1e9})
	req := bytes.Repeat([]byte{7}, 200_000) // needs grants
	var got []byte
	var callErr error
	finished := false
	p.cli.Call(netip.AddrPortFrom(srvAddr, serverPort), req, func(resp []byte, _ homa.CallInfo, err error) {
		got, callErr, finished = resp, err, true
	})
	first := p.co.take()
	d := dataOf(t, first)
	unsched := dataBytes(first)
	// The server's header for this RPC: its ports and id mirrored.
	srvHdr := wire.Common{SPort: d.DPort, DPort: d.SPort, SenderID: d.SenderID | 1}
	grant := func(c wire.Common, off uint32) []byte {
		return wire.AppendGrant(nil, &wire.Grant{Common: c, Offset: off, Priority: 7})
	}
	resend := func(c wire.Common, off uint32) []byte {
		return wire.AppendResend(nil, &wire.Resend{Common: c, Offset: off, Length: wire.ResendAll})
	}
	otherPort := srvHdr
	otherPort.SPort++
	for _, tt := range []struct {
		name   string
		src    netip.Addr
		b      []byte
		reason homa.DropReason
	}{
		{"grant from another host", evilAddr, grant(srvHdr, d.MessageLength), homa.DropWrongPeer},
		{"grant from another port", srvAddr, grant(otherPort, d.MessageLength), homa.DropWrongPeer},
		{"grant past the end", srvAddr, grant(srvHdr, d.MessageLength+1), homa.DropBadRange},
		{"resend from another host", evilAddr, resend(srvHdr, 0), homa.DropWrongPeer},
		{"resend past the end", srvAddr, resend(srvHdr, d.MessageLength), homa.DropBadRange},
	} {
		before := p.cli.Endpoint().Stats().Drops[tt.reason]
		p.cli.Deliver([]homa.Packet{{Buf: tt.b, Addr: tt.src}})
		if n := p.cli.Endpoint().Stats().Drops[tt.reason] - before; n != 1 {
			t.Errorf("%s: %d drops %v, want 1", tt.name, n, tt.reason)
		}
		if sent := p.co.take(); len(sent) != 0 {
			t.Errorf("%s: the client answered with %d packets", tt.name, len(sent))
		}
	}
	// The genuine server gets the unscheduled bytes and grants the rest.
	p.srv.Deliver(from(first, cliAddr))
	if !p.pump(100_000, func() bool { return finished }) {
		t.Fatalf("the Call did not end; client %s", homa.DescribeRPC(p.cli.Endpoint(), 0))
	}
	if callErr != nil || !bytes.Equal(got, req) {
		t.Fatalf("Call: err %v, %d bytes back, want the %d sent", callErr, len(got), len(req))
	}
	st := p.cli.Endpoint().Stats()
	if st.Malformed != 0 {
		t.Errorf("malformed %d, want 0: the refusals are not malformed packets", st.Malformed)
	}
	t.Logf("unscheduled %d B; drops by reason %v", unsched, st.Drops)
}

// TestForgedGrantUndefended: with the defences off (defences: false) the
// same forged GRANT from another host makes the client send its whole
// request blind, which is the harm the peer check prevents.
func TestForgedGrantUndefended(t *testing.T) {
	p := newDrivenPair(t, homaconf.Config{LinkBps: 1e9, DisableDefences: true})
	req := make([]byte, 200_000)
	p.cli.Call(netip.AddrPortFrom(srvAddr, serverPort), req, func([]byte, homa.CallInfo, error) {})
	first := p.co.take()
	d := dataOf(t, first)
	sent := dataBytes(first)
	c := wire.Common{SPort: d.DPort, DPort: d.SPort, SenderID: d.SenderID | 1}
	p.cli.Deliver([]homa.Packet{{Buf: wire.AppendGrant(nil, &wire.Grant{Common: c, Offset: d.MessageLength, Priority: 7}), Addr: evilAddr}})
	for range 10_000 {
		p.now += 10 * time.Microsecond
		if at, ok := p.cli.Timer(); ok && at <= p.now {
			p.cli.Wake()
		}
		sent += dataBytes(p.co.take())
	}
	if sent != len(req) {
		t.Errorf("the forged GRANT let %d of %d bytes go, want all", sent, len(req))
	}
	if st := p.cli.Endpoint().Stats(); st.Drops[homa.DropWrongPeer] != 0 {
		t.Errorf("defences off, yet %d wrong_peer drops", st.Drops[homa.DropWrongPeer])
	}
}

// TestResendLimit: RESENDs from one address beyond Config.ResendLimit in
// a tick go unanswered and are counted; the next tick answers again.
func TestResendLimit(t *testing.T) {
	const limit = 8
	p := newDrivenPair(t, homaconf.Config{LinkBps: 1e9, ResendLimit: limit})
	p.cli.Call(netip.AddrPortFrom(srvAddr, serverPort), make([]byte, 3000), func([]byte, homa.CallInfo, error) {})
	d := dataOf(t, p.co.take())
	rs := wire.AppendResend(nil, &wire.Resend{Common: wire.Common{SPort: d.DPort, DPort: d.SPort, SenderID: d.SenderID | 1}, Offset: 0, Length: 1000})
	burst := make([]homa.Packet, 3*limit)
	for i := range burst {
		burst[i] = homa.Packet{Buf: rs, Addr: srvAddr}
	}
	p.cli.Deliver(burst)
	st := p.cli.Endpoint().Stats()
	if got := st.Drops[homa.DropResendLimited]; got != 2*limit {
		t.Errorf("limited %d of %d RESENDs, want %d", got, len(burst), 2*limit)
	}
	if st.ResendsReceived != uint64(len(burst)) {
		t.Errorf("resends received %d, want %d", st.ResendsReceived, len(burst))
	}
	p.co.take()
	p.now += p.cli.Endpoint().Config().Tick
	p.cli.Tick()
	p.co.take()
	p.cli.Deliver(burst[:1])
	if got := p.cli.Endpoint().Stats().Drops[homa.DropResendLimited]; got != 2*limit {
		t.Errorf("after a tick: limited %d, want still %d", got, 2*limit)
	}
	if dataBytes(p.co.take()) == 0 {
		t.Error("after a tick the RESEND was not answered with DATA")
	}
}

// malformedCases are packets every receiver must drop, with the reason it
// counts, built from valid packets of the RPC whose client header is c.
func malformedCases(c wire.Common) []struct {
	name   string
	b      []byte
	reason homa.DropReason
} {
	data := func(msgLen, off uint32, payload int) []byte {
		b := wire.AppendData(nil, &wire.Data{Common: c, MessageLength: msgLen, Offset: off, Incoming: msgLen})
		return append(b, make([]byte, payload)...)
	}
	grant := wire.AppendGrant(nil, &wire.Grant{Common: c, Offset: 100})
	badDoff := bytes.Clone(grant)
	badDoff[12] = 0x70
	unknown := bytes.Clone(grant)
	unknown[wire.TypeOffset] = 0x42
	badPrio := bytes.Clone(grant)
	badPrio[32] = 9
	badRexmit := data(100, 0, 100)
	badRexmit[48] = 3
	return []struct {
		name   string
		b      []byte
		reason homa.DropReason
	}{
		{"shorter than a common header", grant[:20], homa.DropTruncated},
		{"truncated grant", grant[:wire.GrantLen-1], homa.DropTruncated},
		{"truncated data header", data(100, 0, 0)[:40], homa.DropTruncated},
		{"unknown type", unknown, homa.DropUnknownType},
		{"bad doff", badDoff, homa.DropBadHeader},
		{"zero message length", data(0, 0, 10), homa.DropBadLength},
		{"no payload", data(100, 0, 0), homa.DropBadLength},
		{"offset beyond length", data(100, 100, 10), homa.DropBadOffset},
		{"payload beyond length", data(100, 95, 10), homa.DropBadOffset},
		{"grant priority 9", badPrio, homa.DropBadField},
		{"retransmit flag 3", badRexmit, homa.DropBadField},
		{"message too large", data(2_000_000, 0, 10), homa.DropTooLarge},
		{"ndp pull at homa", wire.AppendPull(nil, &wire.Pull{Common: c, Count: 1}), homa.DropWrongVariant},
	}
}

// TestMalformedByReason: each malformed packet is dropped and counted
// under its reason, and as malformed.
func TestMalformedByReason(t *testing.T) {
	p := newDrivenPair(t, homaconf.Config{LinkBps: 1e9})
	c := wire.Common{SPort: 0x8000, DPort: serverPort, SenderID: 4242}
	for _, tt := range malformedCases(c) {
		t.Run(tt.name, func(t *testing.T) {
			before := p.srv.Endpoint().Stats()
			p.srv.Deliver([]homa.Packet{{Buf: tt.b, Addr: cliAddr}})
			after := p.srv.Endpoint().Stats()
			for r := range homa.NumDropReasons {
				want := uint64(0)
				if r == tt.reason {
					want = 1
				}
				if n := after.Drops[r] - before.Drops[r]; n != want {
					t.Errorf("%v: %d drops, want %d", r, n, want)
				}
			}
			if after.Malformed-before.Malformed != 1 {
				t.Errorf("malformed +%d, want +1", after.Malformed-before.Malformed)
			}
			if len(p.so.take()) != 0 {
				t.Error("the server answered a malformed packet")
			}
		})
	}
}

// malformedDrops sums st's drops of malformed reasons.
func malformedDrops(st homa.Stats) (n uint64) {
	for r, k := range st.Drops {
		if homa.DropReason(r).Malformed() {
			n += k
		}
	}
	return n
}

// FuzzHandlePacket delivers arbitrary bytes, from the peer or from a
// stranger, to a client in the middle of a Call: the Endpoint must not
// panic, must count every packet it drops as malformed under a malformed
// reason, and the Call must still end (completed, or failed with a reason)
// when the genuine traffic resumes.
func FuzzHandlePacket(f *testing.F) {
	c := wire.Common{SPort: serverPort, DPort: 0x8000, SenderID: 1001}
	f.Add(wire.AppendGrant(nil, &wire.Grant{Common: c, Offset: 20_000, Priority: 3}), false)
	f.Add(wire.AppendResend(nil, &wire.Resend{Common: c, Offset: 0, Length: 5000}), true)
	f.Add(append(wire.AppendData(nil, &wire.Data{Common: c, MessageLength: 30_000, Incoming: 30_000}), make([]byte, 1000)...), false)
	f.Add(wire.AppendHeaderOnly(nil, &wire.Common{SPort: serverPort, DPort: 0x8000, SenderID: 1001, Type: wire.TypeRPCUnknown}), false)
	f.Add(wire.AppendCutoffs(nil, &wire.Cutoffs{Common: c, Version: 2}), false)
	for _, m := range malformedCases(c) {
		f.Add(m.b, false)
	}
	f.Fuzz(func(t *testing.T, b []byte, stranger bool) {
		p := newDrivenPair(t, homaconf.Config{LinkBps: 1e9})
		ended := false
		p.cli.Call(netip.AddrPortFrom(srvAddr, serverPort), make([]byte, 30_000), func(_ []byte, _ homa.CallInfo, err error) {
			ended = true
			if err != nil && homa.Reason(err) == "" {
				t.Errorf("Call failed without a reason: %v", err)
			}
		})
		src := srvAddr
		if stranger {
			src = evilAddr
		}
		p.cli.Deliver([]homa.Packet{{Buf: b, Addr: src}})
		st := p.cli.Endpoint().Stats()
		if malformed := malformedDrops(st); malformed != st.Malformed {
			t.Errorf("malformed %d, drops of malformed reasons %d", st.Malformed, malformed)
		}
		if !p.pump(2_000_000, func() bool { return ended }) {
			t.Fatalf("the Call did not end: %s", homa.DescribeRPC(p.cli.Endpoint(), 0))
		}
	})
}

// TestGrownBuffersReused: messages of many packets echoed one after
// another arrive intact although each grows through buffers an earlier
// one outgrew (whose bytes are still in them), and each is handed on in
// a buffer of exactly its length.
func TestGrownBuffersReused(t *testing.T) {
	p := newDrivenPair(t, homaconf.Config{LinkBps: 10e9})
	dest := netip.AddrPortFrom(srvAddr, serverPort)
	for i, size := range []int{150_000, 9_000, 60_000, 150_000, 3_000, 120_000} {
		req := make([]byte, size)
		for j := range req {
			req[j] = byte(i*31 + j*7)
		}
		var resp []byte
		var done bool
		p.cli.Call(dest, req, func(b []byte, _ homa.CallInfo, err error) {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			resp, done = b, true
		})
		if !p.pump(100_000, func() bool { return done }) {
			t.Fatalf("call %d of %d bytes did not finish", i, size)
		}
		if !bytes.Equal(resp, req) {
			t.Errorf("call %d of %d bytes: response differs from the request", i, size)
		}
		if cap(resp) != len(resp) {
			t.Errorf("call %d: response of %d bytes in a buffer of capacity %d", i, len(resp), cap(resp))
		}
	}
}

// TestLateDataOfAnEarlierIncarnation: a receiver takes what a sender may
// send unasked from a message's first packet only (homa_message_in_init).
// A late packet of the same RPC whose earlier incarnation the receiver
// timed out (its sender has since restarted it) carries that
// incarnation's grants; taken up, they filled the receiver's window with
// bytes the restarted sender never meant to send, and the message crawled
// on one RESEND probe a round (the twin's whole W5 left two 29 MB
// messages undelivered so). Here the request still completes at the
// link's pace.
func TestLateDataOfAnEarlierIncarnation(t *testing.T) {
	p := newDrivenPair(t, homaconf.Config{LinkBps: 1e9})
	req := make([]byte, 300_000)
	for i := range req {
		req[i] = byte(i / 1000)
	}
	var got []byte
	finished := false
	p.cli.Call(netip.AddrPortFrom(srvAddr, serverPort), req, func(resp []byte, _ homa.CallInfo, err error) {
		if err != nil {
			t.Errorf("Call: %v", err)
		}
		got, finished = resp, true
	})
	first := p.co.take()
	d := dataOf(t, first)
	// The late packet: bytes well past the unscheduled ones, sent by the
	// earlier incarnation under grants up to the message's end.
	late := d
	late.Offset, late.Incoming = 250_000, d.MessageLength
	buf := append(wire.AppendData(nil, &late), req[late.Offset:late.Offset+1000]...)
	p.srv.Deliver(from(first, cliAddr))
	p.srv.Deliver([]homa.Packet{{Buf: buf, Addr: cliAddr}})
	// 300 KB each way at 1 Gbit/s take under 5 ms; 20 ms is room enough,
	// and far short of the RESEND rounds a filled window waits for.
	start := p.now
	if !p.pump(2_000, func() bool { return finished }) {
		t.Fatalf("the Call did not end within %v; server %s", p.now-start, homa.DescribeRPC(p.srv.Endpoint(), 0))
	}
	if !bytes.Equal(got, req) {
		t.Fatalf("%d bytes back, want the %d sent", len(got), len(req))
	}
}
