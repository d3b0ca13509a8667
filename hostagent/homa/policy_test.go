package homa

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// creditEndpoint is an endpoint of variant v with inbound messages of the
// given lengths, received and granted (credited) bytes, in the credit
// queue.
func creditEndpoint(t *testing.T, v homaconf.Variant, msgs [][3]uint32) (*Endpoint, []*msgIn) {
	t.Helper()
	e, err := newEndpoint(&sinkConn{}, homaconf.Config{Variant: v}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ms []*msgIn
	for i, m := range msgs {
		r := &rpc{id: uint64(2 * (i + 1)), client: true, peer: e.peer(netip.MustParseAddr("10.0.0.2"))}
		r.in = msgIn{length: m[0], received: m[1], granted: m[2], rpc: r, started: true}
		e.state.pol.track(&r.in)
		ms = append(ms, &r.in)
	}
	return e, ms
}

// creditsOf is e's credit queue and what its policy (pHost or NDP) does
// with it.
func creditsOf(t *testing.T, e *Endpoint) (*creditQueue, creditor) {
	t.Helper()
	switch p := e.state.pol.(type) {
	case *phostPolicy:
		return &p.creditQueue, p
	case *ndpPolicy:
		return &p.creditQueue, p
	}
	t.Fatalf("policy %T has no credit queue", e.state.pol)
	return nil, nil
}

// TestPickCredit checks who gets the next pHost token or NDP PULL:
// fewest bytes left first, but pHost skips a message with a window of
// tokens unused (its sender is not using them) and NDP one with no
// arrival left to answer.
func TestPickCredit(t *testing.T) {
	e, ms := creditEndpoint(t, homaconf.VariantPHost, [][3]uint32{{100_000, 0, 0}, {50_000, 0, 0}, {500_000, 0, 0}})
	cq, k := creditsOf(t, e)
	win := e.state.pol.(*phostPolicy).window
	if got := cq.pick(k); got != ms[1] {
		t.Fatalf("pHost picked the %d-byte message, want the 50,000-byte one", got.length)
	}
	ms[1].granted = win // a window of tokens unused: expired
	if got := cq.pick(k); got != ms[0] {
		t.Fatalf("pHost picked the %d-byte message past its token window, want the 100,000-byte one", got.length)
	}
	ms[1].received = win - 1 // it used them
	if got := cq.pick(k); got != ms[1] {
		t.Fatalf("pHost picked the %d-byte message, want the 50,000-byte one again", got.length)
	}
	ms[0].rpc.dead = true
	ms[1].granted, ms[1].received = ms[1].length, ms[1].length
	if got := cq.pick(k); got != ms[2] || len(cq.q) != 1 {
		t.Fatalf("picked %v with %d queued, want the 500,000-byte message alone", got, len(cq.q))
	}

	e, ms = creditEndpoint(t, homaconf.VariantNDP, [][3]uint32{{20_000, 0, 0}, {90_000, 0, 0}})
	cq, k = creditsOf(t, e)
	if got := cq.pick(k); got != nil {
		t.Fatalf("NDP picked the %d-byte message with no arrival to answer", got.length)
	}
	ms[1].pulls = 1
	if got := cq.pick(k); got != ms[1] {
		t.Fatalf("NDP picked %v, want the message with an arrival", got)
	}
	ms[0].granted, ms[0].nackOwed, ms[0].pulls = ms[0].length, 1, 1
	if got := cq.pick(k); got != ms[0] {
		t.Fatalf("NDP picked %v, want the fully pulled message that still owes a NACKed packet", got)
	}
}

// TestIssueCreditsPaced checks that tokens go at most one per packet
// time of the link: a burst of demand at one instant gets two (the
// catch-up allowance) and arms the timer for the rest.
func TestIssueCreditsPaced(t *testing.T) {
	e, ms := creditEndpoint(t, homaconf.VariantPHost, [][3]uint32{{1_000_000, 0, 0}})
	cq, k := creditsOf(t, e)
	now := cq.gap * 100
	cq.issue(e, now, k)
	if got, want := ms[0].granted, 3*e.state.pkt; got != want {
		t.Errorf("granted %d bytes at once, want %d (three packets: now and the two-packet catch-up)", got, want)
	}
	if !e.state.armed || e.state.armedAt != cq.at {
		t.Errorf("timer armed %v at %v, want at %v", e.state.armed, e.state.armedAt, cq.at)
	}
	cq.issue(e, now+cq.gap, k)
	if got, want := ms[0].granted, 4*e.state.pkt; got != want {
		t.Errorf("granted %d bytes one packet time later, want %d", got, want)
	}
}

// recConn keeps copies of the packets written to it.
type recConn struct {
	sinkConn
	sent []Packet
}

func (c *recConn) WriteBatch(p []Packet) error {
	for _, q := range p {
		c.sent = append(c.sent, Packet{Buf: append([]byte(nil), q.Buf...), Addr: q.Addr, TOS: q.TOS})
	}
	return nil
}

// TestTrimmedRequestPulled: an NDP server that gets only the trimmed
// header of a request sent whole (no PULL needed for new bytes) NACKs it
// at the top level and then PULLs once, so the sender's held packet goes
// again without waiting for a RESEND; the sender spends that PULL on the
// NACKed packet, not on new bytes.
func TestTrimmedRequestPulled(t *testing.T) {
	srv, rc := ndpServer(t)
	peer := netip.MustParseAddr("10.0.0.2")
	d := wire.Data{Common: wire.Common{SPort: 0x8000, DPort: 99, SenderID: 4}, MessageLength: 3000, Incoming: 3000, Offset: 1424}
	b, _ := wire.Trim(append(wire.AppendData(nil, &d), make([]byte, 1424)...))
	srv.mu.Lock()
	srv.handlePacket(0, &Packet{Buf: b, Addr: peer})
	srv.unlock()
	var types []wire.Type
	for _, p := range rc.sent {
		c, _ := wire.ParseCommon(p.Buf)
		types = append(types, c.Type)
		if Priority(p.TOS) != 7 {
			t.Errorf("%v at level %d, want 7", c.Type, Priority(p.TOS))
		}
	}
	if len(types) != 2 || types[0] != wire.TypeNack || types[1] != wire.TypePull {
		t.Fatalf("server sent %v, want a NACK and a PULL", types)
	}
	n, err := wire.ParseNack(rc.sent[0].Buf)
	if err != nil || n.Offset != 1424 || n.Length != 1424 {
		t.Errorf("NACK %+v %v, want bytes 1424+1424", n, err)
	}

	// The client: its request sent whole, NACKed, then pulled.
	cli, r := ndpRequestSent(t, peer, 3000)
	if r.out.next != 3000 {
		t.Fatalf("sent %d of 3000 bytes blind", r.out.next)
	}
	cli.mu.Lock()
	for i, p := range rc.sent {
		p.Addr = peer
		cli.handlePacket(0, &p)
		if i == 0 && (len(r.out.rexmit) != 0 || len(cli.state.pol.(*ndpPolicy).held) != 1) {
			t.Errorf("after the NACK: %d retransmissions queued, %d held; want 0 and 1", len(r.out.rexmit), len(cli.state.pol.(*ndpPolicy).held))
		}
	}
	cli.unlock()
	if r.info.retransmits != 1 || r.out.granted != 3000 || len(cli.state.pol.(*ndpPolicy).held) != 0 {
		t.Errorf("retransmits %d, granted %d, held %d: want 1, 3000, 0", r.info.retransmits, r.out.granted, len(cli.state.pol.(*ndpPolicy).held))
	}
}

// TestPHostFreeTokens: a pHost message that fits in the credit window goes
// whole on free tokens; a longer one sends only an RTS (a START_MSG) and
// waits for tokens. Every DATA packet goes at level 0, the RTS at the
// control level (7).
func TestPHostFreeTokens(t *testing.T) {
	for _, tt := range []struct {
		name      string
		length    int
		data, rts int // DATA packets (all at level 0), START_MSGs (at 7)
	}{
		{"one packet", 100, 1, 0},
		{"within the window", 8000, 6, 0},
		{"the whole window", 9968, 7, 0},
		{"a byte beyond the window", 9969, 0, 1},
		{"long message", 100_000, 0, 1},
	} {
		rc := &recConn{}
		// A backlog the pacer never reaches: every blind packet goes at once.
		e, err := newEndpoint(rc, homaconf.Config{Variant: homaconf.VariantPHost, LinkBps: 25e6,
			UnschedBytes: 4272, CreditWindow: 9968, MaxNICBacklog: time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := e.cfg.CreditWindow; w != 7*e.state.pkt {
			t.Fatalf("credit window %d B, want 7 packets of %d", w, e.state.pkt)
		}
		r := &rpc{id: 4, client: true, peer: e.peer(netip.MustParseAddr("10.0.0.2")), lport: 0x8000, rport: 99}
		e.state.clients[4] = r
		e.mu.Lock()
		e.startOut(0, r, e.bodyOf(make([]byte, tt.length)), e.state.unsched, 0)
		e.unlock()
		var data, rts int
		for _, p := range rc.sent {
			c, err := wire.ParseCommon(p.Buf)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			want := map[wire.Type]uint8{wire.TypeData: 0, wire.TypeStartMsg: 7}
			level, ok := want[c.Type]
			if !ok {
				t.Errorf("%s: sent a %v", tt.name, c.Type)
			} else if Priority(p.TOS) != level {
				t.Errorf("%s: %v at level %d, want %d", tt.name, c.Type, Priority(p.TOS), level)
			}
			if c.Type == wire.TypeData {
				data++
			} else if c.Type == wire.TypeStartMsg {
				rts++
			}
		}
		if data != tt.data || rts != tt.rts {
			t.Errorf("%s: %d DATA and %d START_MSG sent, want %d and %d", tt.name, data, rts, tt.data, tt.rts)
		}
	}
}

// TestPullBeforeNack: a trimmed packet's NACK and PULL, sprayed over
// different spines, can reach the sender in the other order. The PULL then
// finds nothing to send (the message went whole, nothing is held yet); the
// NACK that follows must send the packet again at once, not leave it held
// until a RESEND (5 ms at 10 Gbit/s). One-packet messages of the Homa
// paper's W4 waited that long before.
func TestPullBeforeNack(t *testing.T) {
	peer := netip.MustParseAddr("10.0.0.2")
	for _, tc := range []struct {
		name  string
		order []wire.Type
	}{
		{"nack first", []wire.Type{wire.TypeNack, wire.TypePull}},
		{"pull first", []wire.Type{wire.TypePull, wire.TypeNack}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, r := ndpRequestSent(t, peer, 300)
			for _, typ := range tc.order {
				c := wire.Common{SPort: 99, DPort: 0x8000, SenderID: 5, Type: typ}
				var b []byte
				if typ == wire.TypeNack {
					b = wire.AppendNack(nil, &wire.Nack{Common: c, Offset: 0, Length: 300})
				} else {
					b = wire.AppendPull(nil, &wire.Pull{Common: c, Count: 1})
				}
				cli.mu.Lock()
				cli.handlePacket(0, &Packet{Buf: b, Addr: peer, TOS: TOS(7)})
				cli.unlock()
			}
			if r.info.retransmits != 1 || len(cli.state.pol.(*ndpPolicy).held) != 0 {
				t.Errorf("retransmits %d, held %d: want 1, 0", r.info.retransmits, len(cli.state.pol.(*ndpPolicy).held))
			}
		})
	}
}

// ndpRequestSent is an NDP client whose RPC 4 to peer's port 99 has sent
// a request of n bytes blind.
func ndpRequestSent(t *testing.T, peer netip.Addr, n int) (*Endpoint, *rpc) {
	t.Helper()
	cli, err := newEndpoint(&sinkConn{}, homaconf.Config{Variant: homaconf.VariantNDP}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rpc{id: 4, client: true, peer: cli.peer(peer), lport: 0x8000, rport: 99}
	cli.state.clients[4] = r
	cli.mu.Lock()
	cli.startOut(0, r, cli.bodyOf(make([]byte, n)), cli.cfg.UnschedBytes, 0)
	cli.unlock()
	return cli, r
}

// TestNackedRetransmissionAsksNothing: an NDP receiver that gets the
// retransmission of a NACKed packet while the message's next packet is
// still on its way sends no RESEND for it: the retransmission answers a
// NACK, not a RESEND after silence, so the gap after it is not lost (the
// RESEND made the sender send that packet twice).
func TestNackedRetransmissionAsksNothing(t *testing.T) {
	srv, rc := ndpServer(t)
	peer := netip.MustParseAddr("10.0.0.2")
	d := wire.Data{Common: wire.Common{SPort: 0x8000, DPort: 99, SenderID: 4}, MessageLength: 3000, Incoming: 3000}
	trimmed, _ := wire.Trim(append(wire.AppendData(nil, &d), make([]byte, 1424)...))
	d.Retransmit = 1
	again := append(wire.AppendData(nil, &d), make([]byte, 1424)...)
	srv.mu.Lock()
	srv.handlePacket(0, &Packet{Buf: trimmed, Addr: peer, TOS: TOS(7)})
	srv.handlePacket(time.Microsecond, &Packet{Buf: again, Addr: peer})
	srv.unlock()
	for _, p := range rc.sent {
		if c, _ := wire.ParseCommon(p.Buf); c.Type == wire.TypeResend {
			rs, _ := wire.ParseResend(p.Buf)
			t.Errorf("RESEND for bytes %d+%d of a packet still on its way", rs.Offset, rs.Length)
		}
	}
}

// TestRetransmissionAsksTheRestPerVariant: a retransmission that arrives
// with the rest of its gap missing makes a Homa receiver ask for the rest
// whole, and a pHost receiver ask for nothing: pHost recovers lost packets
// with tokens at its link's pace, and the burst of the rest whole, sent
// past the tokens, collapsed faults-heavy's bottleneck (tail drops, then
// RPC_UNKNOWN restarts) in three seeds of sixty.
func TestRetransmissionAsksTheRestPerVariant(t *testing.T) {
	const pkt = 1424
	for _, tt := range []struct {
		variant  homaconf.Variant
		wantRest bool
	}{{homaconf.VariantHoma, true}, {homaconf.VariantPHost, false}} {
		t.Run(string(tt.variant), func(t *testing.T) {
			rc := &recConn{}
			srv, err := newEndpoint(rc, homaconf.Config{Variant: tt.variant}, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv.state.ports[99] = &Server{}
			peer := netip.MustParseAddr("10.0.0.2")
			d := wire.Data{Common: wire.Common{SPort: 0x8000, DPort: 99, SenderID: 4}, MessageLength: 10 * pkt, Incoming: 5 * pkt}
			first := append(wire.AppendData(nil, &d), make([]byte, pkt)...)
			d.Offset, d.Retransmit = pkt, 1
			again := append(wire.AppendData(nil, &d), make([]byte, pkt)...)
			srv.mu.Lock()
			srv.handlePacket(0, &Packet{Buf: first, Addr: peer})
			srv.handlePacket(time.Microsecond, &Packet{Buf: again, Addr: peer})
			srv.unlock()
			var rest bool
			for _, p := range rc.sent {
				if c, _ := wire.ParseCommon(p.Buf); c.Type == wire.TypeResend {
					rs, _ := wire.ParseResend(p.Buf)
					rest = rest || (rs.Offset == 2*pkt && rs.Length == 3*pkt)
				}
			}
			if rest != tt.wantRest {
				t.Errorf("asked for the rest of the gap whole: %v, want %v", rest, tt.wantRest)
			}
		})
	}
}

// ndpServer is an NDP endpoint serving port 99 whose packets rc records.
func ndpServer(t *testing.T) (*Endpoint, *recConn) {
	t.Helper()
	rc := &recConn{}
	srv, err := newEndpoint(rc, homaconf.Config{Variant: homaconf.VariantNDP}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.state.ports[99] = &Server{}
	return srv, rc
}
