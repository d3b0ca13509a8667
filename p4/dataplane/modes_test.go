package dataplane

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/homatb/homatb/wire"
)

func homaSeq(f []byte) uint32 { return binary.BigEndian.Uint32(f[HomaOffset+28:]) }

// arrival is one frame offered to a rank_order port.
type arrival struct {
	rank uint32
	size int
}

func TestRankOrder(t *testing.T) {
	tests := []struct {
		name     string
		buffer   uint32
		arrivals []arrival
		want     []int // departures, by arrival index
		dropped  []int // arrival indexes dropped, in any order
	}{
		{name: "smallest rank first", buffer: 10_000,
			arrivals: []arrival{{5, 100}, {1, 100}, {3, 100}, {0, 100}},
			want:     []int{3, 1, 2, 0}},
		{name: "fifo among equal ranks", buffer: 10_000,
			arrivals: []arrival{{2, 100}, {2, 100}, {1, 100}, {2, 100}, {1, 100}},
			want:     []int{2, 4, 0, 1, 3}},
		{name: "arriving frame is the largest", buffer: 300,
			arrivals: []arrival{{1, 100}, {2, 100}, {3, 100}, {9, 100}},
			want:     []int{0, 1, 2}, dropped: []int{3}},
		{name: "arriving frame ties the largest", buffer: 300,
			arrivals: []arrival{{1, 100}, {4, 100}, {4, 100}, {4, 100}},
			want:     []int{0, 1, 2}, dropped: []int{3}},
		{name: "largest queued frame dropped", buffer: 300,
			arrivals: []arrival{{5, 100}, {1, 100}, {7, 100}, {2, 100}},
			want:     []int{1, 3, 0}, dropped: []int{2}},
		{name: "newest of equal largest dropped", buffer: 300,
			arrivals: []arrival{{7, 100}, {7, 100}, {1, 100}, {2, 100}},
			want:     []int{2, 3, 0}, dropped: []int{1}},
		{name: "byte limit drops until it fits", buffer: 1000,
			arrivals: []arrival{{8, 300}, {9, 300}, {7, 300}, {1, 700}},
			want:     []int{3, 2}, dropped: []int{0, 1}},
		{name: "exactly full fits", buffer: 1000,
			arrivals: []arrival{{3, 400}, {2, 600}},
			want:     []int{1, 0}},
		{name: "frame larger than the buffer", buffer: 1000,
			arrivals: []arrival{{5, 300}, {0, 1200}},
			want:     []int{0}, dropped: []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(func(c *Config) { c.Unshaped = true })
			tmq := newTM(&cfg, 1, nil)
			home := newPool(len(tc.arrivals), 1500)
			var dropped []int
			for i, a := range tc.arrivals {
				p := home.get()
				p.n, p.inPort = a.size, uint16(i) // arrival tag
				if !tmq.enqueueRank(p, a.rank, tc.buffer, int64(i)) {
					dropped = append(dropped, i)
					p.release()
				}
				if tmq.bytes > int(tc.buffer) {
					t.Fatalf("after arrival %d: %d bytes queued, buffer %d", i, tmq.bytes, tc.buffer)
				}
			}
			// Queued frames dropped later went back to the pool without
			// a trace here: find them as the frames that never left.
			deps, _, _ := drainAll(tmq, 100, nil)
			var got []int
			left := map[int]bool{}
			for _, d := range deps {
				got = append(got, int(d.pkt.inPort))
				left[int(d.pkt.inPort)] = true
				if d.pkt.queue != 0 {
					t.Errorf("arrival %d left from queue %d, want 0", d.pkt.inPort, d.pkt.queue)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("departures %v, want %v", got, tc.want)
			}
			for i := range tc.arrivals {
				if !left[i] && !slices.Contains(dropped, i) {
					dropped = append(dropped, i)
				}
			}
			slices.Sort(dropped)
			if !slices.Equal(dropped, tc.dropped) {
				t.Errorf("dropped %v, want %v", dropped, tc.dropped)
			}
			st := tmq.snapshot(0)[0]
			if tmq.rankDrops != uint64(len(tc.dropped)) || st.DropPkts != uint64(len(tc.dropped)) {
				t.Errorf("rank drops %d, queue 0 drops %d, want %d", tmq.rankDrops, st.DropPkts, len(tc.dropped))
			}
			if st.SentPkts != uint64(len(tc.want)) {
				t.Errorf("queue 0 sent %d, want %d", st.SentPkts, len(tc.want))
			}
			if tmq.pkts != 0 || tmq.bytes != 0 || st.DepthBytes != 0 {
				t.Errorf("after draining: %d packets, %d bytes, depth %d bytes", tmq.pkts, tmq.bytes, st.DepthBytes)
			}
			for _, d := range deps {
				d.pkt.release()
			}
			if n := len(home.free); n != len(tc.arrivals) {
				t.Errorf("%d of %d buffers back in the pool", n, len(tc.arrivals))
			}
		})
	}
}

