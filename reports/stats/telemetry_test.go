package stats

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// telemetryRows are two switches' polls of two ports with two queues each:
// bytes sent growing at a rate per port, depths rising and falling, port 2
// of s1 the busiest.
func telemetryRows() map[string][]TelemetryRow {
	out := map[string][]TelemetryRow{}
	for si, sw := range []string{"s1", "s2"} {
		for round := range 50 {
			t := int64(1_000_000_000 + round*10_000_000)
			for port := 1; port <= 2; port++ {
				for q := range 2 {
					out[sw] = append(out[sw], TelemetryRow{Time: t + int64(port*1000+q*10), Port: port, Queue: q,
						Sent: int64(500 + round*(port+si)*1250*(q+1)), depth: int64((round*(port+q+si))%17 + port*si)})
				}
			}
		}
	}
	return out
}

// writeTelemetry writes rows as telemetry.csv of experiment e in dir.
func writeTelemetry(t *testing.T, dir, e string, rows []struct {
	sw string
	r  TelemetryRow
}) {
	var b strings.Builder
	b.WriteString("experiment,switch,unix_ns,port,queue,enq_pkts,enq_bytes,sent_pkts,sent_bytes,depth_pkts,peak_pkts,delay_us\n")
	for _, x := range rows {
		fmt.Fprintf(&b, "%s,%s,%d,%d,%d,0,0,0,%d,%d,0,0\n", e, x.sw, x.r.Time, x.r.Port, x.r.Queue, x.r.Sent, x.r.depth)
	}
	if err := os.WriteFile(filepath.Join(dir, "telemetry.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadTelemetryAddsUp reads telemetry.csv in two passes: written in
// order or shuffled (then it sorts what it read), it keeps only the busiest
// port's rows, and the series and link statistics are those of
// AnalyseTelemetry on the rows.
func TestReadTelemetryAddsUp(t *testing.T) {
	rows := telemetryRows()
	var flat []struct {
		sw string
		r  TelemetryRow
	}
	for _, sw := range []string{"s1", "s2"} {
		for _, r := range rows[sw] {
			flat = append(flat, struct {
				sw string
				r  TelemetryRow
			}{sw, r})
		}
	}
	wantSeries, wantLinks := AnalyseTelemetry(telemetryRows(), nil, 1e6, 900_000_000)
	if wantSeries[0].Busiest != 2 || len(wantLinks) != 4 {
		t.Fatalf("test data: busiest %d, %d links; want port 2, 4 links", wantSeries[0].Busiest, len(wantLinks))
	}
	shuffled := append(flat[:0:0], flat...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, tt := range []struct {
		name string
		rows []struct {
			sw string
			r  TelemetryRow
		}
	}{
		{"in order", flat},
		{"shuffled", shuffled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTelemetry(t, dir, "e", tt.rows)
			tel, err := readTelemetry(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			a := tel["e"]["s1"]
			// The busiest port's 2 queues x 50 rounds.
			if kept := len(a.depth) + len(a.rows); kept != 100 {
				t.Errorf("s1: %d rows kept, want 100", kept)
			}
			series, links := analyseTelemetry(tel["e"], nil, 1e6, 900_000_000)
			if !reflect.DeepEqual(series, wantSeries) {
				t.Errorf("series differ from AnalyseTelemetry's:\n%+v\nwant\n%+v", series, wantSeries)
			}
			if !reflect.DeepEqual(links, wantLinks) {
				t.Errorf("links %+v, want %+v", links, wantLinks)
			}
		})
	}
}
