// Package adversary is a misbehaving host: it sends forged Homa control
// packets, blind unscheduled floods, traffic marked with the top priority,
// or malformed Homa packets at a victim, at a bounded rate for a bounded
// time, and counts what it sent. It runs in a process of its own
// (`homatb adversary`) in one of the run's hosts, so its packets go out
// through that host's link and its counters are kept apart from the
// victims' books.
//
// The forged kinds guess RPC ids. By default the engine draws each
// Endpoint's first id at random from 62 bits, and an adversary on a
// switched fabric sees none of the victims' packets, so a guess names a
// live RPC with negligible probability: what they measure is the victims'
// cost of refusing them, and for RESENDs the answers (RPC_UNKNOWN) a
// victim sends back, which its resend_limit bounds. With Config.Spoof the
// forged packets instead go to the victim's peers from the victim's own
// address (a raw IPv4 socket writing its own headers), naming the ids
// 2, 4, ... 2×IDWindow that victims numbering their RPCs as Linux does
// (homa sequential_ids) give their first RPCs: the forgeries then name
// live RPCs, pass the engine's peer check, and only the switch's
// anti-spoofing stops them.
package adversary

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/homatb/homatb/hostagent/adversary/kind"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/wire"
)

// Kind is an attack; the kinds:
//
//   - forged_grants: GRANTs for guessed RPC ids of the victim's Calls, as
//     if from their server, at the top priority;
//   - forged_resend: RESENDs (everything, ResendAll) for guessed ids of
//     requests to the victim's server port;
//   - unsched_flood: whole messages of blind DATA (every byte
//     unscheduled) to the victim's server port at the top priority, each a
//     new RPC;
//   - priority_abuse: MTU-sized UDP datagrams marked with the top DSCP
//     (TOS 0xe0) to the victim's discard port: not Homa's traffic, but in
//     Homa's top queue in the switch;
//   - malformed: Homa packets of several types, each damaged one way:
//     truncated, an unknown type, a doff of another type, a field out of
//     range (lengths, offsets beyond the message, priorities).
type Kind = kind.Kind

// Config is one attack.
type Config struct {
	Kind Kind
	// Target is the victim host's address; Port its Homa server port.
	Target netip.Addr
	Port   uint16
	// Rate is bits per second of IP packets (the IPv4 header counted).
	Rate float64
	// For bounds the attack's time, MaxPackets its count (0: as many of
	// the smallest packets as Rate×For allows).
	For        time.Duration
	MaxPackets uint64
	// MTU is the link's (default 1500); DATA and datagrams fill it.
	MTU int
	// Seed makes the packets repeat.
	Seed uint64
	// Spoof sends forged_grants and forged_resend from Target's address
	// to each of Peers in turn (the hosts that exchange messages with
	// the victim), for the ids 2, 4, ... 2×IDWindow (default 64) of
	// their Calls from ClientPort (default 0x8000) to the victim's
	// server Port: a GRANT of a random part of the request, or a RESEND
	// of all of it, as if the victim had sent them.
	Spoof      bool
	Peers      []netip.Addr
	ClientPort uint16
	IDWindow   int
}

// Counters are what the adversary sent.
type Counters = rundir.Adversary

// Sender is a batch packet writer (homa.RawConn for the Homa kinds).
type Sender interface {
	WriteBatch(pkts []homa.Packet) error
}

// batch is the largest number of packets written at once.
const batch = 64

