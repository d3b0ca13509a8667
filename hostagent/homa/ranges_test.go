package homa

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRangeSet(t *testing.T) {
	for _, tt := range []struct {
		name  string
		adds  []span
		fresh []uint32
		gaps  []span // below 100
	}{
		{"in order", []span{{0, 10}, {10, 30}}, []uint32{10, 20}, []span{{30, 100}}},
		{"hole", []span{{0, 10}, {20, 30}}, []uint32{10, 10}, []span{{10, 20}, {30, 100}}},
		{"hole filled", []span{{0, 10}, {20, 30}, {10, 20}}, []uint32{10, 10, 10}, []span{{30, 100}}},
		{"duplicate", []span{{0, 10}, {0, 10}, {5, 15}}, []uint32{10, 0, 5}, []span{{15, 100}}},
		{"first packet lost", []span{{10, 20}, {20, 30}}, []uint32{10, 10}, []span{{0, 10}, {30, 100}}},
		{"overlaps two", []span{{10, 20}, {30, 40}, {15, 35}}, []uint32{10, 10, 10}, []span{{0, 10}, {40, 100}}},
	} {
		var r rangeSet
		for i, a := range tt.adds {
			if got := r.add(a.start, a.end); got != tt.fresh[i] {
				t.Errorf("%s: add %v: %d new bytes, want %d", tt.name, a, got, tt.fresh[i])
			}
		}
		if got := r.gaps(nil, 100, 10); !slices.Equal(got, tt.gaps) {
			t.Errorf("%s: gaps %v, want %v", tt.name, got, tt.gaps)
		}
	}
}

// TestRangeSetModel checks add and gaps against a byte map under random
// packets: lost, duplicated and reordered.
func TestRangeSetModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		const n = 400
		var r rangeSet
		var have [n]bool
		for range 1 + rng.IntN(30) {
			s := uint32(rng.IntN(n))
			e := min(n, s+1+uint32(rng.IntN(60)))
			want := uint32(0)
			for i := s; i < e; i++ {
				if !have[i] {
					have[i], want = true, want+1
				}
			}
			if got := r.add(s, e); got != want {
				t.Fatalf("trial %d: add [%d,%d): %d new bytes, want %d", trial, s, e, got, want)
			}
		}
		var wantGaps []span
		for i := uint32(0); i < n; i++ {
			if have[i] {
				continue
			}
			if k := len(wantGaps); k > 0 && wantGaps[k-1].end == i {
				wantGaps[k-1].end++
			} else {
				wantGaps = append(wantGaps, span{i, i + 1})
			}
		}
		if got := r.gaps(nil, n, n); !slices.Equal(got, wantGaps) {
			t.Fatalf("trial %d: gaps %v, want %v", trial, got, wantGaps)
		}
		if r.prefix > 0 && !have[r.prefix-1] || len(r.spans) > 0 && r.spans[0].start <= r.prefix {
			t.Fatalf("trial %d: prefix %d spans %v break the invariant", trial, r.prefix, r.spans)
		}
	}
}

func TestRangeSetInOrderAllocs(t *testing.T) {
	var r rangeSet
	off := uint32(0)
	if a := testing.AllocsPerRun(100, func() {
		r.add(off, off+1424)
		off += 1424
	}); a != 0 {
		t.Errorf("%.1f allocations per in-order add, want 0", a)
	}
}

// TestResendQueuedOnce: a RESEND for bytes already queued for
// retransmission and not sent yet queues only what is new of it (its
// ends), so a sender that holds them back does not send them twice.
func TestResendQueuedOnce(t *testing.T) {
	for _, tt := range []struct {
		name     string
		queued   []span
		ask      span
		want     []span
		wantOwed uint32
	}{
		{"nothing queued", nil, span{100, 200}, []span{{100, 200}}, 100},
		{"the same span again", []span{{100, 200}}, span{100, 200}, []span{{100, 200}}, 100},
		{"inside a queued span", []span{{100, 200}}, span{120, 180}, []span{{100, 200}}, 100},
		{"overlapping its end", []span{{100, 200}}, span{150, 250}, []span{{100, 200}, {200, 250}}, 150},
		{"overlapping its start", []span{{100, 200}}, span{50, 150}, []span{{100, 200}, {50, 100}}, 150},
		{"covered by two", []span{{100, 150}, {150, 250}}, span{120, 200}, []span{{100, 150}, {150, 250}}, 150},
		{"an end moved into a span passed before", []span{{120, 130}, {100, 125}}, span{110, 200},
			[]span{{120, 130}, {100, 120}, {130, 200}}, 100},
		{"a queued span strictly inside: asked whole", []span{{120, 130}}, span{100, 200}, []span{{120, 130}, {100, 200}}, 110},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var o msgOut
			for _, q := range tt.queued {
				o.resend(resendReq{span: q})
			}
			o.resend(resendReq{span: tt.ask})
			var got []span
			for _, q := range o.rexmit {
				got = append(got, q.span)
			}
			if !slices.Equal(got, tt.want) || o.owed != tt.wantOwed {
				t.Errorf("queue %v, owed %d; want %v, %d", got, o.owed, tt.want, tt.wantOwed)
			}
		})
	}
}
