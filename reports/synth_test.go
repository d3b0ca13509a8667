package reports

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/homatb/homatb/reports/stats"
)

// Synthetic run directories with known distributions, for tests and
// benchmarks. Every RTT is base(length) + Exp(mean), base being what the
// calibration rows record exactly, so the true quantiles are known:
// RTT_q = base + mean*(-ln(1-q)), slowdown_q = 1 + mean*(-ln(1-q))/base.

type synthExp struct {
	name, transport string
	n               int     // measure-phase RPCs
	meanNs          float64 // mean of the exponential queueing delay
	failed, inFly   int     // extra rows with those statuses
	params          map[string]any
	// label and config go to the manifest when set (config: runs written
	// before configurations had labels have none).
	label, config string
}

type synthRun struct {
	seed       uint64
	exps       []synthExp
	lengths    []int64 // drawn uniformly; nil: log-uniform over [64, 1e6]
	noCalib    bool
	calLengths []int64 // calibrated lengths; nil: the workload's
	noTel      bool
	noSwitch   bool
	gzip       bool
	telSamples int
	target     string // the scenario's switch.target; "" leaves it out
	baseline   string // the manifest's baseline; "" leaves it out
	// scenario is the manifest's resolved scenario; nil leaves it empty
	// (or holds the switch target alone).
	scenario map[string]any
}

// synthBase is the unloaded RTT of a request length, in ns: a 10 µs floor
// plus 8 ns per byte (1 Gbit/s).
func synthBase(length int64) float64 { return 10_000 + 8*float64(length) }

// synthIdeal is the ideal RTT of a request of l bytes with the synthetic
// 100-byte response, computed by hand from docs/reports.md: the base is the
// smallest calibrated RPC (calMin bytes), every message crosses 2 links at
// 1 Gbit/s (8 ns a byte), packets carry at most 1460 bytes and 78 bytes of
// headers and framing, and the second link adds one first packet.
func synthIdeal(l, calMin int64) float64 {
	onWire := func(n int64) float64 {
		pkts := max((n+1459)/1460, 1)
		return float64(n+78*pkts) + float64(min(n, 1460)+78)
	}
	return synthBase(calMin) + 8*(onWire(l)-onWire(calMin))
}

// trueQuantile is the q-quantile of base + Exp(mean).
func trueQuantile(base, mean, q float64) float64 { return base + mean*(-math.Log1p(-q)) }

func (s synthRun) length(r *rand.Rand) int64 {
	if s.lengths != nil {
		return s.lengths[r.IntN(len(s.lengths))]
	}
	return int64(math.Round(math.Exp(math.Log(64) + r.Float64()*(math.Log(1e6)-math.Log(64)))))
}

// sharedPart says whether exps[i] names the experiment before it again: a
// shared experiment, each entry one of its transports, whose rows follow
// the previous entry's.
func (s synthRun) sharedPart(i int) bool { return i > 0 && s.exps[i-1].name == s.exps[i].name }

