package homa_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/homatest"
	"github.com/homatb/homatb/wire"
)

// The liveness property (issue #29): under any loss, every Call ends,
// completed or failed with a reason, no later than TimeoutTicks plus a
// small slack after the last packet its peer sent about it; no request
// runs twice in at-most-once mode; and once the traffic stops, the
// endpoints forget every RPC.

// lossModel decides which packets the network drops.
type lossModel struct {
	// rate is the long-run share of packets lost, in both directions.
	rate float64
	// burst: losses come in runs (Gilbert-Elliott: a bad state that loses
	// every packet, entered with rate/(1-rate)/meanBurst per packet and
	// left with 1/meanBurst, or after maxBurst), instead of one at a time.
	burst bool
	// typ, when set, loses packets of that type at typRate instead.
	typ     wire.Type
	typRate float64
}

func (l lossModel) String() string {
	s := fmt.Sprintf("loss=%v", l.rate)
	if l.burst {
		s += ",burst"
	}
	if l.typ != 0 {
		s += fmt.Sprintf(",%v=%v", l.typ, l.typRate)
	}
	return s
}

// meanBurst is the mean run of packets lost in the bad state, and maxBurst
// its longest: the chain moves a step per packet, so once traffic thins to
// a NEED_ACK every few ticks an unbounded run would span many timeouts,
// a partition rather than a burst (seen as a server holding a response
// after its client gave up, its NEED_ACKs lost 24 times in a row).
const (
	meanBurst = 4
	maxBurst  = 3 * meanBurst
)

// liveCase is one configuration the property is checked in.
type liveCase struct {
	loss        lossModel
	atLeastOnce bool
	smallResp   bool // 100 B responses instead of echoes
	variant     homaconf.Variant
	startMsg    bool
	// slow: a 20 Mbit/s network with the default tick, timeout and
	// unscheduled bytes of a scenario at that rate, and 200 KB requests.
	slow bool
}

func (c liveCase) String() string {
	s := c.loss.String()
	if c.variant != "" {
		s = string(c.variant) + "," + s
	}
	if c.atLeastOnce {
		s += ",at_least_once"
	}
	if c.smallResp {
		s += ",100B_responses"
	}
	if c.slow {
		s += ",20Mbit"
	}
	if c.startMsg {
		s += ",start_msg"
	}
	return s
}

// liveConfig is the endpoints' configuration: one packet of unscheduled
// bytes and a window of one packet per active message, as a 20 Mbit/s
// scenario without calibration has, so grants are on every message's
// critical path; a short tick keeps virtual time small.
func liveConfig(c liveCase) homaconf.Config {
	if c.slow {
		return homaconf.Config{Variant: c.variant, AtLeastOnce: c.atLeastOnce, LinkBps: 20e6}
	}
	return homaconf.Config{Variant: c.variant, AtLeastOnce: c.atLeastOnce, StartMsg: c.startMsg, LinkBps: 1e9,
		UnloadedRTT: time.Microsecond, Tick: 100 * time.Microsecond, TimeoutTicks: 40}
}

// slackTicks is how far past TimeoutTicks of silence a Call may end: the
// tick's phase, the RESEND round that finds the peer gone, and queueing.
const slackTicks = 10

// liveSizes are the request lengths: mostly short, some needing grants.
var liveSizes = []int{100, 100, 1000, 1500, 5000, 30_000, 100_000}

// rpcWatch follows the packets entering the network: per Call (by the
// client's address and the RPC id) the last time its peer sent a packet
// about it toward the client.
type rpcWatch struct {
	mu   sync.Mutex
	last map[[2]uint64]time.Time // (client address, RPC id) -> last peer packet
	// history is every packet of each RPC id (of any client): its time,
	// direction, type and fate, for the failure messages.
	history map[uint64][]string
	t0      time.Time
}

func (w *rpcWatch) trace(src netip.Addr, p homa.Packet, dropped bool) {
	c, err := wire.ParseCommon(p.Buf)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t0.IsZero() {
		w.t0 = time.Now()
	}
	fate := ""
	if dropped {
		fate = " lost"
	}
	id := c.SenderID &^ 1
	w.history[id] = append(w.history[id], fmt.Sprintf("%v %v>%v %v%s", time.Since(w.t0), src, p.Addr, c.Type, fate))
}

// tail is the last n packets of RPC id.
func (w *rpcWatch) tail(id uint64, n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.history[id]
	return h[max(0, len(h)-n):]
}

func (w *rpcWatch) saw(dst netip.Addr, p homa.Packet) {
	c, err := wire.ParseCommon(p.Buf)
	if err != nil || c.FromClient() {
		return
	}
	w.mu.Lock()
	w.last[[2]uint64{uint64(v4key(dst)), c.LocalID()}] = time.Now()
	w.mu.Unlock()
}