// The rank queue holds at most the port's packet capacity, whatever the
// byte buffer, so the buffer pools sized from it cannot run dry.
func TestRankOrderPacketCapacity(t *testing.T) {
	cfg := testConfig(func(c *Config) { c.Unshaped = true; c.QueueDepthPkts = 2 })
	tmq := newTM(&cfg, 1, nil)
	capacity := tmq.capacityPkts() // 8 queues of 2
	home := newPool(capacity+1, 64)
	for i := range capacity {
		p := home.get()
		p.n = 64
		if !tmq.enqueueRank(p, uint32(i+1), 1<<30, 0) {
			t.Fatalf("arrival %d of %d dropped", i, capacity)
		}
	}
	p := home.get()
	p.n = 64
	if !tmq.enqueueRank(p, 0, 1<<30, 0) {
		t.Fatal("rank 0 arrival at a full queue dropped, want the largest queued one dropped")
	}
	if tmq.rq.len() != capacity || tmq.rankDrops != 1 || tmq.rq.largest().rank != uint32(capacity-1) {
		t.Errorf("queue holds %d (want %d), %d rank drops (want 1), largest rank %d (want %d)",
			tmq.rq.len(), capacity, tmq.rankDrops, tmq.rq.largest().rank, capacity-1)
	}
}

// While a port changes mode, its FIFOs and rank queue together hold at
// most the port's capacity, so the buffer pools cannot run dry.
func TestModeChangeSharesCapacity(t *testing.T) {
	cfg := testConfig(func(c *Config) { c.Unshaped = true; c.QueueDepthPkts = 2 })
	tmq := newTM(&cfg, 1, nil)
	capacity := tmq.capacityPkts()
	home := newPool(capacity+1, 64)
	for i := range capacity - 1 {
		p := home.get()
		p.n = 64
		if !tmq.enqueueRank(p, uint32(i), 1<<30, 0) {
			t.Fatalf("rank arrival %d dropped", i)
		}
	}
	for i, want := range []bool{true, false} {
		p := home.get()
		p.n = 64
		if got := tmq.enqueue(p, 3, 0); got != want {
			t.Errorf("strict arrival %d with %d of %d held: queued %v, want %v", i, tmq.pkts, capacity, got, want)
		}
	}
}

// On a port changing from strict priority to rank order, packets already
// in the FIFOs leave first, then the rank queue's.
func TestRankOrderAfterStrictPriority(t *testing.T) {
	cfg := testConfig(func(c *Config) { c.Unshaped = true })
	tmq := newTM(&cfg, 1, nil)
	home := newPool(3, 64)
	for i, rank := range []uint32{5, 1} {
		p := home.get()
		p.n, p.inPort = 64, uint16(i+1)
		tmq.enqueueRank(p, rank, 10_000, 0)
	}
	p := home.get()
	p.n, p.inPort = 64, 0
	tmq.enqueue(p, 3, 0)
	if got := tmq.snapshot(0)[0].DepthPkts; got != 2 {
		t.Errorf("queue 0 depth %d packets, want the rank queue's 2", got)
	}
	deps, _, _ := drainAll(tmq, 1, nil)
	var got []uint16
	for _, d := range deps {
		got = append(got, d.pkt.inPort)
	}
	if !slices.Equal(got, []uint16{0, 2, 1}) {
		t.Errorf("departures %v, want [0 2 1]", got)
	}
}

