package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/homatb/homatb/p4/switchstats"
)

// rig is a running dataplane over two in-memory ports: port 1 reaches
// 10.0.0.1, port 2 reaches 10.0.0.2.
type rig struct {
	d     *Dataplane
	pl    *testPipeline
	ports map[uint16]*memPort
	stop  func() error
}

func startRig(t *testing.T, mod func(*Config)) *rig {
	t.Helper()
	goroutines := runtime.NumGoroutine()
	cfg := Config{Ports: map[uint16]string{1: "mem1", 2: "mem2"}, Unshaped: true, DeviceID: 7}
	if mod != nil {
		mod(&cfg)
	}
	pl := &testPipeline{}
	pl.route[1], pl.route[2] = 1, 2
	r := &rig{pl: pl, ports: map[uint16]*memPort{1: newMemPort(), 2: newMemPort()}}
	io := map[uint16]Port{1: r.ports[1], 2: r.ports[2]}
	d, err := NewWithPorts(cfg, pl, io)
	if err != nil {
		t.Fatal(err)
	}
	r.d = d
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stopped := false
	var runErr error
	r.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
		// Every goroutine the dataplane started has ended.
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > goroutines {
			t.Errorf("%d goroutines left running", n-goroutines)
		}
	})
	return r
}

// recvN waits for n frames on port p, for at most a few seconds.
func (r *rig) recvN(t *testing.T, p uint16, n int) [][]byte {
	t.Helper()
	var got [][]byte
	timeout := time.After(5 * time.Second)
	for len(got) < n {
		select {
		case f := <-r.ports[p].out:
			got = append(got, f)
		case <-timeout:
			t.Fatalf("port %d: got %d of %d frames", p, len(got), n)
		}
	}
	return got
}

