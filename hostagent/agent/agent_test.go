package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// It picks below Linux's default ephemeral range (32768-60999): a port
// the kernel handed out for a listener could meanwhile become the source
// port of one of the test's own connections (the agents' gRPC clients,
// a collective's dials) before the agent listens on it.
func freePort(t *testing.T) uint32 {
	t.Helper()
	for range 200 {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use: try another
		}
		ln.Close()
		return uint32(port)
	}
	t.Fatal("no free TCP port in 20000-31999 after 200 tries")
	return 0
}

func TestLoopbackTCPThroughControlAPI(t *testing.T) {
	server, _ := startAgent(t, "srv")
	client, _ := startAgent(t, "cli")
	port := freePort(t)
	target := "127.0.0.1:" + strconv.Itoa(int(port))
	ctx := t.Context()
	if _, err := server.Configure(ctx, &agentpb.ConfigureRequest{
		Experiment: "serve", Transport: agentpb.Transport_TRANSPORT_TCP, Address: "127.0.0.1",
		ServerPorts: []uint32{port},
	}); err != nil {
		t.Fatal(err)
	}
	workloads := []struct {
		name string
		w    *agentpb.Workload
	}{
		{"poisson", &agentpb.Workload{Sizes: "w3,max=100000", Arrivals: "poisson", RateRps: 2000, DurationMs: 300, WarmupMs: 50, Seed: 1}},
		{"closed", &agentpb.Workload{Sizes: "fixed:100", Arrivals: "closed", MaxOutstanding: 4, MaxRpcs: 500, ResponseBytes: 10}},
	}
	var completed uint64
	var clientRows []rundir.RPC
	for _, tc := range workloads {
		t.Run(tc.name, func(t *testing.T) {
			tc.w.Targets = []string{target}
			if _, err := client.Configure(ctx, &agentpb.ConfigureRequest{
				Experiment: tc.name, Transport: agentpb.Transport_TRANSPORT_TCP, Host: "cli",
				Address: "127.0.0.1", Client: tc.w, Tcp: &agentpb.TcpParams{ConnectionsPerPeer: 2},
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Start(ctx, &agentpb.StartRequest{}); err != nil {
				t.Fatal(err)
			}
			waitIssued(t, client, 100, 10*time.Second)
			time.Sleep(300 * time.Millisecond)
			stop, err := client.Stop(ctx, &agentpb.StopRequest{DrainMs: 2000})
			if err != nil {
				t.Fatal(err)
			}
			c := stop.GetCounters()
			rows := fetchRecords(t, client, tc.name)
			checkBooks(t, rows, c, "tcp")
			checkTransportTimes(t, rows, "tcp")
			if c.GetCompleted() == 0 || c.GetFailed() != 0 {
				t.Errorf("counters %v: want completions and no failures over loopback", c)
			}
			if c.GetRttP50Us() <= 0 || c.GetRttP50Us() > c.GetRttP99Us() || c.GetRttP99Us() > c.GetRttMaxUs() {
				t.Errorf("RTT p50 %v p99 %v max %v µs: want 0 < p50 <= p99 <= max", c.GetRttP50Us(), c.GetRttP99Us(), c.GetRttMaxUs())
			}
			if tc.w.MaxRpcs > 0 && c.GetIssued() != tc.w.MaxRpcs {
				t.Errorf("issued %d, want max_rpcs %d", c.GetIssued(), tc.w.MaxRpcs)
			}
			for _, row := range rows[1:] {
				if tc.w.ResponseBytes > 0 && row[6] != strconv.Itoa(int(tc.w.ResponseBytes)) && row[11] == rundir.StatusCompleted {
					t.Fatalf("response %s bytes, want response_bytes %d", row[6], tc.w.ResponseBytes)
				}
				if tc.w.ResponseBytes == 0 && row[11] == rundir.StatusCompleted && row[6] != row[5] {
					t.Fatalf("response %s bytes for a %s-byte request, want an echo", row[6], row[5])
				}
			}
			completed += c.GetCompleted()
			clientRows = append(clientRows, readRows(t, rundir.RPCs(), rows)...)
		})
	}
	// The server told of every request it answered, at the connection and
	// offset its client recorded; fetched while it keeps serving.
	served := map[string]rundir.Served{}
	for _, sv := range readRows(t, rundir.ServedRPCs(), fetchFile(t, server, "serve", agentpb.FileServed)) {
		if sv.Experiment != "serve" || sv.Transport != "tcp" || sv.Server != target || sv.ReqNs == 0 || sv.ReplyNs < sv.ReqNs {
			t.Fatalf("served row %+v", sv)
		}
		served[fmt.Sprint(sv.Client, "@", sv.ReqOffset)] = sv
	}
	matched := 0
	for _, r := range clientRows {
		if r.Status != rundir.StatusCompleted {
			continue
		}
		sv, ok := served[fmt.Sprint(r.Local, "@", r.ReqOffset)]
		if !ok || sv.ReqBytes != r.ReqBytes || sv.RespBytes != r.RespBytes || sv.RespOffset != r.RespOffset {
			t.Fatalf("client row %+v: served %+v (found %v)", r, sv, ok)
		}
		if sv.ReqNs < r.SentNs || sv.ReplyNs > r.DoneNs {
			t.Errorf("server times %d..%d outside the client's %d..%d", sv.ReqNs, sv.ReplyNs, r.SentNs, r.DoneNs)
		}
		matched++
	}
	if uint64(matched) != completed || len(served) != matched {
		t.Errorf("%d served rows, %d completed RPCs matched, %d completed", len(served), matched, completed)
	}
	st, err := server.Stop(ctx, &agentpb.StopRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetCounters().GetServed() != completed {
		t.Errorf("server served %d, clients completed %d", st.GetCounters().GetServed(), completed)
	}
}

// fakeTransport answers by target: "ok" completes at once, "hang" blocks
// until the call's context ends, "fail" fails.
type fakeTransport struct{}

func (fakeTransport) Call(ctx context.Context, target string, req []byte) (CallResult, error) {
	switch {
	case strings.HasPrefix(target, "10.0.0.1:"):
		return CallResult{RespBytes: len(req)}, nil
	case strings.HasPrefix(target, "10.0.0.2:"):
		<-ctx.Done()
		return CallResult{}, ctx.Err()
	}
	return CallResult{}, errors.New("fake: refused")
}
func (fakeTransport) Serve(context.Context, uint16, Handler, func(*Served)) error { return nil }
func (fakeTransport) Stats() map[string]uint64                                    { return map[string]uint64{} }
func (fakeTransport) Close() error                                                { return nil }
func (fakeTransport) MaxMessage() int                                             { return 1 << 20 }

// runFake runs a workload against fakeTransport and returns the counters
// and records.
func runFake(t *testing.T, w *agentpb.Workload, run, drain time.Duration) (*agentpb.Counters, [][]string) {
	t.Helper()
	spec, err := driver.ParseWorkload(w)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rec.csv")
	rec, err := rundir.NewCSVStream(path, rundir.RPCs())
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExperiment(t.Context(), "fake", "h1", rec)
	if err != nil {
		t.Fatal(err)
	}
	e.add(driver.Config{Experiment: "fake", Transport: "tcp", Phase: "measure", Host: "h1", Client: spec}, fakeTransport{})
	e.start()
	// The books balance at every moment, not only after Stop: in_flight is
	// counted, so a snapshot between an issue and its booking would show.
	for end := time.Now().Add(run); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if c := e.snapshot(); c.Issued != c.Completed+c.Failed+c.InFlight {
			t.Fatalf("while running: issued %d != completed %d + failed %d + in flight %d",
				c.Issued, c.Completed, c.Failed, c.InFlight)
		}
	}
	if err := e.stop(drain); err != nil {
		t.Fatal(err)
	}
	return e.snapshot(), readCSV(t, path)
}

func TestBooksBalanceWithFailuresAndInflight(t *testing.T) {
	c, rows := runFake(t, &agentpb.Workload{
		Sizes: "w2", RateRps: 5000, DurationMs: 100, Seed: 3,
		Targets: []string{"10.0.0.1:1", "10.0.0.2:2", "10.0.0.3:3"},
	}, 150*time.Millisecond, 20*time.Millisecond)
	if c.Completed == 0 || c.Failed == 0 || c.InFlight == 0 {
		t.Errorf("completed %d failed %d in flight %d: want all three", c.Completed, c.Failed, c.InFlight)
	}
	checkBooks(t, rows, c, "tcp")
	if c.Failures["refused"] != c.Failed {
		t.Errorf("failure reasons %v, want every failure as \"refused\"", c.Failures)
	}
}

// TestOutstandingLimitQueuesIssues: with max_outstanding RPCs stuck, an
// open-loop client issues no more, and every arrival meanwhile waits in
// its queue and is counted (the schedule keeps drawing; driver's
// TestOutstandingLimitQueues checks what the queue sends later).
func TestOutstandingLimitQueuesIssues(t *testing.T) {
	c, rows := runFake(t, &agentpb.Workload{
		Sizes: "fixed:100", RateRps: 2000, DurationMs: 200, MaxOutstanding: 2,
		Targets: []string{"10.0.0.2:2"},
	}, 100*time.Millisecond, 0)
	// About 200 arrivals in the 100 ms; 50 is ten standard deviations below.
	if c.Issued != 2 || c.OutstandingLimitWaits < 50 {
		t.Errorf("issued %d, limit waits %d: want 2 issued and about 198 waits", c.Issued, c.OutstandingLimitWaits)
	}
	checkBooks(t, rows, c, "tcp")
}

// TestLateStartIssuesEveryRPC starts a schedule 200 ms in the past: the
// agent must issue the RPCs it is late for (not skip them) and report lag.
func TestLateStartIssuesEveryRPC(t *testing.T) {
	start := time.Now().Add(-200 * time.Millisecond)
	c, rows := runFake(t, &agentpb.Workload{
		Sizes: "fixed:100", RateRps: 2000, DurationMs: 400, Seed: 5,
		Targets: []string{"10.0.0.1:1"}, StartUnixNs: start.UnixNano(),
	}, 300*time.Millisecond, time.Second)
	calledAt := start.Add(200 * time.Millisecond).UnixNano()
	var late int
	for _, row := range rows[1:] {
		if v, _ := strconv.ParseInt(row[7], 10, 64); v < calledAt {
			late++
		}
	}
	// 400 RPCs expected before the call; 200 is ten standard deviations below.
	if late < 200 {
		t.Errorf("%d RPCs intended before Start were issued, want about 400", late)
	}
	if c.LagMaxUs < 100_000 {
		t.Errorf("max lag %.0f µs, want at least 100 ms for a schedule started 200 ms late", c.LagMaxUs)
	}
	if c.Issued != c.Completed {
		t.Errorf("issued %d completed %d", c.Issued, c.Completed)
	}
}

func TestBadConfigureGivesOneClearError(t *testing.T) {
	svc := NewService(t.Context(), "h1", t.TempDir(), nil, nil)
	t.Cleanup(svc.Close)
	nonMonotone := filepath.Join(t.TempDir(), "bad.tsv")
	if err := os.WriteFile(nonMonotone, []byte("10 0.5\n20 0.3\n30 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := func() *agentpb.Workload {
		return &agentpb.Workload{Sizes: "w1", RateRps: 100, Targets: []string{"10.0.0.1:4000"}}
	}
	with := func(f func(*agentpb.Workload)) *agentpb.Workload { w := ok(); f(w); return w }
	tests := []struct {
		name      string
		transport agentpb.Transport
		tcp       *agentpb.TcpParams
		w         *agentpb.Workload
		want      string
	}{
		{"negative rate", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.RateRps = -5 }), "client.rate_rps"},
		{"zero poisson rate", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.RateRps = 0 }), "positive rate"},
		{"unknown arrivals", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.Arrivals = "bursty" }), "client.arrivals"},
		{"closed without outstanding", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.Arrivals = "closed" }), "client.max_outstanding"},
		{"bad sizes", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.Sizes = "w9" }), "client.sizes"},
		{"non-monotone file", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.Sizes = "file:" + nonMonotone }), "not a monotone CDF"},
		{"absent file", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.Sizes = "file:/nonexistent/w.tsv" }), "no such file"},
		{"unreadable file", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.Sizes = "file:" + t.TempDir() }), "is a directory"},
		{"NaN rate", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.RateRps = math.NaN() }), "client.rate_rps"},
		{"no targets", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.Targets = nil }), "client.targets"},
		{"bad target", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.Targets = []string{"h2"} }), "ip:port"},
		{"jitter above interval", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.BurstIntervalUs, w.BurstJitterUs = 100, 200 }), "client.burst_jitter_us"},
		{"warmup beyond duration", agentpb.Transport_TRANSPORT_TCP, nil, with(func(w *agentpb.Workload) { w.DurationMs, w.WarmupMs = 100, 200 }), "client.warmup_ms"},
		{"no transport", agentpb.Transport_TRANSPORT_UNSPECIFIED, nil, ok(), "transport"},
		{"unknown congestion", agentpb.Transport_TRANSPORT_TCP, &agentpb.TcpParams{Congestion: "nosuchcc"}, ok(), "kernel offers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.Configure(t.Context(), &agentpb.ConfigureRequest{
				Experiment: "bad", Transport: tc.transport, Tcp: tc.tcp, Client: tc.w,
			})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("error %v, want InvalidArgument", err)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") > 0 {
				t.Errorf("error %q: want one line containing %q", msg, tc.want)
			}
		})
	}
	if _, err := svc.Start(t.Context(), &agentpb.StartRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Start before a good Configure: %v, want FailedPrecondition", err)
	}
}