func TestTrimAbove(t *testing.T) {
	const threshold = 2
	tests := []struct {
		name      string
		frame     func(seq uint32) []byte
		kind      Trim
		queue     uint8
		wantTrim  []bool // per arrival
		wantDrops uint64
	}{
		{name: "homa data above the threshold trimmed",
			frame: func(seq uint32) []byte { return makeHomaData(1000, 2, 1, 0, seq) }, kind: TrimHomaData, queue: 1,
			wantTrim: []bool{false, false, true, true, true}},
		{name: "homa data in queue 7 trimmed too",
			frame: func(seq uint32) []byte { return makeHomaData(1000, 2, 7, 0, seq) }, kind: TrimHomaData, queue: 7,
			wantTrim: []bool{false, false, true, true}},
		{name: "uet data above the threshold trimmed",
			frame: func(seq uint32) []byte { return makeUETData(1000, 2, 1, seq) }, kind: TrimUETData, queue: 1,
			wantTrim: []bool{false, false, true, true, true}},
		{name: "other frames tail-dropped as usual",
			frame: func(seq uint32) []byte { return makeFrame(1000, 2, 1, seq) }, kind: TrimNone, queue: 1,
			wantTrim: []bool{false, false, false, false, false}, wantDrops: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(func(c *Config) { c.Unshaped = true; c.QueueDepthPkts = 4 })
			tmq := newTM(&cfg, 1, nil)
			var in [][]byte
			for i := range tc.wantTrim {
				f := tc.frame(uint32(i))
				in = append(in, slices.Clone(f))
				p := &packet{buf: f, n: len(f), inPort: uint16(i)}
				tmq.enqueueTrim(p, tc.queue, threshold, tc.kind, int64(i))
			}
			deps, _, _ := drainAll(tmq, 100, nil)
			trimmed := 0
			for _, d := range deps {
				i := int(d.pkt.inPort)
				f, orig := d.pkt.frame(), in[i]
				if !tc.wantTrim[i] {
					if !slices.Equal(f, orig) || d.pkt.queue != tc.queue {
						t.Errorf("arrival %d: changed or moved to queue %d", i, d.pkt.queue)
					}
					continue
				}
				trimmed++
				if s := onesSum(f[14:34]); s != 0xffff {
					t.Errorf("arrival %d: IPv4 checksum invalid (sum %#04x)", i, s)
				}
				if d.pkt.queue != TrimQueue {
					t.Errorf("arrival %d: queue %d, want %d", i, d.pkt.queue, TrimQueue)
				}
				// Everything but lengths, checksums and marks is the original.
				n := TrimmedFrameLen
				if tc.kind == TrimUETData {
					n = UETTrimmedFrameLen
				}
				want := slices.Clone(orig[:n])
				binary.BigEndian.PutUint16(want[ipTotalLenOffset:], uint16(n-14))
				copy(want[ipCsumOffset:], f[ipCsumOffset:ipCsumOffset+2])
				switch tc.kind {
				case TrimHomaData:
					want[HomaFlagsOffset] |= HomaFlagTrimmed
				case TrimUETData:
					want[ipTOSOffset] = UETTrimmedDSCP<<2 | orig[ipTOSOffset]&3
					binary.BigEndian.PutUint16(want[udpLenOffset:], uint16(n-UDPOffset))
					binary.BigEndian.PutUint16(want[udpCsumOffset:], 0)
				}
				if !slices.Equal(f, want) {
					t.Errorf("arrival %d: trimmed to\n%x\nwant\n%x", i, f, want)
				}
			}
			nTrim := 0
			for _, w := range tc.wantTrim {
				if w {
					nTrim++
				}
			}
			if trimmed != nTrim || tmq.trimmed != uint64(nTrim) {
				t.Errorf("trimmed %d (counter %d), want %d", trimmed, tmq.trimmed, nTrim)
			}
			if got := tmq.snapshot(0)[tc.queue].DropPkts; got != tc.wantDrops {
				t.Errorf("queue %d drops %d, want %d", tc.queue, got, tc.wantDrops)
			}
			// Trimmed headers leave first: they sit in queue 7.
			if tc.queue != TrimQueue && nTrim > 0 && len(deps) > 0 && deps[0].pkt.queue != TrimQueue {
				t.Errorf("first departure from queue %d, want the trimmed header from queue 7", deps[0].pkt.queue)
			}
		})
	}
}