func TestForwardAndCount(t *testing.T) {
	r := startRig(t, nil)
	const n = 500
	for i := range n {
		r.ports[1].in <- makeFrame(100+i, 2, uint8(i%8), uint32(i))
	}
	r.ports[2].in <- makeFrame(60, 1, 0, 0)
	r.ports[2].in <- makeFrame(60, 99, 0, 0) // no route: pipeline drop
	got := r.recvN(t, 2, n)
	r.recvN(t, 1, 1)
	seen := map[uint32]bool{}
	for _, f := range got {
		seen[frameSeq(f)] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct frames of %d", len(seen), n)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	s := r.d.Stats()
	p1, p2 := s.Ports[0], s.Ports[1]
	if p1.RxPkts != n || p2.TxPkts != n || p2.RxPkts != 2 || p1.TxPkts != 1 || p2.PipelineDrops != 1 {
		t.Errorf("port counters: p1 rx %d tx %d, p2 rx %d tx %d drops %d", p1.RxPkts, p1.TxPkts, p2.RxPkts, p2.TxPkts, p2.PipelineDrops)
	}
	var enq, sent, bytes uint64
	for _, q := range p2.Queues {
		enq += q.EnqPkts
		sent += q.SentPkts
		bytes += q.SentBytes
		if q.EnqPkts != n/8 && q.EnqPkts != n/8+1 {
			t.Errorf("queue %d enqueued %d", q.Queue, q.EnqPkts)
		}
	}
	if want := uint64(n*100 + n*(n-1)/2); enq != n || sent != n || bytes != want || p2.TxBytes != want {
		t.Errorf("queues: enq %d sent %d bytes %d tx bytes %d, want %d frames of %d bytes", enq, sent, bytes, p2.TxBytes, n, want)
	}
	if got := r.pl.egress.Load(); got != n+1 {
		t.Errorf("egress ran %d times, want %d", got, n+1)
	}
}

// The JSON has every field of the docs/formats.md "Switch statistics" format.
func TestStatsJSONFormat(t *testing.T) {
	r := startRig(t, func(c *Config) { c.Unshaped = false; c.LinkRateBps = 10e9 })
	r.ports[1].in <- makeFrame(200, 2, 3, 1)
	r.recvN(t, 2, 1)
	b, err := json.Marshal(r.d.Stats())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		DeviceID *uint64          `json:"device_id"`
		Ports    []map[string]any `json:"ports"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.DeviceID == nil || *doc.DeviceID != 7 || len(doc.Ports) != 2 {
		t.Fatalf("stats: %s", b)
	}
	for _, k := range []string{"port", "iface", "rx_pkts", "tx_pkts", "fault_drops", "rate_bps", "queues"} {
		if _, ok := doc.Ports[1][k]; !ok {
			t.Errorf("port object lacks %q", k)
		}
	}
	if rate := doc.Ports[1]["rate_bps"].(float64); rate != 10e9 {
		t.Errorf("rate_bps %v", rate)
	}
	queues := doc.Ports[1]["queues"].([]any)
	if len(queues) != NumQueues {
		t.Fatalf("%d queues", len(queues))
	}
	q3 := queues[3].(map[string]any)
	for _, k := range []string{"queue", "enq_pkts", "enq_bytes", "sent_pkts", "sent_bytes", "drop_pkts",
		"drop_bytes", "depth_pkts", "depth_bytes", "peak_pkts", "peak_bytes", "delay_p50_us", "delay_p99_us", "delay_max_us"} {
		if _, ok := q3[k]; !ok {
			t.Errorf("queue object lacks %q", k)
		}
	}
	if q3["sent_bytes"].(float64) != 200 {
		t.Errorf("queue 3 sent_bytes %v", q3["sent_bytes"])
	}
}

func TestPcapReadable(t *testing.T) {
	dir := t.TempDir()
	r := startRig(t, func(c *Config) { c.PcapDir = dir })
	var sent [][]byte
	for i := range 20 {
		f := makeFrame(64+i*50, 2, 0, uint32(i))
		sent = append(sent, f)
		r.ports[1].in <- f
	}
	r.recvN(t, 2, len(sent))
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mem1_in.pcap", "mem2_out.pcap"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		pr, err := pcapgo.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if pr.LinkType() != layers.LinkTypeEthernet {
			t.Errorf("%s: link type %v", name, pr.LinkType())
		}
		for i := 0; ; i++ {
			data, ci, err := pr.ReadPacketData()
			if errors.Is(err, io.EOF) {
				if i != len(sent) {
					t.Errorf("%s: %d frames, want %d", name, i, len(sent))
				}
				break
			}
			if err != nil {
				t.Fatalf("%s frame %d: %v", name, i, err)
			}
			if !bytes.Equal(data, sent[i]) || ci.Length != len(sent[i]) || ci.Timestamp.IsZero() {
				t.Fatalf("%s frame %d differs from the frame sent", name, i)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "mem2_in.pcap")); err != nil {
		t.Errorf("capture of the idle direction missing: %v", err)
	}
}

func TestRuntimeFaults(t *testing.T) {
	r := startRig(t, func(c *Config) { c.Faults = map[uint16]Fault{2: {EveryN: 4}} })
	for i := range 40 {
		r.ports[1].in <- makeFrame(100, 2, 0, uint32(i))
	}
	got := r.recvN(t, 2, 30)
	for _, f := range got {
		if seq := frameSeq(f); seq%4 == 3 {
			t.Errorf("frame %d passed, every 4th should be dropped", seq)
		}
	}
	if err := r.d.SetFault(2, Fault{DropProb: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.d.SetFault(9, Fault{}); err == nil {
		t.Error("fault on a missing port accepted")
	}
	for i := range 10 {
		r.ports[1].in <- makeFrame(100, 2, 0, uint32(100+i))
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.d.Stats().Ports[1].FaultDrops < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := r.d.SetFault(2, Fault{}); err != nil {
		t.Fatal(err)
	}
	r.ports[1].in <- makeFrame(100, 2, 0, 999)
	if f := r.recvN(t, 2, 1)[0]; frameSeq(f) != 999 {
		t.Errorf("frame %d passed while the drop probability was 1", frameSeq(f))
	}
	if fd := r.d.Stats().Ports[1].FaultDrops; fd != 20 {
		t.Errorf("fault drops %d, want 10 every-4th + 10 at p=1", fd)
	}
}

// Under overload of an egress port shaped to a low rate, queue 7 sees a
// few packet times of delay while queue 0 fills to its limit and drops.
func TestPriorityUnderOverload(t *testing.T) {
	r := startRig(t, func(c *Config) {
		c.Unshaped = false
		c.LinkRateBps = 10e6 // 1.23 ms per 1514 B frame
		c.QueueDepthPkts = 16
	})
	for i := range 100 {
		r.ports[1].in <- makeFrame(1514, 2, 0, uint32(i))
	}
	// Then 5 frames per 4 frame times, one of them on queue 7: queue 0
	// stays overloaded, queue 7 never has more than one packet.
	for i := range 20 {
		for j := range 4 {
			r.ports[1].in <- makeFrame(1514, 2, 0, uint32(100+5*i+j))
		}
		r.ports[1].in <- makeFrame(1514, 2, 7, uint32(1000+i))
		time.Sleep(5 * time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		q := r.d.Stats().Ports[1].Queues
		if q[7].SentPkts == 20 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s := r.d.Stats().Ports[1]
	q0, q7 := s.Queues[0], s.Queues[7]
	if q7.SentPkts != 20 || q7.DropPkts != 0 {
		t.Errorf("queue 7 sent %d dropped %d, want 20, 0", q7.SentPkts, q7.DropPkts)
	}
	if q0.DropPkts == 0 || q0.PeakPkts != 16 {
		t.Errorf("queue 0 dropped %d peak %d, want drops and a peak of 16", q0.DropPkts, q0.PeakPkts)
	}
	defer func() {
		// Once queue 0 has drained, a new window forgets the overload's
		// peak and delays but keeps the counters.
		for end := time.Now().Add(5 * time.Second); r.d.Stats().Ports[1].Queues[0].DepthPkts > 0 && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
		rec := httptest.NewRecorder()
		r.d.AdminHandler().ServeHTTP(rec, httptest.NewRequest("POST", "/stats/reset-window", nil))
		after := r.d.Stats().Ports[1].Queues[0]
		if rec.Code != 200 || after.PeakPkts != 0 || after.DelayMaxUs != 0 || after.SentPkts < q0.SentPkts {
			t.Errorf("after reset-window (%d): queue 0 peak %d max delay %d sent %d (was %d), want 0, 0 and the count kept",
				rec.Code, after.PeakPkts, after.DelayMaxUs, after.SentPkts, q0.SentPkts)
		}
	}()
	// Queue 7's median, not its maximum, against frame times: one stall of
	// this shared VM (4.5 ms, seen in CI) is enough to move a maximum of 20
	// samples. Its maximum must still stay well under queue 0's.
	ser := uint32(serializationNs(1514, 10e6) / 1000)
	if q7.DelayP50Us > 3*ser || q7.DelayMaxUs > q0.DelayMaxUs/2 {
		t.Errorf("queue 7 delay median %d µs, max %d µs: want the median within 3 frame times (%d µs each) and the max under half of queue 0's %d µs",
			q7.DelayP50Us, q7.DelayMaxUs, ser, q0.DelayMaxUs)
	}
	if q0.DelayMaxUs < 10*ser {
		t.Errorf("queue 0 max delay %d µs, want near 16 frame times (%d µs each)", q0.DelayMaxUs, ser)
	}
}

func TestAdminEndpoint(t *testing.T) {
	r := startRig(t, nil)
	sock := filepath.Join(t.TempDir(), "admin.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeAdmin(ctx, sock, r.d.AdminHandler()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeAdmin: %v", err)
		}
		if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket left behind: %v", err)
		}
	})
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	var resp *http.Response
	var err error
	for range 100 { // the listener comes up asynchronously
		if resp, err = client.Get("http://switch/stats"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	var s switchstats.Stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || len(s.Ports) != 2 {
		t.Fatalf("GET /stats: %v, %d ports", err, len(s.Ports))
	}
	resp.Body.Close()

	tests := []struct {
		body     string
		code     int
		wantProb float64
		wantN    uint64
	}{
		{`{"port": 2, "drop_prob": 0.25}`, 200, 0.25, 0},
		{`{"port": 2, "drop_every": 3}`, 200, 0.25, 3},
		{`{"port": 2, "drop_prob": 2}`, 400, 0.25, 3},
		{`{"port": 5, "drop_prob": 0.1}`, 404, 0.25, 3},
		{`{"port": 2, "bogus": 1}`, 400, 0.25, 3},
		{`{"port": 2, "drop_prob": 0, "drop_every": 0}`, 200, 0, 0},
	}
	for _, tc := range tests {
		resp, err := client.Post("http://switch/faults", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("POST %s: %d, want %d", tc.body, resp.StatusCode, tc.code)
		}
		if f, _ := r.d.Fault(2); f.DropProb != tc.wantProb || f.EveryN != tc.wantN {
			t.Errorf("after %s: fault %+v", tc.body, f)
		}
	}
	// A second server on a live socket is refused.
	if err := ServeAdmin(context.Background(), sock, http.NotFoundHandler()); err == nil {
		t.Error("second ServeAdmin on a live socket succeeded")
	}
	rec := httptest.NewRecorder()
	r.d.AdminHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/faults", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"port": 1`) {
		t.Errorf("GET /faults: %d %s", rec.Code, rec.Body)
	}
}

func TestConfigValidation(t *testing.T) {
	ok := map[uint16]string{1: "a"}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no ports", Config{}},
		{"port 0", Config{Ports: map[uint16]string{0: "a"}}},
		{"port 64", Config{Ports: map[uint16]string{64: "a"}}},
		{"no iface", Config{Ports: map[uint16]string{1: ""}}},
		{"batch", Config{Ports: ok, BatchSize: 5000}},
		{"depth on unknown port", Config{Ports: ok, QueueDepths: []QueueDepth{{Port: 3, Queue: -1, Pkts: 5}}}},
		{"queue 8", Config{Ports: ok, QueueRates: []QueueRate{{Port: 1, Queue: 8, PPS: 5}}}},
		{"zero depth", Config{Ports: ok, QueueDepths: []QueueDepth{{Port: 1, Queue: 0, Pkts: 0}}}},
		{"fault prob", Config{Ports: ok, Faults: map[uint16]Fault{1: {DropProb: -0.1}}}},
		{"negative limit", Config{Ports: ok, PortBufferBytes: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewWithPorts(tc.cfg, &testPipeline{}, map[uint16]Port{1: newMemPort()}); err == nil {
				t.Error("accepted")
			}
		})
	}
}
