package simnet

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/simnet/tcpmodel"
	"github.com/homatb/homatb/workloads"
)

// BenchmarkAllToAll simulates 2 ms of 16 hosts at 10 Gbit/s sending W4
// messages (truncated at 1 MB) to each other at about 60% load, and
// reports the simulator's speed: events per wall second and simulated
// µs per wall second, with the allocations per event.
func BenchmarkAllToAll(b *testing.B) {
	const (
		rate  = 10_000_000_000
		hosts = 16
		span  = 2 * time.Millisecond
	)
	sizes, err := workloads.ParseSizeSpec("w4,max=1000000")
	if err != nil {
		b.Fatal(err)
	}
	var events uint64
	for b.Loop() {
		b.StopTimer()
		n := star(b, hosts, rate)
		epoch := time.Unix(1_000_000, 0)
		for i, h := range n.Nodes() {
			if err := h.Start(homaCfg(rate), uint64(i+1)<<40, epoch, nil); err != nil {
				b.Fatal(err)
			}
			resp := make([]byte, 100)
			if err := h.Serve(4000, func(sr *homa.ServerRPC) { _ = h.Reply(sr, resp) }); err != nil {
				b.Fatal(err)
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		req := make([]byte, sizes.Max())
		// Per host, messages at 60% of its link, Poisson.
		perHost := 0.6 * rate / 8 / sizes.Mean()
		for i := 1; i <= hosts; i++ {
			h := n.Node(fmt.Sprintf("h%d", i))
			var at float64
			for {
				at += rng.ExpFloat64() / perHost
				if at >= span.Seconds() {
					break
				}
				dst := n.Node(fmt.Sprintf("h%d", 1+(i+rng.IntN(hosts-1))%hosts))
				size := sizes.Sample(rng)
				n.Clock().At(int64(at*1e9), func() {
					h.Call(netip.AddrPortFrom(dst.IP, 4000), req[:size], func([]byte, homa.CallInfo, error) {})
				})
			}
		}
		b.StartTimer()
		before := n.Clock().Events()
		n.Clock().Run(int64(span))
		events += n.Clock().Events() - before
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(span.Microseconds())*float64(b.N)/sec, "sim-µs/s")
}

// BenchmarkTCPModel simulates 20 ms of four DCTCP senders keeping a 1 MB
// message each outstanding into one receiver at 1 Gbit/s through a switch
// marking ECN at 20 packets, and reports events per wall second and the
// allocations per event of the run (the segments' path allocates none;
// what remains is per RPC: its callback, the server's request record).
func BenchmarkTCPModel(b *testing.B) {
	const (
		rate = 1_000_000_000
		span = 20 * time.Millisecond
	)
	pol := controller.DefaultPolicy()
	pol.ECNThresholdPkts = 20
	var events, mallocs uint64
	var ms runtime.MemStats
	for b.Loop() {
		b.StopTimer()
		n := starPolicy(b, 5, Config{RateBps: rate, Delay: time.Microsecond, QueueDepthPkts: 256}, pol)
		for _, h := range n.Nodes() {
			if err := h.StartTCP(tcpmodel.Config{MSS: 1460, Law: tcpmodel.DCTCP}); err != nil {
				b.Fatal(err)
			}
		}
		srv := n.Node("h1")
		if err := srv.TCP().Serve(4000, func(sr *tcpmodel.ServerRPC) { _ = srv.TCP().Reply(n.Clock().Now(), sr, 100) }); err != nil {
			b.Fatal(err)
		}
		req := make([]byte, 1_000_000)
		dst := netip.AddrPortFrom(srv.IP, 4000)
		for i := 2; i <= 5; i++ {
			h := n.Node(fmt.Sprintf("h%d", i))
			var next func(tcpmodel.Result, error)
			next = func(tcpmodel.Result, error) { h.TCP().Call(n.Clock().Now(), dst, req, next) }
			n.Clock().At(0, func() { next(tcpmodel.Result{}, nil) })
		}
		n.Clock().Run(int64(span) / 10) // warm up: buffers grow to size
		runtime.ReadMemStats(&ms)
		m0, e0 := ms.Mallocs, n.Clock().Events()
		b.StartTimer()
		n.Clock().Run(int64(span))
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs - m0
		events += n.Clock().Events() - e0
		b.StartTimer()
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(mallocs)/float64(events), "allocs/event")
}
