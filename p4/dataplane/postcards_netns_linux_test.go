package dataplane

import (
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"

	"github.com/homatb/homatb/p4/switchstats"
)

// inNS runs fn inside namespace name.
func inNS(t *testing.T, name string, fn func() error) {
	t.Helper()
	if err := ns.WithNetNSPath("/var/run/netns/"+name, func(ns.NetNS) error { return fn() }); err != nil {
		t.Fatalf("in %s: %v", name, err)
	}
}

// TestNamespacePostcards forwards Homa packets (raw IP protocol 146) and a
// TCP exchange between two namespaces through the switch while recording,
// and finds each packet's record with its transport key.
func TestNamespacePostcards(t *testing.T) {
	hosts := setupHosts(t)
	d := startSwitch(t, hosts, nil)
	path := filepath.Join(t.TempDir(), "s1.postcards")
	if err := d.StartPostcards(path); err != nil {
		t.Fatal(err)
	}

	// Three Homa DATA packets of one RPC, as wire lays out
	// the common header: ports, offset, type at 11, doff at 12, sender id at 20.
	var raw net.PacketConn
	inNS(t, hosts[0].ns, func() (err error) {
		raw, err = net.ListenPacket("ip4:146", hosts[0].ip.String())
		return err
	})
	defer raw.Close()
	const rpc = 0x1234_5678_9abc_def0
	for i := range 3 {
		h := make([]byte, 60)
		binary.BigEndian.PutUint16(h[0:], 40000)
		binary.BigEndian.PutUint16(h[2:], 99)
		binary.BigEndian.PutUint32(h[4:], uint32(i*1400))
		h[11], h[12] = 0x10, 10<<4
		binary.BigEndian.PutUint64(h[20:], rpc)
		if _, err := raw.WriteTo(h, &net.IPAddr{IP: hosts[1].ip}); err != nil {
			t.Fatal(err)
		}
	}

	// A TCP connection carrying 100 bytes from A to B.
	var ln net.Listener
	inNS(t, hosts[1].ns, func() (err error) {
		ln, err = net.Listen("tcp4", net.JoinHostPort(hosts[1].ip.String(), "9100"))
		return err
	})
	defer ln.Close()
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		got <- int(n)
	}()
	var conn net.Conn
	inNS(t, hosts[0].ns, func() (err error) {
		conn, err = net.DialTimeout("tcp4", net.JoinHostPort(hosts[1].ip.String(), "9100"), 3*time.Second)
		return err
	})
	if _, err := conn.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	select {
	case n := <-got:
		if n != 100 {
			t.Fatalf("server got %d bytes", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("TCP exchange timed out")
	}
	time.Sleep(50 * time.Millisecond) // the FIN's ACK

	s, err := d.StopPostcards()
	if err != nil {
		t.Fatal(err)
	}
	var homa, tcpData, tcpAll int
	for _, p := range readPostcards(t, path) {
		switch p.Kind {
		case switchstats.KindHoma:
			if p.RPCID != rpc || p.HomaType != 0x10 || p.Seq != uint32(homa*1400) || p.IngressPort != 1 || p.EgressPort != 2 || p.SrcPort != 40000 {
				t.Errorf("Homa record %d: %+v", homa, p)
			}
			homa++
		case switchstats.KindTCP:
			tcpAll++
			if p.PayloadLen > 0 {
				tcpData++
				if p.PayloadLen != 100 || p.DstPort != 9100 || p.SrcIP != [4]byte(hosts[0].ip) || p.EgressPort != 2 {
					t.Errorf("TCP data record: %+v", p)
				}
			}
		}
		if p.DequeueNs < p.EnqueueNs || p.EnqueueNs < p.ArrivalNs || p.ArrivalNs <= 0 {
			t.Errorf("record times out of order: %+v", p)
		}
	}
	if homa != 3 || tcpData != 1 || tcpAll < 5 {
		t.Errorf("records: %d Homa, %d TCP with data, %d TCP in all (summary %+v)", homa, tcpData, tcpAll, s)
	}
}
