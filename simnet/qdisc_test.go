package simnet

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/homatb/homatb/wire"
)

// qdiscDeparture is one frame the qdisc handed to the NIC: what it was and
// when.
type qdiscDeparture struct {
	at  int64
	id  uint64 // a Homa frame's sender id, 0 for TCP
	tcp uint16 // a TCP frame's source port
}

// qdiscHost is host h1 of a two-host 10 Gbit/s star with a qdisc whose
// departures are recorded.
func qdiscHost(t *testing.T, cfg QdiscConfig) (*Network, *Node, *[]qdiscDeparture) {
	t.Helper()
	n := star(t, 2, 10e9)
	h := n.Node("h1")
	if err := h.UseQdisc(cfg); err != nil {
		t.Fatal(err)
	}
	var out []qdiscDeparture
	h.qd.out = func(f []byte) {
		d := qdiscDeparture{at: n.clock.now}
		if f[ethLen+9] == ipProtoTCP {
			d.tcp = binary.BigEndian.Uint16(f[frameHdr:])
		} else if c, err := wire.ParseCommon(f[frameHdr:]); err == nil {
			d.id = c.SenderID
		}
		out = append(out, d)
		n.freeFrame(f)
	}
	return n, h, &out
}

// homaData is a DATA frame of message id (length msgLen) at offset, with
// 1400 payload bytes, from h1 to h2.
func homaData(n *Network, id uint64, msgLen, offset uint32) []byte {
	b := wire.AppendData(nil, &wire.Data{Common: wire.Common{SenderID: id}, MessageLength: msgLen, Offset: offset})
	b = append(b, make([]byte, 1400)...)
	return n.frame(&n.Node("h1").Host, &n.Node("h2").Host, wire.IPProto, 0, b, 0)
}

// tcpData is a TCP frame of payload bytes from h1's port sport to h2.
func tcpData(n *Network, sport uint16, payload int) []byte {
	f := n.frameOf(&n.Node("h1").Host, &n.Node("h2").Host, ipProtoTCP, 0, 20+payload)
	tc := f[frameHdr:]
	binary.BigEndian.PutUint16(tc[0:], sport)
	binary.BigEndian.PutUint16(tc[2:], 5000)
	tc[12] = 5 << 4
	return f
}

// TestQdiscSRPT: with the NIC's backlog at its cap, a shorter message's
// packets pass a longer one's deferred packets; short messages and control
// packets pass at once.
func TestQdiscSRPT(t *testing.T) {
	n, h, out := qdiscHost(t, QdiscConfig{})
	for i := range 20 {
		h.transmit(homaData(n, 2, 1_000_000, uint32(i*1400)), 0)
	}
	for i := range 3 {
		h.transmit(homaData(n, 4, 4200, uint32(i*1400)), 0)
	}
	h.transmit(homaData(n, 6, 500, 0), 0) // a short message
	if got := (*out)[len(*out)-1]; got.id != 6 || got.at != 0 {
		t.Fatalf("the short message left last as %+v; want it handed over at once, at 0", got)
	}
	n.clock.Run(int64(time.Millisecond))
	if len(*out) != 24 {
		t.Fatalf("%d frames left, want 24", len(*out))
	}
	// The first frames of message 2 went out before the backlog reached
	// its cap, and one more as the oldest message's turn (the SRPT budget
	// starts spent); then message 4's three before the rest of message 2.
	first4 := -1
	for i, d := range *out {
		if d.id == 4 {
			first4 = i
			break
		}
	}
	if first4 < 0 || first4 > 7 {
		t.Fatalf("message 4's first frame left at position %d: %+v", first4, *out)
	}
	for _, d := range (*out)[first4 : first4+3] {
		if d.id != 4 {
			t.Fatalf("message 4's frames did not leave together after the cap: %+v", *out)
		}
	}
	if st := h.QdiscStats(); st.HomaDeferred == 0 || st.Passed != 24 {
		t.Errorf("stats %+v: want some deferred, 24 passed", st)
	}
}

// TestQdiscShare: when Homa and TCP both wait, each gets half of the bytes;
// flows take turns; a short TCP packet waits only behind its own flow.
func TestQdiscShare(t *testing.T) {
	n, h, out := qdiscHost(t, QdiscConfig{})
	for i := range 40 {
		h.transmit(homaData(n, 2, 1_000_000, uint32(i*1400)), 0)
		h.transmit(tcpData(n, 100+uint16(i%2), 1400), 0)
	}
	h.transmit(tcpData(n, 300, 100), 0) // a short packet of a flow with none deferred
	if got := (*out)[len(*out)-1]; got.tcp != 300 {
		t.Fatalf("the short TCP packet was deferred: last out %+v", got)
	}
	n.clock.Run(int64(time.Millisecond))
	// Over the deferred frames, Homa's and TCP's alternate, and the two
	// flows take turns.
	var homa, tcp int
	var last uint16
	for _, d := range (*out)[10:70] {
		if d.id != 0 {
			homa++
			continue
		}
		tcp++
		if d.tcp == last && d.tcp != 300 {
			t.Fatalf("flow %d sent twice in a row while the other waited: %+v", d.tcp, *out)
		}
		last = d.tcp
	}
	if homa < 28 || homa > 32 {
		t.Errorf("of 60 frames while both waited, %d Homa and %d TCP; want half each", homa, tcp)
	}
}

