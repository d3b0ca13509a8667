package reports

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatb/homatb/reports/stats"
)

// covers reports whether truth lies in an interval (an open end covers).
func covers(iv stats.Interval, truth float64) bool {
	return (iv[0] == nil || *iv[0] <= truth) && (iv[1] == nil || truth <= *iv[1])
}

// mixtureQuantile inverts the CDF of an equal mixture of base_i + Exp(mean)
// by bisection: the true quantile of short messages of several lengths.
func mixtureQuantile(bases []float64, mean, q float64) float64 {
	cdf := func(x float64) float64 {
		s := 0.0
		for _, b := range bases {
			if x > b {
				s += 1 - math.Exp(-(x-b)/mean)
			}
		}
		return s / float64(len(bases))
	}
	lo, hi := 0.0, 1e12
	for range 200 {
		mid := (lo + hi) / 2
		if cdf(mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func TestBuildRecoversKnownPercentiles(t *testing.T) {
	lengths := []int64{100, 1000, 10000, 100000}
	run := synthRun{seed: 42, lengths: lengths, telSamples: 200, exps: []synthExp{
		{name: "mix-homa", transport: "homa", n: 40000, meanNs: 20_000, failed: 3, inFly: 2, params: map[string]any{"load": "0.5"}},
		{name: "mix-tcp", transport: "tcp", n: 40000, meanNs: 200_000, params: map[string]any{"load": "0.5"}},
	}}
	dir := t.TempDir()
	run.write(t, dir)
	sum, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Experiments) != 2 {
		t.Fatalf("got %d experiments, want 2", len(sum.Experiments))
	}
	checks, covered := 0, 0
	check := func(what string, iv stats.Interval, truth float64) {
		checks++
		if covers(iv, truth) {
			covered++
		} else {
			t.Logf("%s: true %.4g outside %s", what, truth, fmtCI(iv))
		}
	}
	for i, e := range sum.Experiments {
		se := run.exps[i]
		if e.RPCs.Issued != int64(se.n+se.failed+se.inFly) || e.RPCs.Completed != int64(se.n) ||
			e.RPCs.Failed != int64(se.failed+se.inFly) || e.RPCs.InFlight != int64(se.inFly) || e.RPCs.Warmup != 10 {
			t.Errorf("%s: counts %+v do not match the generated rows", e.Name, e.RPCs)
		}
		if e.Binning != "exact" || len(e.BySize) != len(lengths) {
			t.Fatalf("%s: binning %s with %d rows, want exact with %d", e.Name, e.Binning, len(e.BySize), len(lengths))
		}
		total := 0
		for j, r := range e.BySize {
			total += r.Samples
			if r.Length != lengths[j] {
				t.Errorf("%s row %d: length %d, want %d", e.Name, j, r.Length, lengths[j])
			}
			base := synthBase(r.Length)
			for _, c := range []struct {
				q      float64
				iv, si stats.Interval
			}{{0.5, r.P50CI, r.S50CI}, {0.99, r.P99CI, r.S99CI}, {0.999, r.P999CI, r.S999CI}} {
				rtt := trueQuantile(base, se.meanNs, c.q)
				check(e.Name+" RTT", c.iv, rtt/1e3)
				check(e.Name+" slowdown", c.si, rtt/synthIdeal(r.Length, lengths[0]))
			}
		}
		if total != se.n || e.BySize[len(e.BySize)-1].CumFrac != 1 {
			t.Errorf("%s: buckets hold %d samples ending at cum_frac %g", e.Name, total, e.BySize[len(e.BySize)-1].CumFrac)
		}
		// Short messages are the 100- and 1000-byte requests, half the RPCs.
		shortBases := []float64{synthBase(100), synthBase(1000)}
		check(e.Name+" short P50", e.Short.P50CI, mixtureQuantile(shortBases, se.meanNs, 0.5)/1e3)
		check(e.Name+" short P99", e.Short.P99CI, mixtureQuantile(shortBases, se.meanNs, 0.99)/1e3)
		if math.Abs(float64(e.Short.Count)/float64(se.n)-0.5) > 0.02 {
			t.Errorf("%s: %d short RPCs of %d, want about half", e.Name, e.Short.Count, se.n)
		}
		// Goodput: mean request length plus 100 response bytes, over 10 s.
		meanLen := 0.0
		for _, l := range lengths {
			meanLen += float64(l) / float64(len(lengths))
		}
		want := float64(se.n) * (meanLen + 100) * 8 / 10 / 1e9
		if math.Abs(e.GoodputGbps-want)/want > 0.05 {
			t.Errorf("%s: goodput %.4f Gbit/s, want about %.4f", e.Name, e.GoodputGbps, want)
		}
		// Switch statistics: port 1 has queues 0..7 dropping q packets each,
		// port 2 queues 0 and 1; fault drops 1 on port 1.
		wantDrops := int64(0)
		for q := 0; q < 8; q++ {
			wantDrops += int64(q)
		}
		wantDrops += 1
		if e.Switch.Drops != wantDrops || e.Switch.FaultDrops != 1 || len(e.Switch.FaultDropsByPort) != 1 || e.Switch.FaultDropsByPort["s1/1"] != 1 ||
			len(e.Switch.MaxQueueBytes) != 8 || e.Switch.MaxQueueBytes[7] != 7*15000 {
			t.Errorf("%s: switch %+v", e.Name, e.Switch)
		}
		for _, l := range e.Links {
			want := map[int]float64{1: 0.6, 2: 0.2}[l.Port]
			if math.Abs(l.MeanUtil-want) > 0.01 {
				t.Errorf("%s port %d: mean utilisation %.3f, want %.2f", e.Name, l.Port, l.MeanUtil, want)
			}
		}
		if got := e.Homa.Counters["grants_p7"]; (e.Transport == "homa") != (got == synthCounters("homa")["grants_p7"]) {
			t.Errorf("%s: transport counters %v", e.Name, e.Homa.Counters)
		}
		if e.Transport == "homa" {
			bp := e.Homa.ByPriority
			if len(bp) != 2 || bp["grants"][7] != 9100 || bp["grants"][0] != 0 || bp["tx_data"][3] != 20000>>3 {
				t.Errorf("%s: counters by priority %v", e.Name, bp)
			}
		}
		if len(e.Series) != 1 || e.Series[0].Busiest != 1 || len(e.Series[0].Depth) != 8 {
			t.Errorf("%s: telemetry series %d, busiest port %d", e.Name, len(e.Series), e.Series[0].Busiest)
		}
	}
	// With 95% intervals a few of the checks may miss; far fewer than 90%
	// covering would mean the intervals or the estimates are wrong.
	frac := float64(covered) / float64(checks)
	t.Logf("%d of %d true values inside their intervals (%.1f%%)", covered, checks, 100*frac)
	if frac < 0.9 {
		t.Errorf("only %.1f%% of true percentiles inside their 95%% intervals", 100*frac)
	}
	// The headline pairs the two and divides TCP by Homa.
	a, err := stats.Analyse(context.Background(), dir, stats.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	pg, err := buildPage(a, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Headlines) != 1 || pg.Headlines[0].RatioP99 == nil {
		t.Fatalf("headlines %+v", pg.Headlines)
	}
	h := pg.Headlines[0]
	if want := *h.Other.Short.P99us / *h.Base.Short.P99us; *h.RatioP99 != want || want <= 1 {
		t.Errorf("headline TCP/Homa P99 %.3f, want %.3f (> 1: TCP waits longer here)", *h.RatioP99, want)
	}
	checkOutputs(t, dir, sum)
}

// checkOutputs verifies the files Build writes against the contracts.
func checkOutputs(t *testing.T, dir string, sum *stats.Summary) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Experiments []map[string]json.RawMessage `json:"experiments"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, e := range raw.Experiments {
		for _, k := range []string{"name", "transport", "params", "rpcs", "short", "by_size", "goodput_gbps", "switch", "fidelity"} {
			if _, ok := e[k]; !ok {
				t.Errorf("summary.json experiment lacks %q", k)
			}
		}
		var sub struct {
			RPCs   map[string]json.RawMessage   `json:"rpcs"`
			Short  map[string]json.RawMessage   `json:"short"`
			BySize []map[string]json.RawMessage `json:"by_size"`
			Switch map[string]json.RawMessage   `json:"switch"`
		}
		if err := json.Unmarshal(mustJSON(t, e), &sub); err != nil {
			t.Fatal(err)
		}
		for obj, keys := range map[string][]string{"rpcs": {"issued", "completed", "failed"}, "short": {"max_length", "count", "p50_us", "p99_us"}, "switch": {"drops", "max_queue_bytes"}} {
			m := map[string]map[string]json.RawMessage{"rpcs": sub.RPCs, "short": sub.Short, "switch": sub.Switch}[obj]
			for _, k := range keys {
				if _, ok := m[k]; !ok {
					t.Errorf("summary.json %s lacks %q", obj, k)
				}
			}
		}
		for _, row := range sub.BySize {
			for _, k := range []string{"length", "cum_frac", "samples", "p50_us", "p99_us", "p999_us", "s50", "s99", "s999"} {
				if _, ok := row[k]; !ok {
					t.Errorf("summary.json by_size row lacks %q", k)
				}
			}
		}
	}
	for _, e := range sum.Experiments {
		checkCperf(t, dir, e)
		for _, ext := range []string{"_cdf.data", ".hgrm"} {
			if _, err := os.Stat(filepath.Join(dir, stats.FileStem(e.Name)+ext)); err != nil {
				t.Error(err)
			}
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "by_size.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, e := range sum.Experiments {
		rows += len(e.BySize)
	}
	if got := strings.Count(string(csv), "\n"); got != rows+1 {
		t.Errorf("by_size.csv has %d lines, want %d", got, rows+1)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http://", "https://", "<script"} {
		// xmlns attributes name namespaces, they fetch nothing.
		s := strings.ReplaceAll(string(html), `xmlns="http://www.w3.org/2000/svg"`, "")
		s = strings.ReplaceAll(s, `xmlns:xlink="http://www.w3.org/1999/xlink"`, "")
		if strings.Contains(s, bad) {
			t.Errorf("report.html contains %q: it must be self-contained", bad)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuildLogBins(t *testing.T) {
	run := synthRun{seed: 3, telSamples: 2, exps: []synthExp{{name: "w-homa", transport: "homa", n: 30000, meanNs: 5000}}}
	dir := t.TempDir()
	run.write(t, dir)
	sum, err := Build(context.Background(), dir, stats.WithOutputDir(filepath.Join(dir, "out")))
	if err != nil {
		t.Fatal(err)
	}
	e := sum.Experiments[0]
	if e.Binning != "log" {
		t.Fatalf("binning %q, want log", e.Binning)
	}
	if slices.ContainsFunc(e.Fidelity, func(s string) bool { return strings.Contains(s, "calibration only") }) {
		t.Errorf("calibration covering 64 B–1 MB reported as too narrow: %q", e.Fidelity)
	}
	total, prev := 0, 0.0
	for i, r := range e.BySize {
		total += r.Samples
		if r.Samples < 1000 {
			t.Errorf("bin %d holds %d samples, want at least 1000", i, r.Samples)
		}
		if r.CumFrac <= prev || r.MinLength > r.Length || (i > 0 && r.MinLength <= e.BySize[i-1].Length) {
			t.Errorf("bin %d %+v out of order", i, r)
		}
		prev = r.CumFrac
	}
	if total != 30000 || prev != 1 || len(e.BySize) < 5 {
		t.Errorf("%d bins hold %d samples, cum_frac ends at %g", len(e.BySize), total, prev)
	}
	checkOutputs(t, filepath.Join(dir, "out"), sum)
}

func TestBuildEmptyRecords(t *testing.T) {
	dir := t.TempDir()
	man := `{"run": "stopped", "incomplete": true, "experiments": [{"name": "e-homa", "transport": "homa", "incomplete": true}]}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(man), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rpcs.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Experiments) != 1 || sum.Experiments[0].RPCs.Issued != 0 || len(sum.Fidelity) < 2 {
		t.Errorf("summary of an empty run: %d experiments, fidelity %q", len(sum.Experiments), sum.Fidelity)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Error(err)
	}
}

func TestBuildWithoutCalibrationOrTelemetry(t *testing.T) {
	run := synthRun{seed: 5, lengths: []int64{200, 5000}, noCalib: true, noTel: true, noSwitch: true, gzip: true,
		exps: []synthExp{{name: "bare-tcp", transport: "tcp", n: 500, meanNs: 1000}}}
	dir := t.TempDir()
	run.write(t, dir)
	sum, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	e := sum.Experiments[0]
	if e.Slowdown != nil || e.BySize[0].S50 != nil || e.Calibration != nil {
		t.Error("slowdown computed without calibration")
	}
	if !slices.ContainsFunc(e.Fidelity, func(s string) bool { return strings.Contains(s, "no calibration") }) {
		t.Errorf("fidelity %q does not mention the missing calibration", e.Fidelity)
	}
	if e.Switch.Present || len(e.Links) != 0 {
		t.Error("switch statistics reported without files")
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no telemetry", "no calibration"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html does not say %q", want)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	const okRPCs = "experiment,transport,phase,req_bytes,rtt_ns,status\nx,homa,measure,12,5,completed\n"
	tests := []struct {
		name, rpcs, telemetry, want string
		manifest                    string
	}{
		{"telemetry lacks a column", okRPCs, "experiment,switch,unix_ns,port,queue\n", `lacks columns [sent_bytes depth_pkts]`, ""},
		{"telemetry bad number", okRPCs, "experiment,switch,unix_ns,port,queue,sent_bytes,depth_pkts\nx,s1,1,1,0,zz,0\n", "column sent_bytes", ""},
		{name: "bad manifest", rpcs: okRPCs, manifest: "{not json", want: "parse"},
		{"no records", "-", "", "neither rpcs.csv", ""},
		{"missing column", "experiment,transport,phase\nx,homa,measure\n", "", "lacks columns", ""},
		{"bad number", "experiment,transport,phase,req_bytes,rtt_ns,status\nx,homa,measure,12a,5,completed\n", "", "line 2", ""},
		{"bad status", "experiment,transport,phase,req_bytes,rtt_ns,status\nx,homa,measure,12,5,lost\n", "", "unknown status", ""},
		{"bad phase", "experiment,transport,phase,req_bytes,rtt_ns,status\nx,homa,later,12,5,completed\n", "", "unknown phase", ""},
		{"first response after done", "experiment,transport,phase,req_bytes,intended_ns,done_ns,rtt_ns,status,first_resp_ns\nx,homa,measure,12,100,150,50,completed,151\n",
			"", "first_resp_ns: 151 outside intended_ns 100 .. done_ns 150", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.rpcs != "-" {
				if err := os.WriteFile(filepath.Join(dir, "rpcs.csv"), []byte(tc.rpcs), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.telemetry != "" {
				if err := os.WriteFile(filepath.Join(dir, "telemetry.csv"), []byte(tc.telemetry), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.manifest != "" {
				if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(tc.manifest), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Build(context.Background(), dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTransportTimesBySize: the by-size rows carry the medians and P99s of
// the transport's request-out and first-response times, over the RPCs that
// report them, and none for a transport that reports neither.
func TestTransportTimesBySize(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("experiment,transport,phase,req_bytes,intended_ns,sent_ns,done_ns,rtt_ns,status,req_out_ns,first_resp_ns\n")
	const t0 = 1_000_000_000
	for i := range 100 {
		// Homa: request out after 10+i µs, first response byte after
		// 20+2i µs, done after 30+3i µs.
		at := int64(t0 + i*1_000_000)
		fmt.Fprintf(&b, "h,homa,measure,100,%d,%d,%d,%d,completed,%d,%d\n", at, at, at+int64(30+3*i)*1000, (30+3*i)*1000,
			at+int64(10+i)*1000, at+int64(20+2*i)*1000)
		// TCP: no request-out time; a first byte for even i only.
		first := 0
		if i%2 == 0 {
			first = int(at) + 5000
		}
		fmt.Fprintf(&b, "t,tcp,measure,100,%d,%d,%d,%d,completed,0,%d\n", at, at, at+8000, 8000, first)
	}
	if err := os.WriteFile(filepath.Join(dir, "rpcs.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]stats.SizeRow{}
	for _, e := range sum.Experiments {
		if len(e.BySize) != 1 {
			t.Fatalf("%s: %d by-size rows, want 1", e.Name, len(e.BySize))
		}
		byName[e.Name] = e.BySize[0]
	}
	val := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	h, tc := byName["h"], byName["t"]
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		// Nearest rank over 100 values: the 50th and the 99th.
		{"homa request out P50", val(h.ReqOutP50us), 10 + 49},
		{"homa request out P99", val(h.ReqOutP99us), 10 + 98},
		{"homa first response P50", val(h.FirstRespP50us), 20 + 2*49},
		{"homa first response P99", val(h.FirstRespP99us), 20 + 2*98},
		{"tcp request out P50", val(tc.ReqOutP50us), -1},
		{"tcp first response P50 (50 reported)", val(tc.FirstRespP50us), 5},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v µs, want %v", c.what, c.got, c.want)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "by_size.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), ",59.000,108.000,118.000,216.000\n") {
		t.Errorf("by_size.csv lacks the homa row's transport times:\n%s", csv)
	}
}

func TestCCDFPointsAgainstCounting(t *testing.T) {
	x := []int64{5, 1, 3, 3, 3, 9, 2, 2, 8, 7, 7, 7, 7, 1, 4}
	slices.Sort(x)
	pts := stats.CcdfPoints(x, 1)
	if len(pts) == 0 {
		t.Fatal("no CCDF points")
	}
	for _, p := range pts {
		greater := 0
		for _, v := range x {
			if float64(v) > p.X {
				greater++
			}
		}
		if want := float64(greater) / float64(len(x)); math.Abs(p.Y-want) > 1e-12 {
			t.Errorf("CCDF at %g = %g, counting gives %g", p.X, p.Y, want)
		}
	}
}

func TestOptionsRejectInvalid(t *testing.T) {
	for _, o := range []stats.Option{stats.WithLogger(nil), stats.WithMaxExactLengths(0), stats.WithMinBinSamples(0), stats.WithShortMaxLength(0)} {
		if _, err := stats.NewConfig([]stats.Option{o}); err == nil {
			t.Error("invalid option accepted")
		}
	}
}

// TestUtilisationStaggeredSamples feeds queues sampled a microsecond apart
// with counters that do not start at zero: utilisation must still be the
// port's rate share, with no start-up spike.
func TestUtilisationStaggeredSamples(t *testing.T) {
	var rows []stats.TelemetryRow
	const start = int64(5_000_000) // bytes already counted before the run
	for i := int64(0); i < 100; i++ {
		for q := 0; q < 4; q++ {
			// 0.5 of 1 Gbit/s split over 4 queues, sampled every ms.
			sent := start + 0.5*1e9/8/4*i/1000
			rows = append(rows, stats.TelemetryRow{Time: i*1_000_000 + int64(q)*1000, Port: 3, Queue: q, Sent: sent})
		}
	}
	_, links := stats.AnalyseTelemetry(map[string][]stats.TelemetryRow{"s1": rows}, nil, 1e9, 0)
	if len(links) != 1 {
		t.Fatalf("%d links, want 1", len(links))
	}
	if l := links[0]; math.Abs(l.MeanUtil-0.5) > 0.01 || l.MaxUtil > 0.52 {
		t.Errorf("utilisation mean %.3f max %.3f, want 0.5 without spikes", l.MeanUtil, l.MaxUtil)
	}
}

// TestSweepLines checks a two-parameter sweep: the numeric param gets one
// line per transport and value of the other param, the other is named.
func TestSweepLines(t *testing.T) {
	var exps []synthExp
	for _, sizes := range []string{"w3", "w4"} {
		for _, load := range []string{"0.5", "0.8"} {
			for _, tr := range []string{"homa", "tcp"} {
				exps = append(exps, synthExp{name: sizes + "-" + load + "-" + tr, transport: tr, n: 300, meanNs: 1000,
					params: map[string]any{"phases.all.sizes": sizes, "phases.all.load": load}})
			}
		}
	}
	dir := t.TempDir()
	synthRun{seed: 4, lengths: []int64{100, 2000}, noTel: true, exps: exps}.write(t, dir)
	a, err := stats.Analyse(context.Background(), dir, stats.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"phases.all.load", "phases.all.sizes"}; !slices.Equal(a.Sum.SweptParams, want) {
		t.Fatalf("swept params %v, want %v", a.Sum.SweptParams, want)
	}
	pg, err := buildPage(a, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Sweeps) != 3 || len(pg.SweepNotes) != 1 {
		t.Fatalf("%d sweep charts and notes %q, want 3 charts and a note on sizes", len(pg.Sweeps), pg.SweepNotes)
	}
	// The ratio chart: one P50 and one P99 line per size, two loads each.
	if got := pg.Sweeps[2].Points; got != 8 {
		t.Errorf("ratio sweep plots %d points, want 8", got)
	}
	// 2 transports x 2 sizes = 4 lines of 2 loads, P50 and P99: 16 points.
	if got := pg.Sweeps[0].Points; got != 16 {
		t.Errorf("latency sweep plots %d points, want 16", got)
	}
	if !strings.Contains(string(pg.Sweeps[0].SVG), "homa phases.all.sizes=w4 short P99") {
		t.Error("sweep legend does not name the line by transport and the other param")
	}
	// The headline pairs Homa with TCP in each of the four configurations.
	keys, by := groupExperiments(a.Sum.Experiments)
	if len(keys) != 4 {
		t.Fatalf("%d configurations, want 4", len(keys))
	}
	for _, k := range keys {
		if len(by[k]) != 2 || by[k][0].Transport == by[k][1].Transport {
			t.Errorf("configuration %q groups %d experiments", k, len(by[k]))
		}
	}
}

func TestRenderEdgeCases(t *testing.T) {
	tests := []struct {
		name       string
		spec       chartSpec
		wantPoints int
		wantSVG    bool
	}{
		{"no series", chartSpec{id: "a"}, 0, false},
		{"only non-positive on log axes", chartSpec{id: "b", logX: true, logY: true,
			series: []series{{name: "s", pts: []stats.Point{{X: 0, Y: 1}, {X: 1, Y: 0}, {X: -1, Y: -1}}}}}, 0, false},
		{"NaN and Inf dropped", chartSpec{id: "c",
			series: []series{{name: "s", pts: []stats.Point{{X: 1, Y: math.NaN()}, {X: math.Inf(1), Y: 1}, {X: 1, Y: 2}, {X: 2, Y: 3}}}}}, 2, true},
		{"single point", chartSpec{id: "d", logX: true, logY: true, series: []series{{name: "s", pts: []stats.Point{{X: 10, Y: 10}}}}}, 1, true},
		{"markup in names is escaped", chartSpec{id: "e", title: "<script>x</script>",
			series: []series{{name: "<b>&", pts: []stats.Point{{X: 1, Y: 1}, {X: 2, Y: 2}}}}}, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := render(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if c.Points != tc.wantPoints || (c.SVG != "") != tc.wantSVG {
				t.Errorf("points %d svg %v, want %d %v", c.Points, c.SVG != "", tc.wantPoints, tc.wantSVG)
			}
			if !tc.wantSVG && c.Note == "" {
				t.Error("an empty chart carries no note")
			}
			if tc.wantSVG && !strings.HasPrefix(string(c.SVG), "<svg") {
				t.Error("inline SVG does not start at <svg")
			}
			if strings.Contains(string(c.SVG), "<script") || strings.Contains(string(c.SVG), "<b>") {
				t.Error("a title or series name reached the SVG unescaped")
			}
		})
	}
}

func TestLogTicks(t *testing.T) {
	tests := []struct {
		lo, hi     float64
		wantLabels []string
	}{
		{3, 900, []string{"10", "100"}},
		{150, 12000, []string{"200", "500", "1K", "2K", "5K", "10K"}},
		{0.002, 0.15, []string{"0.002", "0.005", "0.01", "0.02", "0.05", "0.1"}},
		{0.002, 0.3, []string{"0.01", "0.1"}},
		{1, 1e7, []string{"1", "10", "100", "1K", "10K", "100K", "1M", "10M"}},
	}
	for _, tc := range tests {
		var got []string
		for _, tk := range logTicks(formatNumber).Ticks(tc.lo, tc.hi) {
			if tk.Value < tc.lo || tk.Value > tc.hi*(1+1e-9) {
				t.Errorf("[%g, %g]: tick %g outside the axis", tc.lo, tc.hi, tk.Value)
			}
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tc.wantLabels) {
			t.Errorf("[%g, %g]: labels %v, want %v", tc.lo, tc.hi, got, tc.wantLabels)
		}
	}
}

func TestNarrowCalibrationWarns(t *testing.T) {
	dir := t.TempDir()
	synthRun{seed: 8, lengths: []int64{100, 1000, 100000}, calLengths: []int64{100, 1000}, noTel: true,
		exps: []synthExp{{name: "n-homa", transport: "homa", n: 300, meanNs: 1000}}}.write(t, dir)
	sum, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	e := sum.Experiments[0]
	if !slices.ContainsFunc(e.Fidelity, func(s string) bool { return strings.Contains(s, "calibration only 100–1000") }) {
		t.Errorf("no warning for requests beyond the calibrated lengths: %q", e.Fidelity)
	}
	// The transport's own baseline extends its last segment, which the
	// synthetic RTTs follow exactly; the ideal does not depend on it.
	last := e.BySize[len(e.BySize)-1]
	if want := trueQuantile(synthBase(100000), 1000, 0.5) / synthBase(100000); math.Abs(*last.OwnS50-want)/want > 0.01 {
		t.Errorf("100 KB own slowdown P50 %.3f, want about %.3f (extrapolated linearly)", *last.OwnS50, want)
	}
	if want := trueQuantile(synthBase(100000), 1000, 0.5) / synthIdeal(100000, 100); math.Abs(*last.S50-want)/want > 0.01 {
		t.Errorf("100 KB slowdown P50 %.3f, want about %.3f (ideal RTT)", *last.S50, want)
	}
}

// TestHostGauges: hosts.csv gives each receiver's active messages and
// granted bytes over time; hosts that never had one stay out, the report
// charts the rest, and a bad number is named by line and column.
func TestHostGauges(t *testing.T) {
	rpcs := "experiment,transport,phase,req_bytes,rtt_ns,status\nh,homa,measure,100,5000,completed\n"
	hosts := "experiment,host,unix_ns,active_messages,incoming_bytes\n" +
		"h,h1,1000000000,0,0\nh,h1,1050000000,2,1000\nh,h1,1100000000,4,3000\nh,h1,1150000000,2,1000\n" +
		"h,h2,1000000000,0,0\nh,h2,1050000000,0,0\n"
	for _, tc := range []struct {
		name, hosts, wantErr string
	}{
		{"good", hosts, ""},
		{"bad number", "experiment,host,unix_ns,active_messages,incoming_bytes\nh,h1,1,x,0\n", "hosts.csv line 2: column active_messages"},
		{"missing column", "experiment,host,unix_ns,active_messages\n", `lacks columns [incoming_bytes]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range map[string]string{"rpcs.csv": rpcs, "hosts.csv": tc.hosts} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sum, err := Build(context.Background(), dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := sum.Experiments[0].HostGauges
			want := []stats.HostGauges{{Host: "h1", Samples: 4, MeanActive: 2, MaxActive: 4, MeanIncomingKB: 1.25, MaxIncomingBytes: 3000}}
			if !slices.Equal(got, want) {
				t.Errorf("host gauges %+v, want %+v", got, want)
			}
			html, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(html), "h: active (granted) inbound messages per receiver") {
				t.Error("report.html has no active-messages chart")
			}
		})
	}
}

func TestLinearTicks(t *testing.T) {
	tests := []struct {
		lo, hi     float64
		wantLabels []string
	}{
		{0.5, 0.8, []string{"0.5", "0.6", "0.7", "0.8"}},
		{0, 300, []string{"0", "100", "200", "300"}},
		{0, 1.2, []string{"0", "0.25", "0.5", "0.75", "1"}},
		{0, 2500, []string{"0", "500", "1K", "1.5K", "2K", "2.5K"}},
	}
	for _, tc := range tests {
		var got []string
		for _, tk := range linearTicks(tc.lo, tc.hi) {
			got = append(got, tk.Label)
		}
		if !slices.Equal(got, tc.wantLabels) {
			t.Errorf("[%g, %g]: labels %v, want %v", tc.lo, tc.hi, got, tc.wantLabels)
		}
	}
}

// checkCperf checks an experiment's cperf files in dir: the .data digest
// gives, length by length, the P50 and P99 that cperf's digest of the
// .rtts files gives, and the CCDF file has cperf's columns.
func checkCperf(t *testing.T, dir string, e stats.Experiment) {
	t.Helper()
	stem := stats.FileStem(e.Name)
	data := cperfColumns(t, filepath.Join(dir, stem+".data"))
	rtts := cperfRTTs(t, filepath.Join(dir, stats.CperfDir), stem)
	lengths := slices.Sorted(func(yield func(int64) bool) {
		for l := range rtts {
			if !yield(l) {
				return
			}
		}
	})
	if len(data["length"]) != len(lengths) {
		t.Fatalf("%s.data: %d lengths, the .rtts files %d", stem, len(data["length"]), len(lengths))
	}
	total := 0
	for i, l := range lengths {
		v := rtts[l]
		slices.Sort(v)
		total += len(v)
		n := len(v)
		for _, c := range []struct {
			col  string
			want float64
		}{{"length", float64(l)}, {"samples", float64(n)}, {"p50", v[n/2]}, {"p99", v[n*99/100]}} {
			if got := data[c.col][i]; math.Abs(got-c.want) > 0.05+1e-9 {
				t.Errorf("%s.data length %d: %s %g, cperf's digest of the .rtts files %g", stem, l, c.col, got, c.want)
			}
		}
	}
	if int64(total) != e.RPCs.Completed {
		t.Errorf("%s: the .rtts files hold %d RPCs, %d completed", stem, total, e.RPCs.Completed)
	}
	if e.Short.Count > 0 {
		cdf := cperfColumns(t, filepath.Join(dir, stem+"_cdf.data"))
		if len(cdf["usec"]) == 0 || len(cdf["usec"]) != len(cdf["frac"]) {
			t.Errorf("%s_cdf.data: columns usec %d, frac %d values", stem, len(cdf["usec"]), len(cdf["frac"]))
		}
	}
}

// cperfRTTs reads every <experiment>-*.rtts file in dir as read_rtts does.
func cperfRTTs(t *testing.T, dir, experiment string) map[int64][]float64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, experiment+"-*.rtts"))
	if err != nil {
		t.Fatal(err)
	}
	rtts := map[int64][]float64{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			stripped := strings.TrimSpace(line)
			if stripped == "" {
				t.Fatalf("%s: an empty line (read_rtts indexes its first character)", f)
			}
			if stripped[0] == '#' {
				continue
			}
			words := strings.Fields(stripped)
			if len(words) < 2 {
				t.Fatalf("%s: line %q too short", f, line)
			}
			l, err := strconv.ParseInt(words[0], 10, 64)
			if err != nil {
				t.Fatalf("%s: length %q: %v", f, words[0], err)
			}
			us, err := strconv.ParseFloat(words[1], 64)
			if err != nil {
				t.Fatalf("%s: usec %q: %v", f, words[1], err)
			}
			rtts[l] = append(rtts[l], us)
		}
	}
	return rtts
}

// cperfColumns reads a data file as column_from_file does.
func cperfColumns(t *testing.T, path string) map[string][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := map[string][]float64{}
	var last string
	var cols []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if fields[0] == "#" {
			last = sc.Text()
			continue
		}
		if cols == nil {
			if last == "" {
				t.Fatalf("%s: no column headers", path)
			}
			cols = strings.Fields(last)[1:]
		}
		if len(fields) < len(cols) {
			t.Fatalf("%s: %d fields in %q for columns %v", path, len(fields), sc.Text(), cols)
		}
		for i, c := range cols {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				t.Fatalf("%s: column %s: %v", path, c, err)
			}
			data[c] = append(data[c], v)
		}
	}
	return data
}