// runModes forwards frames from port 1 to port 2 through a dataplane whose
// ports all run mode, and returns what port 2 sent, in order. The frames
// wait in port 1 before the dataplane starts, so they arrive in one receive
// batch and are usually all queued before the first leaves: then the order
// is exact (queuedFirst).
func runModes(t *testing.T, mode Mode, arg uint32, frames [][]byte) (sent [][]byte, d *Dataplane) {
	t.Helper()
	in, out := newMemPort(), newMemPort()
	pl := &testPipeline{mode: mode, modeArg: arg}
	pl.route[2] = 2
	cfg := Config{Ports: map[uint16]string{1: "in", 2: "out"}, LinkRateBps: 100e6}
	d, err := NewWithPorts(cfg, pl, map[uint16]Port{1: in, 2: out})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		in.in <- f
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case f := <-out.out:
			sent = append(sent, f)
		case <-time.After(100 * time.Millisecond):
			return sent, d
		case <-deadline:
			t.Fatalf("still sending after 10 s (%d frames)", len(sent))
		}
	}
}

// queuedFirst runs attempt, which forwards a batch through runModes and
// says what was wrong, up to three times: the egress goroutine may send a
// frame while the ingress one, preempted on a loaded machine, has queued
// only part of the batch (seen once in CI), and the order is then not the
// one the test asks for. A mode that is wrong fails every attempt.
func queuedFirst(t *testing.T, attempt func() error) {
	t.Helper()
	var err error
	for i := range 3 {
		if err = attempt(); err == nil {
			return
		}
		t.Logf("attempt %d: %v", i+1, err)
	}
	t.Error(err)
}

// Through the whole dataplane: Homa DATA frames of falling rank and a
// non-Homa frame (rank max) reach a rank_order port with room for five:
// the five smallest ranks leave, smallest first.
func TestRankOrderForwarding(t *testing.T) {
	var frames [][]byte
	for i := range 10 {
		frames = append(frames, makeHomaData(1000, 2, 0, uint32(100-i), uint32(i)))
	}
	frames = append(frames, makeFrame(1000, 2, 7, 99))
	queuedFirst(t, func() error {
		sent, d := runModes(t, ModeRankOrder, 5000, frames)
		var seqs []uint32
		for _, f := range sent {
			if f[23] != wire.IPProto {
				return errors.New("the non-Homa frame (rank max) was sent")
			}
			seqs = append(seqs, homaSeq(f))
		}
		if want := []uint32{9, 8, 7, 6, 5}; !slices.Equal(seqs, want) {
			return fmt.Errorf("departures by seq %v, want %v", seqs, want)
		}
		if p := d.Stats().Ports[1]; p.RankDrops != 6 || p.Queues[0].DropPkts != 6 {
			return fmt.Errorf("%d rank drops, queue 0 drops %d, want 6", p.RankDrops, p.Queues[0].DropPkts)
		}
		return nil
	})
}

// Through the whole dataplane: Homa DATA frames reach a trim_above port
// with threshold 4: the first four queue whole, the rest leave first as
// 90-byte headers.
func TestTrimAboveForwarding(t *testing.T) {
	var frames [][]byte
	for i := range 12 {
		frames = append(frames, makeHomaData(1000, 2, 0, 0, uint32(i)))
	}
	frames = append(frames, makeFrame(1000, 2, 0, 99)) // not Homa: queues whole
	var want []string
	for range 8 {
		want = append(want, "header")
	}
	for range 5 {
		want = append(want, "full")
	}
	queuedFirst(t, func() error {
		sent, d := runModes(t, ModeTrimAbove, 4, frames)
		var got []string
		for _, f := range sent {
			kind := "full"
			if len(f) == TrimmedFrameLen {
				kind = "header"
			}
			got = append(got, kind)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("departures %v, want %v", got, want)
		}
		if got := d.Stats().Ports[1].TrimmedPkts; got != 8 {
			return fmt.Errorf("trimmed_pkts %d, want 8", got)
		}
		return nil
	})
}