// silentSince is when the peer of the client's Call id last sent a packet
// about it, or start if later or never.
func (w *rpcWatch) silentSince(client netip.Addr, id uint64, start time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return lastOr(w.last[[2]uint64{uint64(v4key(client)), id}], start)
}

func v4key(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// dropper is the lossModel's state for one run: a random source and, per
// direction, whether the link is in its bad state.
type dropper struct {
	mu  sync.Mutex
	m   lossModel
	rng *rand.Rand
	bad map[[2]netip.Addr]int // the current run of losses in each direction
}

func (d *dropper) drop(src, dst netip.Addr, p homa.Packet) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m.typ != 0 {
		if c, err := wire.ParseCommon(p.Buf); err == nil && c.Type == d.m.typ {
			return d.rng.Float64() < d.m.typRate
		}
	}
	if !d.m.burst {
		return d.rng.Float64() < d.m.rate
	}
	k := [2]netip.Addr{src, dst}
	if d.bad[k] > 0 {
		if d.bad[k] < maxBurst && d.rng.Float64() >= 1.0/meanBurst {
			d.bad[k]++
		} else {
			d.bad[k] = 0
		}
	} else if d.rng.Float64() < d.m.rate/(1-d.m.rate)/meanBurst {
		d.bad[k] = 1
	}
	return d.bad[k] > 0
}

// liveOutcome is what one seed's run found wrong, empty if nothing.
type liveOutcome struct {
	problems []string
	calls    int
	failed   map[string]int
	lost     uint64
}

