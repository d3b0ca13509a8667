package switchtest

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// homaRaw opens a raw IPv4 protocol-146 socket in h's namespace; reads
// return the IPv4 header too.
func homaRaw(t *testing.T, h host) *net.IPConn {
	t.Helper()
	var c *net.IPConn
	if err := ns.WithNetNSPath("/var/run/netns/"+h.netns, func(ns.NetNS) (err error) {
		c, err = net.ListenIP("ip4:146", &net.IPAddr{IP: h.ip})
		return err
	}); err != nil {
		t.Fatalf("raw socket in %s: %v", h.netns, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// homaPacket is a Homa packet of type typ (common header and the rest of a
// 56-byte DATA header, then payload bytes) with rank and id (common header
// bytes 20..27, the sender id).
func homaPacket(typ byte, rank uint32, id uint64, payload int) []byte {
	b := make([]byte, 56+payload)
	b[11] = typ
	binary.BigEndian.PutUint32(b[16:], rank)
	binary.BigEndian.PutUint64(b[20:], id)
	return b
}

// received is one packet read from a raw socket: its IPv4 total length,
// flags byte, rank and id.
type received struct {
	ipLen      int
	flags      byte
	rank       uint32
	id         uint64
	ipv4Header []byte
}

// collect reads packets from c until none arrives for 300 ms.
func collect(t *testing.T, c *net.IPConn) []received {
	t.Helper()
	var out []received
	buf := make([]byte, 2048)
	for range 10_000 {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := c.Read(buf)
		if err != nil {
			return out
		}
		if n < 20+28 {
			t.Fatalf("short packet of %d bytes", n)
		}
		hl := int(buf[0]&0x0f) * 4
		h := buf[hl:n]
		out = append(out, received{ipLen: int(binary.BigEndian.Uint16(buf[2:])), flags: h[8],
			rank: binary.BigEndian.Uint32(h[16:]), id: binary.BigEndian.Uint64(h[20:]), ipv4Header: append([]byte(nil), buf[:hl]...)})
	}
	t.Fatal("more than 10,000 packets")
	return nil
}

// modeRack is a rack whose port to host B is shaped to rate bit/s and runs
// the given port_mode action, with ARP resolved from A to B.
func modeRack(t *testing.T, rate uint64, action uint32, arg []byte) (r *rack, src, dst *net.IPConn) {
	t.Helper()
	hs := newHosts(t)
	r = newRack(t, hs, func(c *dataplane.Config) {
		c.Unshaped = false
		c.PortRateBps = map[uint16]uint64{hs[0].port: 1e9, hs[1].port: rate}
	})
	r.program(t)
	a := &p4v1.Action{ActionId: action}
	if arg != nil {
		a.Params = []*p4v1.Action_Param{{ParamId: 1, Value: arg}}
	}
	te := &p4v1.TableEntry{TableId: p4.TablePortMode,
		Match:  []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{byte(hs[1].port)}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}}
	if _, err := r.client.Write(timeout(t), &p4v1.WriteRequest{DeviceId: 1, ElectionId: r.elect,
		Updates: []*p4v1.Update{{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}}}); err != nil {
		t.Fatalf("port_mode: %v", err)
	}
	src, dst = homaRaw(t, hs[0]), homaRaw(t, hs[1])
	// A control packet first, so no DATA packet waits for ARP.
	if _, err := src.WriteToIP(homaPacket(0x11, 0, 0, 0), &net.IPAddr{IP: hs[1].ip}); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, dst); len(got) != 1 {
		t.Fatalf("warm-up: %d packets arrived, want 1", len(got))
	}
	return r, src, dst
}

// TestTrimThroughSwitch: a burst of Homa DATA packets to a trim_above port
// (threshold 4, 10 Mbit/s) through real sockets: the first ones arrive
// whole, the others as trimmed headers that Linux accepts (so their IPv4
// length and checksum are valid), none is lost, and the headers overtake
// the queued whole packets.
func TestTrimThroughSwitch(t *testing.T) {
	r, src, dst := modeRack(t, 10e6, p4.ActionTrimAbove, []byte{4})
	to := &net.IPAddr{IP: r.hosts[1].ip}
	const n = 40
	for i := range n {
		if _, err := src.WriteToIP(homaPacket(0x10, 0, uint64(i+1), 1000), to); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, dst)
	if len(got) != n {
		t.Fatalf("%d of %d packets arrived", len(got), n)
	}
	trimmed, firstTrimmed, lastWhole := 0, -1, -1
	for i, p := range got {
		switch {
		case p.ipLen == 76 && p.flags&dataplane.HomaFlagTrimmed != 0:
			trimmed++
			if firstTrimmed < 0 {
				firstTrimmed = i
			}
		case p.ipLen == 20+56+1000 && p.flags == 0:
			lastWhole = i
		default:
			t.Fatalf("packet %d: IPv4 length %d, flags %#02x", i, p.ipLen, p.flags)
		}
	}
	t.Logf("%d of %d trimmed; first header at %d, last whole packet at %d", trimmed, n, firstTrimmed, lastWhole)
	if trimmed == 0 || trimmed > n-4 {
		t.Errorf("%d of %d trimmed, want some and at most %d", trimmed, n, n-4)
	}
	// Trimmed in their queue, the headers would all follow the whole
	// packets queued before them; in queue 7 they overtake them.
	if firstTrimmed > lastWhole {
		t.Errorf("every trimmed header (first at %d) came after every whole packet (last at %d)", firstTrimmed, lastWhole)
	}
	if st := r.dp.Stats(); st.Ports[1].TrimmedPkts != uint64(trimmed) {
		t.Errorf("trimmed_pkts %d, received %d trimmed", st.Ports[1].TrimmedPkts, trimmed)
	}
}

// TestRankOrderThroughSwitch: a burst of Homa DATA packets of falling rank
// to a rank_order port with room for four: every packet after the first
// leaves in rising rank order, and those that did not arrive are the
// port's rank drops. The port runs at 1 Mbit/s so that the whole burst is
// in before the first packet's 8.8 ms on the wire end (at 10 Mbit/s a
// loaded CI machine once took longer than its 0.9 ms to write the burst,
// and the second departure was chosen among part of it).
func TestRankOrderThroughSwitch(t *testing.T) {
	const size = 14 + 20 + 56 + 1000
	r, src, dst := modeRack(t, 1e6, p4.ActionRankOrder, binary.BigEndian.AppendUint32(nil, 4*size))
	to := &net.IPAddr{IP: r.hosts[1].ip}
	const n = 30
	for i := range n {
		if _, err := src.WriteToIP(homaPacket(0x10, uint32(1000-i), uint64(i+1), 1000), to); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, dst)
	if len(got) < 2 {
		t.Fatalf("%d packets arrived", len(got))
	}
	for i := 2; i < len(got); i++ {
		if got[i].rank < got[i-1].rank {
			t.Errorf("arrival %d has rank %d after rank %d", i, got[i].rank, got[i-1].rank)
		}
	}
	st := r.dp.Stats().Ports[1]
	var ranks []uint32
	for _, p := range got {
		ranks = append(ranks, p.rank)
	}
	t.Logf("ranks in arrival order %v; %d rank drops", ranks, st.RankDrops)
	if st.RankDrops == 0 || st.RankDrops+uint64(len(got)) != n {
		t.Errorf("%d arrived, %d rank drops, of %d sent", len(got), st.RankDrops, n)
	}
}