// TestQdiscShortTCPByFrame: a TCP packet is short by its frame's length,
// Ethernet header included (qdisc_pkt_len): one of 990 bytes of IP is
// 1,004 bytes long and waits while the backlog is at its cap; one of 980
// (994 with the header) passes.
func TestQdiscShortTCPByFrame(t *testing.T) {
	for _, c := range []struct {
		payload int
		passes  bool
	}{{990 - 40, false}, {980 - 40, true}} {
		n, h, out := qdiscHost(t, QdiscConfig{})
		for i := range 20 {
			h.transmit(homaData(n, 2, 1_000_000, uint32(i*1400)), 0)
		}
		h.transmit(tcpData(n, 300, c.payload), 0)
		last := (*out)[len(*out)-1]
		if got := last.tcp == 300; got != c.passes {
			t.Errorf("a TCP packet of %d IP bytes passed at once: %v, want %v", 40+c.payload, got, c.passes)
		}
	}
}

// TestQdiscEstimateKeepsTheCap: at 100 Gbit/s, with a long message's
// packets deferred and a small packet passing every 30 ns (a grant's
// pace at full load), the NIC's real backlog when the qdisc hands it a
// deferred packet stays within the cap and one frame: the estimate must
// run at 99% of the link and not lose the fractions of small packets'
// times.
func TestQdiscEstimateKeepsTheCap(t *testing.T) {
	n := star(t, 2, 100e9)
	h := n.Node("h1")
	if err := h.UseQdisc(QdiscConfig{}); err != nil {
		t.Fatal(err)
	}
	// nicDone is when the NIC, at exactly the link rate, ends all it was
	// handed (ps); worst is the most it held when the qdisc handed over a
	// deferred packet.
	var nicDone, worst int64
	h.qd.out = func(f []byte) {
		now := n.clock.now * 1000
		if h.qd.stats.HomaDeferred > 0 && len(f) > 1000 {
			worst = max(worst, nicDone-now)
		}
		nicDone = max(nicDone, now) + int64(len(f)+24)*80 // 80 ps a byte at 100 Gbit/s
		n.freeFrame(f)
	}
	const pkts = 3000
	for i := range pkts {
		h.transmit(homaData(n, 2, 10_000_000, uint32(i*1400)), 0)
	}
	small := n.frame(&h.Host, &n.Node("h2").Host, wire.IPProto, 0,
		wire.AppendData(nil, &wire.Data{Common: wire.Common{SenderID: 4}, MessageLength: 40}), 0)
	for i := range 10_000 {
		n.clock.At(int64(i*30), func() { h.transmit(append([]byte(nil), small...), 0) })
	}
	n.clock.Run(int64(time.Millisecond))
	if limit := int64(5*time.Microsecond)*1000 + int64(1500+38)*80; worst > limit {
		t.Errorf("the NIC held %.2f us when the qdisc handed it a deferred packet; want at most the cap and a frame, %.2f us",
			float64(worst)/1e6, float64(limit)/1e6)
	}
	if st := h.QdiscStats(); st.HomaDeferred == 0 {
		t.Fatalf("nothing deferred: %+v", st)
	}
}

// TestQdiscOldestByFirstPacket: a message's age for the oldest message's
// turn is when its first packet came (homa_qdisc's msgout.init_time), not
// when one was first deferred: message 2 began at 0 and passed, message 4
// came and was deferred at 1 us, message 2's later packets at 2 us; the
// oldest message's turns then go to message 2, which SRPT alone would
// hold back until message 4 is done.
func TestQdiscOldestByFirstPacket(t *testing.T) {
	n, h, out := qdiscHost(t, QdiscConfig{})
	h.transmit(homaData(n, 2, 2_000_000, 0), 0)
	n.clock.At(1000, func() {
		for i := range 60 {
			h.transmit(homaData(n, 4, 1_000_000, uint32(i*1400)), 0)
		}
	})
	n.clock.At(2000, func() {
		for i := 1; i <= 10; i++ {
			h.transmit(homaData(n, 2, 2_000_000, uint32(i*1400)), 0)
		}
	})
	n.clock.Run(int64(time.Millisecond))
	first2, last4 := -1, -1
	for i, d := range (*out)[1:] {
		switch {
		case d.id == 2 && first2 < 0:
			first2 = i
		case d.id == 4:
			last4 = i
		}
	}
	if first2 < 0 || first2 > last4 {
		t.Errorf("message 2's later packets left at %d, after message 4's last at %d: its turn as the oldest went to message 4", first2, last4)
	}
}