// runLiveness runs one seed of c: three clients, each with four Calls
// outstanding to one server at once, checked as the property says.
func runLiveness(t *testing.T, c liveCase, seed uint64) liveOutcome {
	var out liveOutcome
	synctest.Test(t, func(t *testing.T) {
		cfg := liveConfig(c)
		full, err := cfg.WithDefaults()
		if err != nil {
			t.Fatal(err)
		}
		bound := time.Duration(full.TimeoutTicks+slackTicks) * full.Tick
		watch := &rpcWatch{last: map[[2]uint64]time.Time{}, history: map[uint64][]string{}}
		dr := &dropper{m: c.loss, rng: rand.New(rand.NewPCG(seed, 29)), bad: map[[2]netip.Addr]int{}}
		lc := homatest.LinkConfig{Rate: full.LinkBps, Delay: 2 * time.Microsecond, Reorder: 0.01, Seed: seed,
			Drop: func(src netip.Addr, p homa.Packet) bool {
				dropped := dr.drop(src, p.Addr, p)
				watch.trace(src, p, dropped)
				if dropped {
					return true
				}
				watch.saw(p.Addr, p)
				return false
			}}
		if c.variant == homaconf.VariantNDP {
			lc.TrimAbovePackets = 8
		}
		network := homatest.NewNetwork(lc)
		defer network.Close()
		server := netip.MustParseAddr("10.0.0.100")
		se := attach(t, network, server, cfg)
		srv, err := se.Listen(serverPort)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		runs := homatest.ServeFunc(ctx, t, srv, func(req []byte) []byte {
			if c.smallResp {
				return make([]byte, 100)
			}
			return req
		})
		var clients []*homa.Endpoint
		clientOf := map[netip.Addr]*homa.Endpoint{}
		for i := range 3 {
			e := attach(t, network, netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), cfg)
			clients = append(clients, e)
			clientOf[e.LocalAddr()] = e
		}

		var mu sync.Mutex
		type call struct {
			client netip.Addr
			tag    uint64
			id     uint64 // once found hung
			start  time.Time
			cancel context.CancelFunc
		}
		pending := map[*call]struct{}{}
		out.failed = map[string]int{}
		problem := func(f string, a ...any) {
			mu.Lock()
			out.problems = append(out.problems, fmt.Sprintf(f, a...))
			mu.Unlock()
		}
		rng := rand.New(rand.NewPCG(seed, 146))
		var wg sync.WaitGroup
		dest := netip.AddrPortFrom(server, serverPort)
		for ci, cl := range clients {
			reqs := make([][]byte, 4)
			for k := range reqs {
				n := liveSizes[rng.IntN(len(liveSizes))]
				if c.slow && n > 10_000 {
					n = 200_000
				}
				reqs[k] = make([]byte, n)
				homatest.Fill(reqs[k], uint64(ci)<<32|uint64(k)) // the tag: first 8 bytes
			}
			wg.Go(func() {
				var cw sync.WaitGroup
				for _, req := range reqs {
					cctx, ccancel := context.WithCancel(ctx)
					cc := &call{client: cl.LocalAddr(), tag: binary.BigEndian.Uint64(req), start: time.Now(), cancel: ccancel}
					mu.Lock()
					pending[cc] = struct{}{}
					out.calls++
					mu.Unlock()
					cw.Go(func() {
						resp, info, err := cl.Call(cctx, dest, req)
						ccancel()
						mu.Lock()
						delete(pending, cc)
						if err != nil && !errors.Is(err, homa.ErrAborted) {
							out.failed[homa.Reason(err)]++
						}
						mu.Unlock()
						switch {
						case errors.Is(err, homa.ErrAborted):
							// The watchdog's doing, reported there.
						case err != nil:
							if homa.Reason(err) == "error" {
								problem("%v call %d (%d B): failed without a reason: %v", cc.client, info.ID, len(req), err)
							}
						case c.smallResp && len(resp) != 100:
							problem("%v call %d: %d B response, want 100", cc.client, info.ID, len(resp))
						case !c.smallResp && !bytes.Equal(resp, req):
							problem("%v call %d (%d B): wrong response", cc.client, info.ID, len(req))
						}
						if err == nil || errors.Is(err, homa.ErrAborted) {
							return
						}
						if late := time.Since(watch.silentSince(cc.client, info.ID, cc.start)); late > bound {
							problem("%v call %d (%d B): failed (%v) %v after its peer's last packet, bound %v", cc.client, info.ID, len(req), err, late, bound)
						}
					})
				}
				cw.Wait()
			})
		}
		// The watchdog ends, as aborted and so reported as hung, every
		// Call whose peer has been silent about it past the bound.
		go func() {
			for {
				time.Sleep(full.Tick)
				mu.Lock()
				n := len(pending)
				var hung []*call
				for cc := range pending {
					// Calls take their ids as they start: none yet, none sent.
					id := homa.CallID(clientOf[cc.client], cc.tag)
					if id != 0 && time.Since(watch.silentSince(cc.client, id, cc.start)) > bound {
						cc.id = id
						hung = append(hung, cc)
						delete(pending, cc)
					}
				}
				mu.Unlock()
				for _, cc := range hung {
					problem("%v call %d: hung, its peer silent for %v: %s | %s", cc.client, cc.id, bound,
						homa.DescribeRPC(clientOf[cc.client], cc.id), homa.DescribeRPC(se, cc.id))
					cc.cancel()
				}
				if n == 0 {
					return
				}
			}
		}()
		wg.Wait()
		// Quiet time: servers forget responses no one acknowledges (a
		// server holding a response asks its client with NEED_ACK from
		// TimeoutTicks of silence on), and tombstones expire.
		quiet := 5 * time.Duration(full.TimeoutTicks) * full.Tick
		time.Sleep(quiet)
		for _, e := range append(clients, se) {
			if st := e.Stats(); st.ClientRPCs != 0 || st.ServerRPCs != 0 {
				problem("%v still holds %d client and %d server RPCs %v after the last Call: %s", e.LocalAddr(), st.ClientRPCs, st.ServerRPCs,
					quiet, homa.DescribeRPC(e, 0))
				for _, id := range homa.RPCIDs(e) {
					problem("last packets of %d: %v", id, watch.tail(id, 12))
				}
			}
		}
		if !c.atLeastOnce {
			if d := runs.Duplicates(); d != 0 {
				problem("%d requests executed twice in at-most-once mode", d)
			}
		}
		out.lost = network.Stats().Lost
		cancel()
	})
	return out
}

// lastOr is t, or or when t is earlier (or unset).
func lastOr(t, or time.Time) time.Time {
	if t.IsZero() || t.Before(or) {
		return or
	}
	return t
}

// liveSeeds is the number of seeds per case: def by default, a tenth of it
// with -short or the race detector, to keep make test within seconds;
// HOMA_LIVE_SEEDS sets more when hunting.
func liveSeeds(t *testing.T, def int) int {
	if s := os.Getenv("HOMA_LIVE_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("HOMA_LIVE_SEEDS=%q: want a positive count", s)
		}
		return n
	}
	if testing.Short() || raceBuild {
		return max(1, def/10)
	}
	return def
}