// Run sends cfg's packets through s until For has passed, MaxPackets
// went out, or ctx ends. Write errors (a full socket buffer) are counted,
// not fatal: the adversary does not back off.
func Run(ctx context.Context, s Sender, cfg Config) (Counters, error) {
	if !cfg.Kind.Valid() {
		return Counters{}, fmt.Errorf("adversary: kind %q not one of %v", cfg.Kind, kind.All())
	}
	if cfg.Rate <= 0 || cfg.For <= 0 {
		return Counters{}, fmt.Errorf("adversary: rate %g and for %v must be positive", cfg.Rate, cfg.For)
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	limit := cfg.MaxPackets
	if limit == 0 {
		limit = uint64(cfg.Rate/8*cfg.For.Seconds()/ipHeader) + 1
	}
	if cfg.Spoof && len(cfg.Peers) == 0 {
		return Counters{}, fmt.Errorf("adversary: spoofing %s needs the victim's peers", cfg.Kind)
	}
	if cfg.ClientPort == 0 {
		cfg.ClientPort = clientPort
	}
	if cfg.IDWindow <= 0 {
		cfg.IDWindow = defaultIDWindow
	}
	g := newGenerator(cfg)
	cnt := Counters{Kind: string(cfg.Kind), Target: cfg.Target.String(), RateBps: cfg.Rate}
	pkts := make([]homa.Packet, batch)
	for i := range pkts {
		pkts[i] = homa.Packet{Buf: make([]byte, 0, cfg.MTU), Addr: cfg.Target}
	}
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var owed, sent float64 // bytes on the wire's IP layer
	for cnt.Packets < limit {
		select {
		case <-ctx.Done():
			cnt.Seconds = time.Since(start).Seconds()
			return cnt, nil
		case now := <-tick.C:
			if now.Sub(start) >= cfg.For {
				cnt.Seconds = now.Sub(start).Seconds()
				return cnt, nil
			}
			// Bytes due by now, so a late tick catches up.
			owed = cfg.Rate/8*now.Sub(start).Seconds() - sent
		}
		for owed > 0 && cnt.Packets < limit {
			n := 0
			for n < batch && owed > 0 && cnt.Packets+uint64(n) < limit {
				g.next(&pkts[n])
				sz := float64(len(pkts[n].Buf) + g.header())
				owed -= sz
				sent += sz
				cnt.Bytes += uint64(len(pkts[n].Buf))
				n++
			}
			if err := s.WriteBatch(pkts[:n]); err != nil {
				cnt.WriteErrors++
			}
			cnt.Batches++
			cnt.Packets += uint64(n)
		}
	}
	cnt.Seconds = time.Since(start).Seconds()
	return cnt, nil
}

// clientPort is the engine's default Calls' source port (homaconf).
const clientPort = 0x8000

// defaultIDWindow is how many of each peer's first ids spoofed forgeries
// name: a bulk sender of the default incast starts a few RPCs a second.
const defaultIDWindow = 64

// topTOS is the TOS byte of the top priority (7).
const topTOS = 7 << 5

// ipHeader and udpHeader are the bytes in front of a packet's payload.
const (
	ipHeader  = 20
	udpHeader = 8
)

// header is the bytes in front of each packet the kernel sends: the IPv4
// header, and for priority_abuse the UDP header too.
func (g *generator) header() int {
	if g.cfg.Kind == kind.PriorityAbuse {
		return ipHeader + udpHeader
	}
	return ipHeader
}

// generator makes the packets of one attack.
type generator struct {
	cfg Config
	rng *rand.Rand
	// unsched_flood: the message being sent, its id and next offset.
	id     uint64
	offset uint32
	// spoofed forgeries: the next (peer, id) pair, peer first.
	peer, guess int
}

func newGenerator(cfg Config) *generator {
	return &generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 36))}
}

// floodMessage is the length of each unsched_flood message: ten full
// packets, all sent blind.
func (g *generator) floodMessage() uint32 { return 10 * g.payload() }

func (g *generator) payload() uint32 { return uint32(g.cfg.MTU - ipHeader - wire.DataLen) }

// next fills p with the next packet: its bytes, TOS and destination.
func (g *generator) next(p *homa.Packet) {
	p.Addr = g.cfg.Target
	if g.cfg.Spoof && (g.cfg.Kind == kind.ForgedGrants || g.cfg.Kind == kind.ForgedResend) {
		p.Buf, p.TOS, p.Addr = g.spoofed(p.Buf[:0])
		return
	}
	p.Buf, p.TOS = g.packet(p.Buf[:0])
}

// spoofed appends a forged GRANT or RESEND from the victim's server port
// to a peer's Call and returns it with its TOS and the peer: the Call's
// id is the next guess, the victim's side of it (id + 1) on the wire.
func (g *generator) spoofed(b []byte) ([]byte, uint8, netip.Addr) {
	peer := g.cfg.Peers[g.peer]
	id := uint64(2*(g.guess+1)) | 1
	if g.peer++; g.peer == len(g.cfg.Peers) {
		g.peer, g.guess = 0, (g.guess+1)%g.cfg.IDWindow
	}
	c := wire.Common{SPort: g.cfg.Port, DPort: g.cfg.ClientPort, SenderID: id}
	if g.cfg.Kind == kind.ForgedGrants {
		return wire.AppendGrant(b, &wire.Grant{Common: c, Offset: 1 + g.rng.Uint32N(1_000_000), Priority: 7}), topTOS, peer
	}
	return wire.AppendResend(b, &wire.Resend{Common: c, Offset: 0, Length: wire.ResendAll, Priority: 7}), topTOS, peer
}

