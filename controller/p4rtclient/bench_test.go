package p4rtclient

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatb/homatb/p4/target/targettest"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// BenchmarkInstallEntries measures ipv4_lpm entries installed per second
// against the embedded target over loopback gRPC, in Writes of 1,000
// updates, against the same entries sent one update per Write in the same
// run. It reports entries/s for both and their ratio.
func BenchmarkInstallEntries(b *testing.B) {
	const n = 1000
	sw := targettest.Start(b, "127.0.0.1:0", 1)
	batched := dial(b, sw, WithBatchSize(1000), WithElectionID(ElectionID{Low: 2}))
	info := torSchema(b).P4Info()
	entries := make([]Entry, n)
	for i := range entries {
		ip := netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})
		entries[i] = Entry{Table: "TorIngress.ipv4_lpm", Match: []Match{LPM("hdr.ipv4.dstAddr", IPv4(ip), 32)},
			Action: "TorIngress.ipv4_forward", Params: map[string]Value{"port": Uint(uint64(1 + i%8)), "dst_mac": Uint(uint64(i + 1))}}
	}
	ctx := testContext(b)
	// install pushes a fresh pipeline (emptying the table, untimed), then
	// times inserting all entries in Writes of batch updates.
	install := func(batch int) time.Duration {
		if err := batched.SetPipeline(ctx, info, nil); err != nil {
			b.Fatal(err)
		}
		updates, err := batched.Updates(p4v1.Update_INSERT, entries...)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for off := 0; off < n; off += batch {
			if err := batched.Write(ctx, updates[off:off+batch]...); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var fast, slow time.Duration
	b.ResetTimer()
	for b.Loop() {
		fast += install(1000)
		slow += install(1)
	}
	iters := float64(b.N)
	b.ReportMetric(n*iters/fast.Seconds(), "entries/s")
	b.ReportMetric(n*iters/slow.Seconds(), "baseline-entries/s")
	b.ReportMetric(slow.Seconds()/fast.Seconds(), "speedup")
}