// write creates the run directory's files in dir.
func (s synthRun) write(tb testing.TB, dir string) {
	tb.Helper()
	r := rand.New(rand.NewPCG(s.seed, 7))
	const t0 = int64(1_790_000_000_000_000_000)
	man := map[string]any{
		"run": "synthetic", "scenario_file": "synthetic.yaml", "scenario": map[string]any{},
		"started_unix_ns": t0, "ended_unix_ns": t0 + 11e9, "incomplete": false,
		"versions": map[string]string{"homatb": "test", "go": "go1.26"}, "git_commit": "0000000",
		"machine": map[string]any{"cpus": 2}, "link_bps": 1e9, "fidelity": []string{},
	}
	var exps []map[string]any
	for i, e := range s.exps {
		if s.sharedPart(i) {
			last := exps[len(exps)-1]
			if last["transports"] == nil {
				last["transports"] = []string{s.exps[i-1].transport}
			}
			last["transports"] = append(last["transports"].([]string), e.transport)
			continue
		}
		exps = append(exps, map[string]any{"name": e.name, "transport": e.transport, "params": e.params,
			"link_bps": 1e9, "started_unix_ns": t0, "ended_unix_ns": t0 + 10e9, "duration_ms": 10000,
			"receivers": []string{"h1"}, "fidelity": []string{}, "transport_counters": synthCounters(e.transport)})
		if e.label != "" {
			exps[len(exps)-1]["label"] = e.label
		}
		if e.config != "" {
			exps[len(exps)-1]["config"] = e.config
		}
	}
	man["experiments"] = exps
	if s.baseline != "" {
		man["baseline"] = s.baseline
	}
	if s.target != "" {
		man["scenario"] = map[string]any{"switch": map[string]any{"target": s.target}}
	}
	if s.scenario != nil {
		man["scenario"] = s.scenario
	}
	b, err := json.Marshal(man)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		tb.Fatal(err)
	}

	name := filepath.Join(dir, "rpcs.csv")
	if s.gzip {
		name += ".gz"
	}
	f, err := os.Create(name)
	if err != nil {
		tb.Fatal(err)
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if s.gzip {
		zw = gzip.NewWriter(f)
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintln(bw, "experiment,transport,phase,client,server,req_bytes,resp_bytes,intended_ns,sent_ns,done_ns,rtt_ns,status,error,retries")
	row := func(exp, tr, phase string, length int64, intended, rtt int64, status, errMsg string) {
		done := int64(0)
		if status == "completed" {
			done = intended + rtt
		} else {
			rtt = 0
		}
		fmt.Fprintf(bw, "%s,%s,%s,h2,10.0.0.1:4000,%d,100,%d,%d,%d,%d,%s,%s,0\n",
			exp, tr, phase, length, intended, intended+2000, done, rtt, status, errMsg)
	}
	if !s.noCalib {
		seen := map[string]bool{}
		for _, e := range s.exps {
			if seen[e.transport] {
				continue
			}
			seen[e.transport] = true
			calLens := s.lengths
			if s.calLengths != nil {
				calLens = s.calLengths
			}
			if calLens == nil {
				calLens = []int64{64, 1000, 10000, 100000, 1000000}
			}
			for _, l := range calLens {
				for i := 0; i < 5; i++ {
					row("calibrate-"+e.transport, e.transport, "calibrate", l, t0, int64(synthBase(l)), "completed", "")
				}
			}
		}
	}
	for _, e := range s.exps {
		gap := int64(10e9) / int64(max(e.n, 1))
		for i := 0; i < 10; i++ {
			row(e.name, e.transport, "warmup", 100, t0, 20000, "completed", "")
		}
		for i := 0; i < e.n; i++ {
			l := s.length(r)
			rtt := int64(math.Round(synthBase(l) + r.ExpFloat64()*e.meanNs))
			row(e.name, e.transport, "measure", l, t0+int64(i)*gap, rtt, "completed", "")
		}
		for i := 0; i < e.failed; i++ {
			row(e.name, e.transport, "measure", 100, t0, 0, "failed", `"timeout, no reply"`)
		}
		for i := 0; i < e.inFly; i++ {
			row(e.name, e.transport, "measure", 100, t0, 0, "inflight", "")
		}
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	if !s.noTel {
		s.writeTelemetry(tb, dir, r, t0)
	}
	if !s.noSwitch {
		for i, e := range s.exps {
			if s.sharedPart(i) {
				continue
			}
			d := filepath.Join(dir, "switch", e.name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
			var queues []map[string]any
			for q := 0; q < 8; q++ {
				queues = append(queues, map[string]any{"queue": q, "drop_pkts": q, "peak_pkts": 10 * q, "peak_bytes": 15000 * q, "delay_max_us": 12 * q, "ce_marked_pkts": 2 * q})
			}
			sw := map[string]any{"device_id": 1, "ports": []map[string]any{
				{"port": 1, "iface": "s1-eth1", "fault_drops": 1, "rate_bps": 1e9, "queues": queues},
				{"port": 2, "iface": "s1-eth2", "rate_bps": 1e9, "queues": queues[:2]},
			}}
			b, err := json.Marshal(sw)
			if err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "s1.json"), b, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// writeTelemetry writes two ports of eight queues; port 1 runs at 60% of
// 1 Gbit/s, port 2 at 20%, and depths follow a sawtooth per queue.
func (s synthRun) writeTelemetry(tb testing.TB, dir string, r *rand.Rand, t0 int64) {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, "telemetry.csv"))
	if err != nil {
		tb.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	fmt.Fprintln(bw, "experiment,switch,unix_ns,port,queue,enq_pkts,enq_bytes,sent_pkts,sent_bytes,depth_pkts,peak_pkts,delay_us")
	samples := max(s.telSamples, 2)
	const interval = int64(1e6) // 1 ms
	for j, e := range s.exps {
		if s.sharedPart(j) {
			continue
		}
		for i := 0; i < samples; i++ {
			t := t0 + int64(i)*interval
			for port, share := range map[int]float64{1: 0.6, 2: 0.2} {
				for q := 0; q < 8; q++ {
					// Port bytes split evenly over queues.
					sent := int64(share * 1e9 / 8 * float64(int64(i)*interval) / 1e9 / 8)
					// Low priorities (long messages) queue deep in bursts,
					// high priorities stay short.
					depth := int64(r.IntN(3))
					if port == 1 {
						burst := math.Max(0, math.Sin(float64(i)/15+float64(q)))
						depth = int64(burst * 60 / float64(1+2*q))
					}
					fmt.Fprintf(bw, "%s,s1,%d,%d,%d,0,0,0,%d,%d,%d,%d\n", e.name, t, port, q, sent, depth, depth, depth*12)
				}
			}
		}
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// synthCounters stands in for the agents' transport counters.
func synthCounters(transport string) map[string]uint64 {
	if transport != "homa" {
		return nil
	}
	c := map[string]uint64{"resends_sent": 12, "timeouts": 1, "active_max": 6, "grants_p6": 3400, "grants_p7": 9100}
	// SRPT: more data packets at the low (scheduled) priorities.
	for p := 0; p < 8; p++ {
		c[fmt.Sprintf("tx_data_p%d", p)] = uint64(20000 >> p)
	}
	return c
}

// build writes the run into a fresh directory and builds its report,
// returning the summary and report.html.
func (s synthRun) build(tb testing.TB) (*stats.Summary, string) {
	tb.Helper()
	dir := tb.TempDir()
	s.write(tb, dir)
	sum, err := Build(context.Background(), dir)
	if err != nil {
		tb.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		tb.Fatal(err)
	}
	return sum, string(html)
}
