package controller

import (
	"bytes"
	"context"
	"encoding/csv"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homatb/homatb/controller/p4rtclient"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/pipeline"
	"github.com/homatb/homatb/p4/target/targettest"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
)

// runningPoller starts a programmed switch of three hosts and a poller
// of it every 5 ms, with stream (if any) set, running until cancel; done
// gets Run's error.
func runningPoller(t *testing.T, stream func([]Sample)) (sw *targettest.Switch, topo *Topology, poller *Poller, cancel func(), done chan error) {
	sw = targettest.Start(t, "127.0.0.1:0", 1)
	topo = oneSwitchTopology(t, sw)
	f := programmed(t, topo, DefaultPolicy())
	poller, err := f.NewPoller(5 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if stream != nil {
		poller.Stream(stream)
	}
	ctx, cancel := context.WithCancel(testContext(t))
	done = make(chan error, 1)
	go func() { done <- poller.Run(ctx) }()
	return sw, topo, poller, cancel, done
}

func TestPollerAgreesWithSwitchAtExit(t *testing.T) {
	sw, topo, poller, cancel, done := runningPoller(t, nil)
	grown := func(n int) func() bool { return func() bool { return len(poller.Samples()) > n } }
	waitFor(t, 5*time.Second, "the first sample", grown(0))

	// Traffic through the programmed pipeline: random hosts and priorities,
	// ingress then egress with a made-up queue depth, while the poller runs.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		h := topo.Hosts[rng.IntN(len(topo.Hosts))]
		prio := rng.IntN(p4.QueuesPerPort)
		frame := ipv4Frame(h.IP, byte(prio<<5), rng.IntN(1400))
		var v pipeline.Verdict
		sw.Pipeline().Ingress(frame, 1, &v)
		if v.Drop || int(v.EgressPort) != h.Port || int(v.Queue) != prio {
			t.Fatalf("packet %d to %s prio %d: verdict %+v", i, h.Name, prio, v)
		}
		if i%7 != 0 { // some packets stay "queued": ingress > egress
			sw.Pipeline().Egress(frame, &pipeline.EgressMeta{IngressPort: 1, EgressPort: v.EgressPort, Queue: v.Queue,
				EnqDepthPkts: uint32(rng.IntN(50)), DeqTimedeltaUs: uint32(rng.IntN(900)), Length: len(frame)})
		}
		if i == 1500 { // a sample mid-traffic, so the series has a middle
			waitFor(t, 5*time.Second, "a sample mid-traffic", grown(len(poller.Samples())))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	last := poller.last()
	if len(last) != len(topo.Hosts)*p4.QueuesPerPort {
		t.Fatalf("last samples cover %d queues, want %d", len(last), len(topo.Hosts)*p4.QueuesPerPort)
	}
	var total int64
	for k, s := range last {
		idx := int(p4.QueueIndex(uint16(k.Port), uint8(k.Queue)))
		inP, inB, err1 := sw.Pipeline().Counter(p4.CounterIngressQueue, idx)
		outP, outB, err2 := sw.Pipeline().Counter(p4.CounterEgressQueue, idx)
		depth, err3 := sw.Pipeline().Register(p4.RegisterQueueDepth, idx)
		peak, err4 := sw.Pipeline().Register(p4.RegisterQueuePeak, idx)
		delay, err5 := sw.Pipeline().Register(p4.RegisterQueueDelay, idx)
		for _, err := range []error{err1, err2, err3, err4, err5} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if uint64(s.EnqPkts) != inP || uint64(s.EnqBytes) != inB || uint64(s.SentPkts) != outP || uint64(s.SentBytes) != outB ||
			s.DepthPkts != uint64(depth) || s.PeakPkts != uint64(peak) || s.DelayUS != uint64(delay) {
			t.Errorf("%v: poller %+v, switch in %d/%d out %d/%d depth %d peak %d delay %d", k, s, inP, inB, outP, outB, depth, peak, delay)
		}
		total += s.EnqPkts
	}
	if total != 3000 {
		t.Errorf("poller's final ingress counts sum to %d, want the 3000 packets sent", total)
	}
	samples := poller.Samples()
	if len(samples) < 3*len(last) {
		t.Errorf("%d samples: want at least a first, a middle and a final one of %d rows", len(samples), len(last))
	}

	var buf bytes.Buffer
	if err := poller.WriteCSV(&buf, "exp1"); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(samples)+1 || rows[0][0] != "experiment" || len(rows[0]) != 12 {
		t.Fatalf("csv has %d rows (header %v), want header + %d", len(rows), rows[0], len(samples))
	}
	last0 := samples[len(samples)-1]
	row := rows[len(rows)-1]
	if row[0] != "exp1" || row[1] != last0.Switch || row[3] != strconv.Itoa(last0.Port) || row[7] != strconv.FormatInt(last0.SentPkts, 10) {
		t.Errorf("last csv row %v does not match sample %+v", row, last0)
	}
}

func TestResetQueuePeaks(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	f := programmed(t, topo, DefaultPolicy())
	h := topo.Hosts[0]
	frame := ipv4Frame(h.IP, 5<<5, 100)
	var v pipeline.Verdict
	sw.Pipeline().Ingress(frame, 1, &v)
	sw.Pipeline().Egress(frame, &pipeline.EgressMeta{IngressPort: 1, EgressPort: v.EgressPort, Queue: v.Queue, EnqDepthPkts: 37, Length: len(frame)})
	idx := int(p4.QueueIndex(uint16(h.Port), uint8(v.Queue)))
	if peak, err := sw.Pipeline().Register(p4.RegisterQueuePeak, idx); err != nil || peak != 37 {
		t.Fatalf("peak before the reset: %d, %v; want 37", peak, err)
	}
	if err := f.ResetQueuePeaks(testContext(t)); err != nil {
		t.Fatal(err)
	}
	vals, err := f.Client(topo.Switches[0].Name).ReadRegister(testContext(t), registerQueuePeak)
	if err != nil {
		t.Fatal(err)
	}
	for _, rv := range vals {
		if rv.Value != 0 {
			t.Errorf("queue_peak[%d] = %d after the reset", rv.Index, rv.Value)
		}
	}
	if len(vals) == 0 {
		t.Error("read no queue_peak entries")
	}
	if err := f.Client(topo.Switches[0].Name).ResetRegister(testContext(t), "TorEgress.nope"); err == nil {
		t.Error("reset of an unknown register succeeded")
	}
}

// countReadEntities is a gRPC stream interceptor that adds up the entities
// of every ReadResponse the client receives.
type countReadEntities struct{ n atomic.Int64 }

func (c *countReadEntities) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	return &countingStream{ClientStream: s, c: c}, err
}

type countingStream struct {
	grpc.ClientStream
	c *countReadEntities
}

func (s *countingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if r, ok := m.(*p4v1.ReadResponse); ok && err == nil {
		s.c.n.Add(int64(len(r.GetEntities())))
	}
	return err
}

// A sample reads the five queue objects at the indices of the switch's
// ports only, not all 512 indices of each.
func TestPollerReadsOnlyExistingPorts(t *testing.T) {
	sw := targettest.Start(t, "127.0.0.1:0", 1)
	topo := oneSwitchTopology(t, sw)
	ctx := testContext(t)
	var count countReadEntities
	f, err := Connect(ctx, topo, p4rtclient.WithDialTimeout(5*time.Second), p4rtclient.WithGRPCOptions(grpc.WithChainStreamInterceptor(count.intercept)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if err := f.Program(ctx, DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	poller, err := f.NewPoller(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := count.n.Load()
	if err := poller.sampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	want := int64(len(topo.Hosts) * p4.QueuesPerPort * 5) // 2 counters + 3 registers
	if got := count.n.Load() - before; got != want {
		t.Errorf("one sample read %d entities, want %d", got, want)
	}
	if got := len(poller.Samples()); got != len(topo.Hosts)*p4.QueuesPerPort {
		t.Errorf("one sample has %d rows, want %d", got, len(topo.Hosts)*p4.QueuesPerPort)
	}
}

// last returns the most recent sample of each (switch, port, queue).
func (p *Poller) last() map[sampleKey]Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[sampleKey]Sample{}
	for _, s := range p.samples {
		out[sampleKey{s.Switch, s.Port, s.Queue}] = s
	}
	return out
}

// sampleKey identifies one queue of one switch.
type sampleKey struct {
	Switch      string
	Port, Queue int
}

// With Stream, each sample's rows go to the callback as they are taken and
// the poller keeps none (a long experiment's series is not held).
func TestPollerStreams(t *testing.T) {
	var calls, rows atomic.Int64
	_, topo, poller, cancel, done := runningPoller(t, func(s []Sample) {
		calls.Add(1)
		rows.Add(int64(len(s)))
	})
	waitFor(t, 5*time.Second, "three samples", func() bool { return calls.Load() >= 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	perSample := int64(len(topo.Hosts) * p4.QueuesPerPort)
	if got := rows.Load(); got != calls.Load()*perSample {
		t.Errorf("%d rows in %d samples, want %d each", got, calls.Load(), perSample)
	}
	if n := len(poller.Samples()); n != 0 {
		t.Errorf("the poller kept %d rows while streaming", n)
	}
}