// packet appends the next packet of an unspoofed attack to b and returns
// it with its TOS byte.
func (g *generator) packet(b []byte) ([]byte, uint8) {
	switch g.cfg.Kind {
	case kind.ForgedGrants:
		c := wire.Common{SPort: g.cfg.Port, DPort: clientPort, SenderID: g.rng.Uint64() | 1}
		return wire.AppendGrant(b, &wire.Grant{Common: c, Offset: g.rng.Uint32N(1_000_000), Priority: 7}), topTOS
	case kind.ForgedResend:
		c := wire.Common{SPort: clientPort, DPort: g.cfg.Port, SenderID: g.rng.Uint64() &^ 1}
		return wire.AppendResend(b, &wire.Resend{Common: c, Offset: 0, Length: wire.ResendAll, Priority: 7}), topTOS
	case kind.UnschedFlood:
		n := g.floodMessage()
		if g.id == 0 || g.offset >= n {
			g.id, g.offset = g.rng.Uint64()&^1|2, 0
		}
		d := wire.Data{Common: wire.Common{SPort: clientPort, DPort: g.cfg.Port, SenderID: g.id},
			MessageLength: n, Incoming: n, Offset: g.offset}
		b = wire.AppendData(b, &d)
		pl := min(g.payload(), n-g.offset)
		g.offset += pl
		return b[:len(b)+int(pl)], topTOS // the buffer's bytes as payload: their value is irrelevant
	case kind.PriorityAbuse:
		return b[:g.cfg.MTU-ipHeader-udpHeader], topTOS // a UDP payload filling the MTU
	default:
		return g.malformed(b), uint8(g.rng.IntN(8)) << 5
	}
}

// malformed appends a valid packet of a random type, then damages it.
func (g *generator) malformed(b []byte) []byte {
	c := wire.Common{SPort: clientPort, DPort: g.cfg.Port, SenderID: g.rng.Uint64()}
	switch g.rng.IntN(5) {
	case 0:
		b = wire.AppendData(b, &wire.Data{Common: c, MessageLength: 5000, Incoming: 5000, Offset: 1400})
		b = b[:len(b)+int(min(1400, g.payload()))]
	case 1:
		b = wire.AppendGrant(b, &wire.Grant{Common: c, Offset: 9000, Priority: 3})
	case 2:
		b = wire.AppendResend(b, &wire.Resend{Common: c, Offset: 0, Length: 100})
	case 3:
		b = wire.AppendCutoffs(b, &wire.Cutoffs{Common: c, Version: 1})
	default:
		c.Type = wire.Type(0x13 + g.rng.IntN(2)) // RPC_UNKNOWN or BUSY
		b = wire.AppendHeaderOnly(b, &c)
	}
	switch g.rng.IntN(4) {
	case 0: // truncated inside its header, never empty
		return b[:1+g.rng.IntN(min(len(b), wire.DataLen)-1)]
	case 1: // unknown type
		b[wire.TypeOffset] = byte(0x20 + g.rng.IntN(0xe0))
	case 2: // doff of another type
		b[12] ^= 0x10
	default:
		b = g.breakField(b)
	}
	return b
}

// breakField puts one field of b (a valid packet) out of range, the
// field chosen by b's type: DATA's message length, offset, retransmit
// flag or payload; GRANT's and RESEND's priority; RESEND's length;
// CUTOFFS' version; a header-only packet is cut short.
func (g *generator) breakField(b []byte) []byte {
	switch wire.Type(b[wire.TypeOffset]) {
	case wire.TypeData:
		switch g.rng.IntN(4) {
		case 0:
			clear(b[28:32]) // message length 0
		case 1:
			b[52] = 0xff // offset beyond the message
		case 2:
			b[48] = 2 // retransmit flag
		default:
			return b[:wire.DataLen] // no payload
		}
	case wire.TypeGrant:
		b[wire.GrantLen-1] = byte(wire.MaxPriorities + g.rng.IntN(248))
	case wire.TypeResend:
		if g.rng.IntN(2) == 0 {
			clear(b[32:36]) // length 0
		} else {
			b[wire.ResendLen-1] = byte(wire.MaxPriorities + g.rng.IntN(248))
		}
	case wire.TypeCutoffs:
		clear(b[len(b)-2:]) // version 0
	default:
		return b[:wire.CommonLen-1-g.rng.IntN(8)]
	}
	return b
}
