package dataplane

import (
	"fmt"
	"slices"
	"testing"
)

// TestPortModel drives a port on a computed clock: frames offered at
// given times with their verdicts, and the order, queues and times they
// leave in, as the switch's traffic manager decides them; each case also
// with SingleCaller, which must decide the same.
func TestPortModel(t *testing.T) {
	const rate = 1e9 // 1000 B + 24 B overhead: 8192 ns a frame
	type offer struct {
		at    int64
		frame []byte
		v     Verdict
	}
	data := func(rank, seq uint32) []byte { return makeHomaData(1000, 2, 0, rank, seq) }
	tests := []struct {
		name       string
		cfg        PortModelConfig
		offers     []offer
		wantSeqs   []uint32 // departures by seq, in order
		wantStarts []int64
		wantQueues []uint8
		wantStats  PortModelStats
	}{
		{name: "strict priority: the later, higher queue first",
			cfg: PortModelConfig{RateBps: rate, WireOverhead: 24},
			offers: []offer{{0, data(0, 1), Verdict{Queue: 0}}, {0, data(0, 2), Verdict{Queue: 0}},
				{100, data(0, 3), Verdict{Queue: 7}}},
			wantSeqs: []uint32{1, 3, 2}, wantStarts: []int64{0, 8192, 16384}, wantQueues: []uint8{0, 7, 0}},
		{name: "the link's overhead sets the spacing",
			cfg:      PortModelConfig{RateBps: rate, WireOverhead: 0},
			offers:   []offer{{0, data(0, 1), Verdict{}}, {0, data(0, 2), Verdict{}}},
			wantSeqs: []uint32{1, 2}, wantStarts: []int64{0, 8000}, wantQueues: []uint8{0, 0}},
		{name: "rank order, the largest rank dropped when full",
			cfg: PortModelConfig{RateBps: rate, WireOverhead: 24},
			offers: []offer{{0, data(9, 1), Verdict{Mode: ModeRankOrder, ModeArg: 2500, Rank: 9}},
				{1, data(5, 2), Verdict{Mode: ModeRankOrder, ModeArg: 2500, Rank: 5}},
				{2, data(3, 3), Verdict{Mode: ModeRankOrder, ModeArg: 2500, Rank: 3}},
				{3, data(7, 4), Verdict{Mode: ModeRankOrder, ModeArg: 2500, Rank: 7}}},
			// 1 leaves at once; 2 and 3 fill the buffer, and 4 (rank 7) is
			// the largest, so it is dropped.
			wantSeqs: []uint32{1, 3, 2}, wantStarts: []int64{0, 8192, 16384}, wantQueues: []uint8{0, 0, 0},
			wantStats: PortModelStats{Drops: 1, RankDrops: 1}},
		{name: "trim above one packet: the third DATA frame is cut to queue 7",
			cfg: PortModelConfig{RateBps: rate, WireOverhead: 24},
			offers: []offer{{0, data(0, 1), Verdict{Mode: ModeTrimAbove, ModeArg: 1, Trim: TrimHomaData}},
				{1, data(0, 2), Verdict{Mode: ModeTrimAbove, ModeArg: 1, Trim: TrimHomaData}},
				{2, data(0, 3), Verdict{Mode: ModeTrimAbove, ModeArg: 1, Trim: TrimHomaData}}},
			wantSeqs: []uint32{1, 3, 2}, wantStarts: []int64{0, 8192, 8192 + 912}, wantQueues: []uint8{0, 7, 0},
			wantStats: PortModelStats{Trimmed: 1}},
		{name: "port buffer: tail drop",
			cfg:      PortModelConfig{RateBps: rate, WireOverhead: 24, PortBufferBytes: 2500},
			offers:   []offer{{0, data(0, 1), Verdict{}}, {0, data(0, 2), Verdict{}}, {0, data(0, 3), Verdict{}}},
			wantSeqs: []uint32{1, 2}, wantStarts: []int64{0, 8192}, wantQueues: []uint8{0, 0},
			wantStats: PortModelStats{Drops: 1}},
		{name: "unshaped: everything at once",
			cfg:      PortModelConfig{},
			offers:   []offer{{5, data(0, 1), Verdict{}}, {5, data(0, 2), Verdict{}}},
			wantSeqs: []uint32{1, 2}, wantStarts: []int64{5, 5}, wantQueues: []uint8{0, 0}},
	}
	for _, tt := range tests {
		for _, single := range []bool{false, true} {
			tt.cfg.SingleCaller = single
			t.Run(fmt.Sprintf("%s, single caller %v", tt.name, single), func(t *testing.T) {
				m := NewPortModel(tt.cfg)
				var seqs []uint32
				var starts []int64
				var queues []uint8
				now, i := int64(0), 0
				for len(seqs) < len(tt.wantSeqs)+1 && now < 1e6 {
					for ; i < len(tt.offers) && tt.offers[i].at <= now; i++ {
						m.Enqueue(tt.offers[i].frame, tt.offers[i].v, now, 0)
					}
					d, ok, wake := m.Dequeue(now)
					if ok {
						if d.End <= d.Start && tt.cfg.RateBps > 0 {
							t.Errorf("departure ends at %d, starts at %d", d.End, d.Start)
						}
						seqs = append(seqs, homaSeq(d.Frame))
						starts = append(starts, d.Start)
						queues = append(queues, d.Queue)
						now = max(now, d.End) // the link is busy until then
						continue
					}
					next := int64(1e6)
					if wake != 0 {
						next = wake
					}
					if i < len(tt.offers) {
						next = min(next, tt.offers[i].at)
					}
					now = max(now+1, next)
				}
				if !slices.Equal(seqs, tt.wantSeqs) || !slices.Equal(starts, tt.wantStarts) || !slices.Equal(queues, tt.wantQueues) {
					t.Errorf("departures seq %v at %v from %v; want %v at %v from %v", seqs, starts, queues, tt.wantSeqs, tt.wantStarts, tt.wantQueues)
				}
				if got := m.Stats(); got != tt.wantStats {
					t.Errorf("stats %+v, want %+v", got, tt.wantStats)
				}
			})
		}
	}
}