// TestNoRPCHangs checks the liveness property over many seeds: 10%, 20%
// and 30% loss, independent or in bursts, at-most-once and at-least-once,
// echoed and 100 B responses; one packet type lost at 50%; the other
// engine transports; and a 20 Mbit/s network with the defaults a scenario
// there gets. HOMA_LIVE_SEEDS runs more seeds per case.
func TestNoRPCHangs(t *testing.T) {
	type seeded struct {
		liveCase
		seeds int
	}
	var cases []seeded
	for _, rate := range []float64{0.1, 0.2, 0.3} {
		cases = append(cases,
			seeded{liveCase{loss: lossModel{rate: rate}}, 50},
			seeded{liveCase{loss: lossModel{rate: rate, burst: true}}, 50},
			seeded{liveCase{loss: lossModel{rate: rate}, atLeastOnce: true}, 50},
			seeded{liveCase{loss: lossModel{rate: rate}, smallResp: true}, 50},
		)
	}
	for _, typ := range []wire.Type{wire.TypeGrant, wire.TypeResend, wire.TypeBusy, wire.TypeRPCUnknown,
		wire.TypeNeedAck, wire.TypeAck, wire.TypeCutoffs} {
		cases = append(cases, seeded{liveCase{loss: lossModel{rate: 0.05, typ: typ, typRate: 0.5}}, 20})
	}
	cases = append(cases, seeded{liveCase{loss: lossModel{rate: 0.05, typ: wire.TypeStartMsg, typRate: 0.5}, startMsg: true}, 20})
	for _, v := range []homaconf.Variant{homaconf.VariantPFabric, homaconf.VariantPHost, homaconf.VariantNDP} {
		for _, rate := range []float64{0.1, 0.2} {
			cases = append(cases, seeded{liveCase{loss: lossModel{rate: rate}, variant: v}, 20})
		}
		cases = append(cases, seeded{liveCase{loss: lossModel{rate: 0.05, typ: creditType(v), typRate: 0.5}, variant: v}, 20})
	}
	cases = append(cases, seeded{liveCase{loss: lossModel{rate: 0.1}, slow: true}, 10})
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			seeds := liveSeeds(t, c.seeds)
			calls, lost := 0, uint64(0)
			failed := map[string]int{}
			for seed := range uint64(seeds) {
				o := runLiveness(t, c.liveCase, seed)
				for i, p := range o.problems {
					if i < 5 {
						t.Errorf("seed %d: %s", seed, p)
					}
				}
				calls += o.calls
				lost += o.lost
				for k, v := range o.failed {
					failed[k] += v
				}
			}
			if lost == 0 {
				t.Error("the network lost no packet")
			}
			t.Logf("%d seeds: %d calls, failed %v, %d packets lost", seeds, calls, failed, lost)
		})
	}
}

// creditType is the packet that lets variant v's senders go on: the one
// whose loss would stall them if anything does.
func creditType(v homaconf.Variant) wire.Type {
	switch v {
	case homaconf.VariantNDP:
		return wire.TypePull
	case homaconf.VariantPFabric:
		return wire.TypeResend
	}
	return wire.TypeGrant
}

// TestGoodputUnderLossSlowLink: on a 20 Mbit/s network with 10% loss both
// ways, the defaults a scenario there gets (no calibration) must keep
// Homa's goodput near the link's, so an offered load below it drains. With
// the old defaults (a 20 ms tick, one packet of unscheduled bytes and so a
// one-packet window) every lost DATA or GRANT held its message for a
// 100 ms RESEND interval: 16 echoed 200 KB messages took 6.9 s where the
// lossy link carries them in 1.4 s, and 3.5-3.8 s with the window of three
// packets (seeds 1-6); issue #29's W4 scenario at 75% of the link never
// drained.
func TestGoodputUnderLossSlowLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := homaconf.Config{LinkBps: 20e6, Tick: 20 * time.Millisecond}
		dr := &dropper{m: lossModel{rate: 0.1}, rng: rand.New(rand.NewPCG(29, 29))}
		lc := homatest.LinkConfig{Rate: 20e6, Delay: 2 * time.Microsecond, Seed: 29,
			Drop: func(src netip.Addr, p homa.Packet) bool { return dr.drop(src, p.Addr, p) }}
		client, srv, _ := pair(t, lc, cfg)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		serveEcho(ctx, t, srv)
		const n, size = 16, 200_000
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := range n {
			req := make([]byte, size)
			fill(req, uint64(i))
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if _, _, err := client.Call(ctx, netip.AddrPortFrom(serverAddr, serverPort), req); err != nil {
					t.Errorf("call %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		// Each way carries n x size bytes; at the link's rate less the 10%
		// lost that takes ideal.
		ideal := time.Duration(n * size * 8 * 10 / 9 * int64(time.Second) / 20e6)
		if took > 3*ideal {
			t.Errorf("%d echoed %d B messages took %v, more than three times the %v the lossy link needs", n, size, took, ideal)
		}
		t.Logf("%d echoed %d B messages at 10%% loss: %v (ideal %v)", n, size, took, ideal)
	})
}
