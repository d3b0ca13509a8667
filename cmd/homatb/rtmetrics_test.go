package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWriteRuntimeMetrics reads the rows the runtime-metrics sampler writes:
// one now and one as it stops, each with a resident size, every metric
// known to this Go, and memory classes that add up to their total.
func TestWriteRuntimeMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the first row, then the last one
	var buf bytes.Buffer
	if err := writeRuntimeMetrics(ctx, &buf, time.Hour); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want a header, the first row and the last", len(rows))
	}
	head, row := rows[0], rows[1]
	val := map[string]uint64{}
	for i, name := range head[1:] {
		v := row[1+i]
		if v == "" {
			t.Fatalf("%s: empty (a metric this Go does not know?)", name)
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", name, v, err)
		}
		val[name] = n
	}
	for _, name := range []string{"rss_kib", "anon_kib", "/memory/classes/heap/objects:bytes", "/sched/goroutines:goroutines"} {
		if val[name] == 0 {
			t.Errorf("%s is 0", name)
		}
	}
	var sum uint64
	for name, v := range val {
		if strings.HasPrefix(name, "/memory/classes/") && name != "/memory/classes/total:bytes" {
			sum += v
		}
	}
	if total := val["/memory/classes/total:bytes"]; sum != total {
		t.Errorf("memory classes add up to %d, total %d", sum, total)
	}
}
