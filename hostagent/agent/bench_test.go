package agent

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/tcprpc"
	"github.com/homatb/homatb/rundir"
)

// benchOutstanding is the number of RPCs kept in flight by the benchmarks.
const benchOutstanding = 8

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(tvUs(ru.Utime)+tvUs(ru.Stime)) * time.Microsecond
}

// measure runs fn (which must complete n RPCs) and returns RPCs per
// second of wall time and per second of process CPU time (both ends of
// every RPC run in this process, so per core counts client and server).
func measure(n int, fn func()) (perSec, perCPUSec float64) {
	cpu0, t0 := cpuTime(), time.Now()
	fn()
	wall, cpu := time.Since(t0), cpuTime()-cpu0
	return float64(n) / wall.Seconds(), float64(n) / max(cpu.Seconds(), 1e-9)
}

// bareCalls issues n calls through the transport with benchOutstanding
// goroutines: the transport's own cost, the baseline for the agent's.
func bareCalls(b *testing.B, tr Transport, target string, n int) {
	req := driver.RequestBuffer(100, 0)[:100]
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range benchOutstanding {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if _, err := tr.Call(context.Background(), target, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// agentCalls runs n RPCs through the agent's closed-loop driver, with
// books and records, as an experiment would.
func agentCalls(b *testing.B, tr Transport, target string, n int) {
	spec, err := driver.ParseWorkload(&agentpb.Workload{Sizes: "fixed:100", Arrivals: "closed",
		MaxOutstanding: benchOutstanding, MaxRpcs: uint64(n), Targets: []string{target}})
	if err != nil {
		b.Fatal(err)
	}
	rec, err := rundir.NewCSVStream(filepath.Join(b.TempDir(), "bench.csv"), rundir.RPCs())
	if err != nil {
		b.Fatal(err)
	}
	e, err := newExperiment(context.Background(), "bench", "h1", rec)
	if err != nil {
		b.Fatal(err)
	}
	e.add(driver.Config{Experiment: "bench", Transport: "tcp", Phase: "measure", Host: "h1", Client: spec}, tr)
	e.start()
	for c := e.snapshot(); c.Completed+c.Failed < uint64(n); c = e.snapshot() {
		time.Sleep(time.Millisecond)
	}
	if err := e.stop(time.Minute); err != nil {
		b.Fatal(err)
	}
	if c := e.snapshot(); c.Completed != uint64(n) {
		b.Fatalf("completed %d of %d", c.Completed, n)
	}
}

// benchTransport reports, for 100-byte RPCs over loopback, RPCs per CPU
// second through the bare transport and through the agent, and their ratio
// (the agent's overhead) from the same run.
func benchTransport(b *testing.B, tr Transport, target string) {
	bareCalls(b, tr, target, 1000) // warm connections
	b.ResetTimer()
	bareRate, bareCPU := measure(b.N, func() { bareCalls(b, tr, target, b.N) })
	agentRate, agentCPU := measure(b.N, func() { agentCalls(b, tr, target, b.N) })
	b.StopTimer()
	b.ReportMetric(bareRate, "bare-rpcs/s")
	b.ReportMetric(bareCPU, "bare-rpcs/cpu-s")
	b.ReportMetric(agentRate, "agent-rpcs/s")
	b.ReportMetric(agentCPU, "agent-rpcs/cpu-s")
	b.ReportMetric(agentCPU/bareCPU, "agent/bare-cpu")
}

func BenchmarkRPC100TCP(b *testing.B) {
	tr, err := newTCPTransport(tcprpc.Config{}, "127.0.0.1", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	resp := &responder{}
	ln, err := tcprpc.Listen(b.Context(), "127.0.0.1:0", tcprpc.Config{}, resp.handle, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	benchTransport(b, tr, ln.Addr().String())
}

// BenchmarkRPC100Homa runs the same measurement over Homa: two endpoints
// on raw sockets bound to 127.0.0.1 and 127.0.0.2 (root only).
func BenchmarkRPC100Homa(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("Homa uses raw IP sockets: needs root")
	}
	mk := func(addr string) Transport {
		tr, err := newHomaTransport(&agentpb.ConfigureRequest{Address: addr,
			Homa: agentpb.NewHomaParams(homaconf.Config{LinkBps: 10_000_000_000})}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tr.Close() })
		return tr
	}
	client, server := mk("127.0.0.1"), mk("127.0.0.2")
	resp := &responder{}
	if err := server.Serve(b.Context(), 4000, resp.handle, nil); err != nil {
		b.Fatal(err)
	}
	benchTransport(b, client, "127.0.0.2:4000")
}
