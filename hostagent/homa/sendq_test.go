package homa

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// scanFirst is the order sendQueue keeps, found by scanning every queued
// message: the reference its heap must agree with.
func scanFirst(rs []*rpc, before func(a, b *rpc) bool) *rpc {
	var best *rpc
	for _, r := range rs {
		if r.dead || !r.out.sendable() {
			continue
		}
		if best == nil || before(r, best) {
			best = r
		}
	}
	return best
}

func srptFirst(a, b *rpc) bool { return sendsBefore(&a.out, &b.out) }

func oldestFirst(a, b *rpc) bool { return bornBefore(&a.out, &b.out) }

// TestSendQueueOrder drives the queue through the changes an Endpoint
// makes (new messages, packets sent, grants, retransmissions asked for,
// restarts, RPCs finished) and checks after each that its head and its
// oldest are those a scan of every queued message picks.
func TestSendQueueOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		births int // distinct birth times: few give many ties
		ops    int
	}{
		{"distinct births", 1 << 30, 20000},
		{"many ties", 3, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var q sendQueue
			var all []*rpc
			for op := 0; op < tc.ops; op++ {
				switch k := rng.IntN(10); {
				case k < 3 || len(all) == 0: // a new message
					n := uint32(1 + rng.IntN(6)*1000)
					r := &rpc{out: msgOut{length: n, granted: min(n, uint32(rng.IntN(3000))),
						birth: time.Duration(rng.IntN(tc.births))}}
					all = append(all, r)
					if r.out.sendable() {
						q.add(r)
					}
				case k < 6: // a packet of the head sent
					r := q.head()
					if r == nil {
						continue
					}
					r.out.next = min(r.out.granted, r.out.next+1000)
					q.add(r)
				case k < 7: // a grant
					r := all[rng.IntN(len(all))]
					r.out.granted = min(r.out.length, r.out.granted+2000)
					if !r.dead && (r.out.queued || r.out.sendable()) {
						q.add(r)
					}
				case k < 8: // a retransmission asked for
					r := all[rng.IntN(len(all))]
					if r.dead || r.out.next == 0 {
						continue
					}
					r.out.resend(resendReq{span: span{0, r.out.next}})
					q.add(r)
				case k < 9: // a restart: its place kept, its key new
					r := all[rng.IntN(len(all))]
					if r.dead {
						continue
					}
					r.out = msgOut{length: r.out.length, granted: r.out.length, birth: time.Duration(rng.IntN(tc.births)),
						queued: r.out.queued, slot: r.out.slot, seq: r.out.seq}
					q.add(r)
				default: // finished
					all[rng.IntN(len(all))].dead = true
				}
				if got, want := q.head(), scanFirst(q.q, srptFirst); got != want {
					t.Fatalf("op %d: head %p, a scan picks %p", op, got, want)
				}
				if got, want := q.oldest(), scanFirst(q.q, oldestFirst); got != want {
					t.Fatalf("op %d: oldest %p, a scan picks %p", op, got, want)
				}
				for _, r := range all {
					if !r.dead && r.out.sendable() && !r.out.queued {
						t.Fatalf("op %d: a message with bytes to send left the queue", op)
					}
				}
			}
		})
	}
}

// BenchmarkSendQueue compares the queue's pick with the scan it
// replaced, over n messages waiting: the pacer picks once per packet.
func BenchmarkSendQueue(b *testing.B) {
	for _, n := range []int{10, 3000} {
		fill := func() (*sendQueue, []*rpc) {
			var q sendQueue
			rng := rand.New(rand.NewPCG(3, 4))
			for i := 0; i < n; i++ {
				l := uint32(1000 + rng.IntN(1<<20))
				r := &rpc{out: msgOut{length: l, granted: l, birth: time.Duration(i)}}
				q.add(r)
			}
			return &q, q.q
		}
		b.Run("heap/"+strconv.Itoa(n), func(b *testing.B) {
			q, _ := fill()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := q.head()
				r.out.next = (r.out.next + 1) % r.out.length
				q.add(r)
			}
		})
		b.Run("scan/"+strconv.Itoa(n), func(b *testing.B) {
			_, rs := fill()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := scanFirst(rs, srptFirst)
				r.out.next = (r.out.next + 1) % r.out.length
			}
		})
	}
}

// TestRPCSize keeps an rpc within the 576-byte allocation size class with
// Go's 8-byte malloc header: a client and a server RPC per call took 128
// bytes more when a field pushed it over (BenchmarkRPCPath's B/op).
func TestRPCSize(t *testing.T) {
	if n := unsafe.Sizeof(rpc{}); n > 568 {
		t.Errorf("rpc is %d bytes, want at most 568: reorder fields into padding", n)
	}
}
