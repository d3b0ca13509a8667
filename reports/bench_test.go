package reports

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/homatb/homatb/reports/stats"
)

// peakMemory samples the Go runtime's memory while f runs and returns the
// largest live heap and the largest memory held from the OS (mapped minus
// released: what RSS can reach).
func peakMemory(f func()) (heap, held uint64) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(samples)
			heap = max(heap, samples[0].Value.Uint64())
			held = max(held, samples[1].Value.Uint64()-samples[2].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return heap, held
}

// benchRun writes a one-million-RPC run once per benchmark: Homa and TCP,
// 500,000 RPCs each, log-uniform lengths (so log-spaced bins), telemetry.
func benchRun(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	synthRun{seed: 9, telSamples: 2000, exps: []synthExp{
		{name: "big-homa", transport: "homa", n: 500_000, meanNs: 20_000, params: map[string]any{"load": "0.8"}},
		{name: "big-tcp", transport: "tcp", n: 500_000, meanNs: 200_000, params: map[string]any{"load": "0.8"}},
	}}.write(b, dir)
	return dir
}

// scanLines is the baseline: reading rpcs.csv line by line and nothing else,
// the floor any report of this file pays.
func scanLines(b *testing.B, dir string) int {
	f, err := os.Open(filepath.Join(dir, "rpcs.csv"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(bufio.NewReaderSize(f, 1<<20))
	n := 0
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkBuild1M builds the full report of a one-million-RPC run (target:
// under 10 s and 500 MB) and reports it against a plain line scan of the
// same file, measured in the same run.
func BenchmarkBuild1M(b *testing.B) {
	dir := benchRun(b)
	out := filepath.Join(dir, "out")
	runtime.GC()
	b.ResetTimer()
	var build, scan time.Duration
	var heap, held uint64
	for range b.N {
		t0 := time.Now()
		scanLines(b, dir)
		scan += time.Since(t0)
		runtime.GC()
		t0 = time.Now()
		h, r := peakMemory(func() {
			if _, err := Build(context.Background(), dir, stats.WithOutputDir(out)); err != nil {
				b.Fatal(err)
			}
		})
		build += time.Since(t0)
		heap, held = max(heap, h), max(held, r)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(build.Seconds()/n, "build-s")
	b.ReportMetric(scan.Seconds()/n, "scan-s")
	b.ReportMetric(build.Seconds()/scan.Seconds(), "build/scan")
	b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(held)/(1<<20), "peak-held-MB")
}
