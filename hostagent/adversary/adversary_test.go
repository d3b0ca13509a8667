package adversary

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/adversary/kind"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/wire"
)

// recorder keeps copies of what Run sends.
type recorder struct{ pkts []homa.Packet }

func (r *recorder) WriteBatch(pkts []homa.Packet) error {
	for _, p := range pkts {
		r.pkts = append(r.pkts, homa.Packet{Buf: bytes.Clone(p.Buf), Addr: p.Addr, TOS: p.TOS})
	}
	return nil
}

// TestKinds runs each kind for 100 ms at 20 Mbit/s and checks the bytes
// stay within the rate's bound and each packet is what the kind
// promises: GRANTs and RESENDs that decode, whole blind messages of DATA,
// top-priority datagrams, and Homa packets that mostly fail to decode.
func TestKinds(t *testing.T) {
	victim := netip.MustParseAddr("10.0.0.2")
	for _, k := range kind.All() {
		t.Run(string(k), func(t *testing.T) {
			var r recorder
			cfg := Config{Kind: k, Target: victim, Port: 4000, Rate: 20e6, For: 100 * time.Millisecond, Seed: 1}
			c, err := Run(t.Context(), &r, cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The rate's bytes, and at most one packet more.
			if max := uint64(cfg.Rate/8*cfg.For.Seconds()) + 1500; c.Packets == 0 || c.Bytes > max || int(c.Packets) != len(r.pkts) {
				t.Fatalf("%d packets counted, %d sent, %d bytes: want some, at most %d bytes", c.Packets, len(r.pkts), c.Bytes, max)
			}
			bad := 0
			for _, p := range r.pkts {
				if p.Addr != victim {
					t.Fatalf("packet to %v", p.Addr)
				}
				var err error
				switch k {
				case kind.ForgedGrants:
					var g wire.Grant
					g, err = wire.ParseGrant(p.Buf)
					if err == nil && (g.DPort != clientPort || g.FromClient()) {
						t.Fatalf("grant %+v: not a server's to a client", g)
					}
				case kind.ForgedResend:
					_, err = wire.ParseResend(p.Buf)
				case kind.UnschedFlood:
					var d wire.Data
					d, _, err = wire.ParseData(p.Buf)
					if err == nil && d.Incoming != d.MessageLength {
						t.Fatalf("DATA %+v is not all unscheduled", d)
					}
				case kind.PriorityAbuse:
					if len(p.Buf) != 1500-28 {
						t.Fatalf("datagram of %d bytes, want %d", len(p.Buf), 1500-28)
					}
				case kind.Malformed:
					if _, err := wire.ParseCommon(p.Buf); err != nil {
						bad++
						continue
					}
					if !decodes(p.Buf) {
						bad++
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s packet does not decode: %v", k, err)
				}
				if p.TOS != topTOS {
					t.Fatalf("TOS %#x, want the top priority's %#x", p.TOS, topTOS)
				}
			}
			if k == kind.Malformed && bad != len(r.pkts) {
				t.Errorf("only %d of %d malformed packets fail to decode", bad, len(r.pkts))
			}
		})
	}
}

// decodes reports whether b decodes as the packet type it names.
func decodes(b []byte) bool {
	c, _ := wire.ParseCommon(b)
	var err error
	switch c.Type {
	case wire.TypeData:
		_, _, err = wire.ParseData(b)
	case wire.TypeGrant:
		_, err = wire.ParseGrant(b)
	case wire.TypeResend:
		_, err = wire.ParseResend(b)
	case wire.TypeCutoffs:
		_, err = wire.ParseCutoffs(b)
	}
	return err == nil
}

// TestRunBounded: MaxPackets and a cancelled context end an attack early.
func TestRunBounded(t *testing.T) {
	var r recorder
	c, err := Run(t.Context(), &r, Config{Kind: kind.ForgedResend, Target: netip.MustParseAddr("10.0.0.2"), Rate: 1e9, For: time.Second, MaxPackets: 100})
	if err != nil || c.Packets != 100 {
		t.Fatalf("%d packets, err %v; want 100", c.Packets, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if c, err := Run(ctx, &r, Config{Kind: kind.Malformed, Target: netip.MustParseAddr("10.0.0.2"), Rate: 1e9, For: time.Hour}); err != nil || c.Packets != 0 {
		t.Fatalf("cancelled: %d packets, err %v", c.Packets, err)
	}
	if _, err := Run(t.Context(), &r, Config{Kind: "smurf", Rate: 1, For: time.Second}); err == nil {
		t.Error("an unknown kind ran")
	}
}

// TestSpoofedForgeries: with Spoof, forged GRANTs and RESENDs go to each
// peer in turn, from the victim's server port to the peers' Calls, naming
// ids 2, 4, ... 2×IDWindow on the victim's side (odd), then again.
func TestSpoofedForgeries(t *testing.T) {
	peers := []netip.Addr{netip.MustParseAddr("10.0.0.3"), netip.MustParseAddr("10.0.0.4")}
	for _, k := range []kind.Kind{kind.ForgedGrants, kind.ForgedResend} {
		var r recorder
		cfg := Config{Kind: k, Target: netip.MustParseAddr("10.0.0.2"), Port: 4000, Rate: 1e6, For: time.Second, MaxPackets: 10,
			Spoof: true, Peers: peers, IDWindow: 3}
		if _, err := Run(t.Context(), &r, cfg); err != nil {
			t.Fatal(err)
		}
		for i, p := range r.pkts {
			c, err := wire.ParseCommon(p.Buf)
			if err != nil {
				t.Fatalf("%s packet %d: %v", k, i, err)
			}
			wantID := uint64(2*((i/2)%3+1)) | 1
			if p.Addr != peers[i%2] || c.SenderID != wantID || c.SPort != 4000 || c.DPort != clientPort {
				t.Errorf("%s packet %d to %v: %+v, want to %v id %d from 4000 to %d", k, i, p.Addr, c, peers[i%2], wantID, clientPort)
			}
		}
	}
	if _, err := Run(t.Context(), &recorder{}, Config{Kind: kind.ForgedGrants, Target: netip.MustParseAddr("10.0.0.2"), Rate: 1e6, For: time.Second, Spoof: true}); err == nil {
		t.Error("spoofing without peers accepted")
	}
}
