// Package adversary is a misbehaving host: it sends forged Homa control
// packets, blind unscheduled floods, traffic marked with the top priority,
// or malformed Homa packets at a victim, at a bounded rate for a bounded
// time, and counts what it sent. It runs in a process of its own
// (`homatb adversary`) in one of the run's hosts, so its packets go out
// through that host's link and its counters are kept apart from the
// victims' books.
//
// The forged kinds guess RPC ids: the engine draws each Endpoint's first
// id at random from 62 bits, and an adversary on a switched fabric sees
// none of the victims' packets, so a guess names a live RPC with
// negligible probability. What they measure is the victims' cost of
// refusing them, and for RESENDs the answers (RPC_UNKNOWN) a victim sends
// back, which its resend_limit bounds.
package adversary

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/homatb/homatb/hostagent/adversary/kind"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/wire"
	"github.com/homatb/homatb/runfmt"
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
}

// Counters are what the adversary sent.
type Counters = runfmt.Adversary

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
				pkts[n].Buf, pkts[n].TOS = g.next(pkts[n].Buf[:0])
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
}

func newGenerator(cfg Config) *generator {
	return &generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 36))}
}

// floodMessage is the length of each unsched_flood message: ten full
// packets, all sent blind.
func (g *generator) floodMessage() uint32 { return 10 * g.payload() }

func (g *generator) payload() uint32 { return uint32(g.cfg.MTU - ipHeader - wire.DataLen) }

// next appends the next packet to b and returns it with its TOS byte.
func (g *generator) next(b []byte) ([]byte, uint8) {
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