// TestHomaLayout trims a DATA packet that package wire encoded, framed as
// a host sends it, as the switch does: what the switch writes is what
// wire decodes as a trimmed packet.
func TestHomaLayout(t *testing.T) {
	const rank, seq = 0xa1b2c3d4, 7000
	pkt := wire.AppendData(nil, &wire.Data{Common: wire.Common{SPort: 1, DPort: 2, SenderID: 42, Rank: rank},
		MessageLength: 9000, Offset: seq})
	pkt = append(pkt, make([]byte, 1000)...)
	f := makeFrame(HomaOffset+len(pkt), 2, 0, 0)
	f[23] = wire.IPProto
	copy(f[HomaOffset:], pkt)
	binary.BigEndian.PutUint16(f[ipTotalLenOffset:], uint16(len(f)-14))
	binary.BigEndian.PutUint16(f[ipCsumOffset:], 0)
	binary.BigEndian.PutUint16(f[ipCsumOffset:], ^onesSum(f[14:34]))
	p := &packet{buf: f, n: len(f)}
	trim(p, TrimHomaData)
	got, err := wire.ParseTrimmed(p.buf[HomaOffset:p.n])
	if err != nil || !got.Trimmed() || got.Offset != seq || got.Rank != rank || got.SenderID != 42 {
		t.Errorf("trimmed frame decodes as %+v, %v", got, err)
	}
	if onesSum(p.buf[14:34]) != 0xffff {
		t.Error("trimmed frame's IPv4 checksum is wrong")
	}
	if TrimQueue != NumQueues-1 {
		t.Errorf("TrimQueue %d, want the highest queue %d", TrimQueue, NumQueues-1)
	}
}

// TestUETLayout trims a UET data packet the engine's uet variant sends (a
// RUD_CC request, the largest PDS header, and the SES header) and checks
// that what is left still names the packet: PDS and SES decode, the UDP
// length follows and the IPv4 checksum holds.
func TestUETLayout(t *testing.T) {
	pds := wire.UETPDS{Type: wire.UETRUDCCReq, PSN: 0xdeadbeef, SPDCID: 7, DPDCID: 9, CCCID: 3, CreditTarget: 4096}
	ses := wire.SESRequest{MsgID: 11, BufferOffset: 8192, RequestLength: 100000}
	pkt := wire.AppendSESRequest(wire.AppendUETRequest(nil, &pds), &ses)
	pkt = append(pkt, make([]byte, 1000)...)
	f := makeUETData(UETOffset+len(pkt), 2, 3, 0)
	copy(f[UETOffset:], pkt)
	p := &packet{buf: f, n: len(f)}
	trim(p, TrimUETData)
	got := p.buf[:p.n]
	var h wire.UETPDS
	var sh wire.SESRequest
	rest, err := wire.ParseUETPDS(got[UETOffset:], &h)
	if err == nil {
		rest, err = wire.ParseSESRequest(rest, &sh)
	}
	if err != nil || h.Type != pds.Type || h.PSN != pds.PSN || sh.BufferOffset != ses.BufferOffset || sh.RequestLength != ses.RequestLength {
		t.Fatalf("trimmed packet decodes as %+v, %+v, %v", h, sh, err)
	}
	if len(rest) != wire.UETTrimmedLen-wire.UETRequestCCLen-wire.SESRequestLen {
		t.Errorf("%d payload bytes left, want %d", len(rest), wire.UETTrimmedLen-wire.UETRequestCCLen-wire.SESRequestLen)
	}
	if n := binary.BigEndian.Uint16(got[udpLenOffset:]); int(n) != len(got)-UDPOffset {
		t.Errorf("UDP length %d, frame holds %d", n, len(got)-UDPOffset)
	}
	if onesSum(got[14:34]) != 0xffff || got[ipTOSOffset]>>2 != UETTrimmedDSCP {
		t.Errorf("IPv4 checksum sum %#04x, DSCP %d", onesSum(got[14:34]), got[ipTOSOffset]>>2)
	}
}
