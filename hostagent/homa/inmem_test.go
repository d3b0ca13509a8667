package homa_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/wire"
)

// TestIncompleteMemoryBound floods a server with one-packet requests that
// each claim 1 MB, from many forged addresses, while an honest client's
// Call is in flight. Most sit at the start of their message, where a
// buffer grown with the bytes received stays one packet long; a few
// sources send the message's last packet instead, which makes the buffer
// whole, and those the per-peer bound refuses. The memory held stays
// within the bounds (without them, and allocating the claimed length, it
// would be 2 GB), the refused packets are counted as in_memory, and the
// honest Call completes.
func TestIncompleteMemoryBound(t *testing.T) {
	const (
		total   = 16 << 20
		perPeer = 2 << 20
		msgLen  = 1_000_000
		heads   = 2000 // packets at offset 0, from 250 sources
		tails   = 80   // last packets, from 4 sources
	)
	p := newDrivenPair(t, homaconf.Config{LinkBps: 1e9, MaxIncompleteBytes: total, MaxIncompletePeerBytes: perPeer})
	req := bytes.Repeat([]byte{3}, 200_000)
	var got []byte
	var callErr error
	finished := false
	p.cli.Call(netip.AddrPortFrom(srvAddr, serverPort), req, func(resp []byte, _ homa.CallInfo, err error) {
		got, callErr, finished = resp, err, true
	})
	srv := p.srv.Endpoint()
	payload := make([]byte, 1000)
	for i := range heads + tails {
		src := netip.AddrFrom4([4]byte{10, 147, 0, byte(i % 250)})
		off := uint32(0)
		if i >= heads {
			src = netip.AddrFrom4([4]byte{10, 148, 0, byte(i % 4)})
			off = msgLen - uint32(len(payload))
		}
		c := wire.Common{SPort: 0x8000, DPort: serverPort, SenderID: uint64(2*i + 10)}
		b := append(wire.AppendData(nil, &wire.Data{Common: c, MessageLength: msgLen, Offset: off, Incoming: msgLen}), payload...)
		p.srv.Deliver([]homa.Packet{{Buf: b, Addr: src}})
		if charged, bufs := homa.IncompleteHeld(srv); charged > total || bufs > charged {
			t.Fatalf("after %d forged packets: %d bytes charged, %d in buffers; bound %d", i+1, charged, bufs, total)
		}
	}
	charged, bufs := homa.IncompleteHeld(srv)
	refused := srv.Stats().Drops[homa.DropInMemory]
	t.Logf("%d forged 1 MB claims: %d bytes charged, %d in buffers, %d refused", heads+tails, charged, bufs, refused)
	if want := uint64(tails - 4*2); refused != want { // two whole messages per source fit in perPeer
		t.Errorf("%d packets refused as in_memory, want %d", refused, want)
	}
	if !p.pump(200_000, func() bool { return finished }) {
		t.Fatalf("honest call did not finish:\n%s", homa.DescribeRPC(p.cli.Endpoint(), 0))
	}
	if callErr != nil || !bytes.Equal(got, req) {
		t.Fatalf("honest call: err %v, %d bytes back, want its %d", callErr, len(got), len(req))
	}
	// Run the clock past the forged RPCs' timeout: everything is returned.
	p.pump(20_000, func() bool { c, _ := homa.IncompleteHeld(srv); return c == 0 })
	if charged, _ := homa.IncompleteHeld(srv); charged != 0 {
		t.Errorf("%d bytes still charged after the flood timed out", charged)
	}
}

// TestIncompleteMemoryPerPeer: one source alone cannot take more than its
// share, so another source's message is admitted while it floods.
func TestIncompleteMemoryPerPeer(t *testing.T) {
	const msgLen = 1_000_000
	cfg := homaconf.Config{LinkBps: 1e9, MaxIncompleteBytes: 8 << 20, MaxIncompletePeerBytes: 2 << 20}
	p := newDrivenPair(t, cfg)
	srv := p.srv.Endpoint()
	for i := range 20 {
		c := wire.Common{SPort: 0x8000, DPort: serverPort, SenderID: uint64(2*i + 10)}
		b := append(wire.AppendData(nil, &wire.Data{Common: c, MessageLength: msgLen, Offset: msgLen - 1000, Incoming: msgLen}), make([]byte, 1000)...)
		p.srv.Deliver([]homa.Packet{{Buf: b, Addr: evilAddr}})
	}
	charged, _ := homa.IncompleteHeld(srv)
	if charged > 2<<20 {
		t.Errorf("one source holds %d bytes, bound %d", charged, 2<<20)
	}
	if got := srv.Stats().Drops[homa.DropInMemory]; got != 18 {
		t.Errorf("%d refused as in_memory, want 18 (two 1 MB messages fit in 2 MiB)", got)
	}
	done := false
	var callErr error
	p.cli.Call(netip.AddrPortFrom(srvAddr, serverPort), make([]byte, 200_000), func(_ []byte, _ homa.CallInfo, err error) {
		callErr, done = err, true
	})
	if !p.pump(200_000, func() bool { return done }) || callErr != nil {
		t.Fatalf("call from another source: done %v, err %v", done, callErr)
	}
}
