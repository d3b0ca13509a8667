//go:build linux

package homa_test

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// TestUETSocket runs the uet variant between two namespaces over veth on
// its real sockets (sent on a raw UDP socket with the entropy as source
// port and no UDP checksum, received on UDP port 4793, or the port
// configured): 300 Calls of mixed sizes, each response checked, with
// per-packet entropy on.
func TestUETSocket(t *testing.T) {
	for _, port := range []uint16{0, 5001} {
		t.Run(fmt.Sprintf("port %d", cmp.Or(port, wire.UETPort)), func(t *testing.T) {
			v := newVethPair(t, fmt.Sprintf("uet%d", port), 0)
			cfg := homaconf.Config{Variant: homaconf.VariantUET, LinkBps: 10e9, UnloadedRTT: 50 * time.Microsecond, TimeoutTicks: 1000, UETPort: port}
			_, calls := socketCalls(t, v, cfg)
			calls(300, 0)
		})
	}
}

// TestUETEntropyOnWire: a datagram written with an entropy value leaves
// from that source port (the bound port without one), to the bound port
// (4793, or another configured), with the payload intact, as a plain UDP
// socket on the other side sees.
func TestUETEntropyOnWire(t *testing.T) {
	for _, port := range []uint16{wire.UETPort, 5001} {
		t.Run(fmt.Sprintf("port %d", port), func(t *testing.T) { uetEntropyOnWire(t, port) })
	}
}

func uetEntropyOnWire(t *testing.T, port uint16) {
	v := newVethPair(t, fmt.Sprintf("ent%d", port), 0)
	var conn *homa.RawConn
	if err := inNetns(v.ns[0], func() (err error) {
		conn, err = homa.ListenUET(v.addr[0], port)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var peer *net.UDPConn
	if err := inNetns(v.ns[1], func() (err error) {
		peer, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(v.addr[1], port)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	entropies := []uint16{0xc001, 0xfffe, 0}
	var out []homa.Packet
	for i, e := range entropies {
		out = append(out, homa.Packet{Buf: []byte{byte(i), 'u', 'e', 't'}, Addr: v.addr[1], TOS: homa.TOS(3), Entropy: e})
	}
	if err := conn.WriteBatch(out); err != nil {
		t.Fatal(err)
	}
	if err := peer.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for range entropies {
		n, from, err := peer.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("datagram not received: %v", err)
		}
		i := int(buf[0])
		want := entropies[i]
		if want == 0 {
			want = port
		}
		if n != 4 || string(buf[1:n]) != "uet" || from.Port() != want || from.Addr() != v.addr[0] {
			t.Errorf("datagram %d: %d bytes %q from %v, want 4 bytes from %v:%d", i, n, buf[:n], from, v.addr[0], want)
		}
	}
}
