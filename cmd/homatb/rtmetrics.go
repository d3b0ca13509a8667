package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/metrics"
	"strconv"
	"time"
)

// envRuntimeMetrics names the environment variable that has a run's agents
// and switches write their Go runtime's memory classes beside their resident
// size (PREFIX-agent-h2-PID.csv): set by `homatb run --runtime-metrics`,
// inherited through the Mininet runner as envHeapProfile is.
const envRuntimeMetrics = "HOMATB_RUNTIME_METRICS"

// runtimeSamples are the runtime/metrics a row holds: every memory class
// (they add up to /memory/classes/total), the heap's goal and live size, and
// the goroutines, whose stacks are a class of their own. Reading them does
// not stop the world, so a row every few seconds costs the process nothing
// it would notice, unlike a heap profile's forced collection.
var runtimeSamples = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/mcache/free:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/total:bytes",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/gc/cycles/total:gc-cycles",
	"/sched/goroutines:goroutines",
}

// runtimeMetricsFromEnv starts runtimeMetrics for the process named who when
// envRuntimeMetrics is set; the returned func stops it.
func runtimeMetricsFromEnv(who string, log *slog.Logger) (stop func()) {
	prefix := os.Getenv(envRuntimeMetrics)
	if prefix == "" {
		return func() {}
	}
	return runtimeMetrics(fmt.Sprintf("%s-%s-%d.csv", prefix, who, os.Getpid()), 5*time.Second, log)
}

// runtimeMetrics writes a row of the process's resident memory
// (/proc/self/status) and its runtimeSamples to path every interval until
// stop is called, and a last one then: what of the runtime's memory a step
// of the resident size is (hidden flag --runtime-metrics).
func runtimeMetrics(path string, interval time.Duration, log *slog.Logger) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		log.Warn("runtime metrics", "path", path, "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if err := writeRuntimeMetrics(ctx, f, interval); err != nil {
			log.Warn("runtime metrics", "path", path, "err", err)
		}
		if err := f.Close(); err != nil {
			log.Warn("runtime metrics", "path", path, "err", err)
		}
	}()
	return func() {
		cancel()
		<-finished
	}
}

// writeRuntimeMetrics writes the header and a row now, every interval and
// once more when ctx ends.
func writeRuntimeMetrics(ctx context.Context, out io.Writer, interval time.Duration) error {
	w := csv.NewWriter(out)
	head := append([]string{"unix_s", "rss_kib", "anon_kib"}, runtimeSamples...)
	if err := w.Write(head); err != nil {
		return err
	}
	samples := make([]metrics.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		samples[i].Name = name
	}
	row := make([]string, len(head))
	t := time.NewTicker(interval)
	defer t.Stop()
	last := false
	for {
		metrics.Read(samples)
		rss, anon, err := residentKiB()
		if err != nil {
			return err
		}
		row[0] = strconv.FormatFloat(float64(time.Now().UnixMilli())/1000, 'f', 3, 64)
		row[1], row[2] = strconv.FormatUint(rss, 10), strconv.FormatUint(anon, 10)
		for i, s := range samples {
			switch s.Value.Kind() {
			case metrics.KindUint64:
				row[3+i] = strconv.FormatUint(s.Value.Uint64(), 10)
			case metrics.KindFloat64:
				row[3+i] = strconv.FormatFloat(s.Value.Float64(), 'g', -1, 64)
			default: // a name this Go does not know
				row[3+i] = ""
			}
		}
		if err := w.Write(row); err != nil {
			return err
		}
		if w.Flush(); w.Error() != nil {
			return w.Error()
		}
		if last {
			return nil
		}
		select {
		case <-ctx.Done():
			last = true // one more row: the process's state as it stops
		case <-t.C:
		}
	}
}

// residentKiB reads VmRSS and RssAnon of this process.
func residentKiB() (rss, anon uint64, err error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(key) {
		case "VmRSS":
			dst = &rss
		case "RssAnon":
			dst = &anon
		default:
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(val), []byte(" kB"))), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/self/status: %s: %w", key, err)
		}
		*dst = n
	}
	return rss, anon, nil
}
