package controller

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/controller/p4rtclient"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/pipeline"
	"github.com/homatb/homatb/p4/target/targettest"
)

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every few milliseconds until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// oneSwitchTopology is a switch with three hosts on ports 1..3.
func oneSwitchTopology(t testing.TB, sw *targettest.Switch) *Topology {
	t.Helper()
	topo := &Topology{Switches: []Switch{{Name: "s1", DeviceID: sw.DeviceID(), Address: sw.Addr()}}}
	for i := 1; i <= 3; i++ {
		topo.Hosts = append(topo.Hosts, Host{
			Name: "h" + string(rune('0'+i)), IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}),
			MAC: MAC{2, 0, 0, 0, 0, byte(i)}, Switch: "s1", Port: i,
		})
	}
	return topo
}

// ipv4Frame builds an Ethernet+IPv4 frame to dst with the given TOS byte.
func ipv4Frame(dst netip.Addr, tos byte, payload int) []byte {
	f := make([]byte, 14+20+payload)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	ip[1] = tos
	binary.BigEndian.PutUint16(ip[2:], uint16(20+payload))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:16], []byte{10, 0, 0, 99})
	d := dst.As4()
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], pipeline.Checksum(ip[:20]))
	return f
}

// programmed connects to the topology's switches and programs them; the
// fabric is closed by t.Cleanup.
func programmed(t testing.TB, topo *Topology, policy Policy) *Switches {
	t.Helper()
	ctx := testContext(t)
	f, err := Connect(ctx, topo, p4rtclient.WithDialTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if err := f.Program(ctx, policy); err != nil {
		t.Fatalf("Program: %v", err)
	}
	return f
}

// torSchema is the name resolver of the embedded tor.p4 P4Info.
func torSchema(t testing.TB) *p4rtclient.Schema {
	t.Helper()
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	s, err := p4rtclient.NewSchema(info)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// program connects to every switch of the topology, programs it with the
// policy, verifies, and disconnects. Use Connect and Switches.Program to keep
// the switches under control (re-push on restart, telemetry) afterwards.
func program(ctx context.Context, topo *Topology, policy Policy, opts ...p4rtclient.Option) error {
	f, err := Connect(ctx, topo, opts...)
	if err != nil {
		return err
	}
	return errors.Join(f.Program(ctx, policy), f.Close())
}
