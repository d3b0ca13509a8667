package driver

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/simnet"
)

// fixedTransport ends every call service ns after it starts, on sched.
type fixedTransport struct {
	sched   Scheduler
	service int64
}

func (f fixedTransport) Call(row *rundir.RPC, t Target, req []byte, end func(Result)) {
	done := f.sched.Now() + f.service
	f.sched.At(done, func() { end(Result{RespBytes: int64(len(req)), DoneNs: done}) })
}

// virtualRun starts w on one host in virtual time, each call ending
// service after it starts; rows receives the rows as they go out.
func virtualRun(t *testing.T, w *agentpb.Workload, service time.Duration) (r *Run, q *simnet.Clock, rows *[]*rundir.RPC) {
	t.Helper()
	spec, err := ParseWorkload(w)
	if err != nil {
		t.Fatal(err)
	}
	q, rows = &simnet.Clock{}, &[]*rundir.RPC{}
	clock := OnQueue(q, 0)
	r = NewRun(clock, false, func(row *rundir.RPC) { *rows = append(*rows, row) })
	r.Add(Config{Experiment: "e", Transport: "fake", Phase: rundir.PhaseMeasure, Host: "h1", Client: spec},
		fixedTransport{sched: clock, service: service.Nanoseconds()})
	r.Start()
	return r, q, rows
}

// runVirtual runs w on one host in virtual time until nothing is busy or
// limit has passed, then closes the books; it returns the rows in the
// order issued and the host's counters.
func runVirtual(t *testing.T, w *agentpb.Workload, service, limit time.Duration) ([]*rundir.RPC, *agentpb.Counters) {
	r, q, rows := virtualRun(t, w, service)
	r.Pass(limit.Nanoseconds())
	r.Stop(q.Now())
	return *rows, r.Counters("h1")
}

// TestOutstandingLimitQueues: an open loop whose arrivals (every 10 µs)
// come faster than max_outstanding 1 RPC of 25 µs can serve queues them:
// every arrival is issued, in order, as a slot frees, with its arrival
// kept as its intended time, so the wait counts in its latency; the
// schedule meanwhile keeps its times. The agent and the simulator once
// differed here (one held the schedule back, the other queued).
func TestOutstandingLimitQueues(t *testing.T) {
	const interval, service = 10 * time.Microsecond, 25 * time.Microsecond
	rows, c := runVirtual(t, &agentpb.Workload{Sizes: "fixed:100", BurstIntervalUs: 10, MaxOutstanding: 1,
		DurationMs: 1, Targets: []string{"10.0.0.1:1"}}, service, time.Second)
	const arrivals = int(time.Millisecond / interval)
	if len(rows) != arrivals || c.Completed != uint64(arrivals) || c.InFlight != 0 {
		t.Fatalf("%d rows, counters %v: want all %d arrivals issued and completed", len(rows), c, arrivals)
	}
	if got := c.OutstandingLimitWaits; got != uint64(arrivals-1) {
		t.Errorf("%d slot waits, want %d (every arrival but the first found the slot taken)", got, arrivals-1)
	}
	var lastDone int64
	for k, r := range rows {
		if want := int64(k) * interval.Nanoseconds(); r.IntendedNs != want {
			t.Fatalf("RPC %d intended at %d, want its arrival %d", k, r.IntendedNs, want)
		}
		if want := max(r.IntendedNs, lastDone); r.SentNs != want {
			t.Fatalf("RPC %d sent at %d, want %d: at its arrival or as the one before it ends", k, r.SentNs, want)
		}
		lastDone = r.DoneNs
	}
	last := rows[arrivals-1]
	if wait := last.DoneNs - last.IntendedNs; wait < int64(arrivals)*(service-interval).Nanoseconds() {
		t.Errorf("last RPC's latency %d ns: want its queueing (about %d ns) counted", wait, int64(arrivals)*(service-interval).Nanoseconds())
	}
}

// TestClosedLoopBooks: a closed loop of two workers issues max_rpcs RPCs
// and no more, each as the worker's last one ends.
func TestClosedLoopBooks(t *testing.T) {
	rows, c := runVirtual(t, &agentpb.Workload{Sizes: "fixed:100", Arrivals: "closed", MaxOutstanding: 2, MaxRpcs: 50,
		Targets: []string{"10.0.0.1:1"}}, 5*time.Microsecond, time.Second)
	if c.Issued != 50 || c.Completed != 50 {
		t.Errorf("counters %v: want 50 issued and completed", c)
	}
	for _, r := range rows {
		if r.IntendedNs != r.SentNs || r.Experiment != "e" || r.Client != "h1" || r.Server != "10.0.0.1:1" {
			t.Fatalf("row %+v: want intended = sent and the host's names", r)
		}
	}
}

// TestHostClock: events run in time order, a cancelled one never, and an
// event scheduled from another goroutine wakes a loop asleep until a far
// event.
func TestHostClock(t *testing.T) {
	c, err := NewHostClock()
	if err != nil {
		t.Fatal(err)
	}
	go c.Run()
	defer c.Close()
	now := c.Now()
	var order []int
	got := make(chan struct{})
	c.At(now+int64(time.Hour), func() { t.Error("the far event ran") })
	c.At(now+int64(2*time.Millisecond), func() { order = append(order, 2); close(got) })
	c.At(now+int64(time.Millisecond), func() { order = append(order, 1) })
	c.At(now+int64(time.Millisecond), func() { t.Error("a cancelled event ran") }).Cancel()
	<-got
	var ran atomic.Bool
	woke := make(chan time.Duration)
	time.Sleep(5 * time.Millisecond) // the loop is asleep until the far event
	go func() {
		from := time.Now()
		c.At(c.Now(), func() { ran.Store(true); woke <- time.Since(from) })
	}()
	select {
	case d := <-woke:
		t.Logf("woken in %v", d)
	case <-time.After(5 * time.Second):
		t.Fatal("an event scheduled from another goroutine did not wake the loop")
	}
	c.Do(func() {
		if len(order) != 2 || order[0] != 1 || order[1] != 2 {
			t.Errorf("events ran in order %v, want [1 2]", order)
		}
	})
}

// TestSubMillisecondBounds: a simulated run's phases may last fractions of
// a millisecond (the paper's W1 measures 500 µs); the bounds given to the
// nanosecond decide the warm-up and the end, not their whole milliseconds
// (which would make this workload's warm-up as long as its duration).
func TestSubMillisecondBounds(t *testing.T) {
	w := &agentpb.Workload{Sizes: "fixed:100", Arrivals: "poisson", RateRps: 1e6, Targets: []string{"10.0.0.1:4000"},
		DurationMs: 2, WarmupMs: 2, DurationNs: 2_500_000, WarmupNs: 2_000_000}
	rows, _ := runVirtual(t, w, time.Microsecond, 10*time.Millisecond)
	var warm, measured int
	var last int64
	for _, r := range rows {
		switch r.Phase {
		case rundir.PhaseWarmup:
			warm++
		case rundir.PhaseMeasure:
			measured++
		}
		last = max(last, r.IntendedNs)
	}
	// About 2,000 arrivals in the warm-up and 500 measured at 1 per µs.
	if warm < 1800 || warm > 2200 || measured < 400 || measured > 600 {
		t.Errorf("%d warm-up and %d measured RPCs; want about 2000 and 500", warm, measured)
	}
	if last >= 2_500_000 {
		t.Errorf("an RPC intended at %d ns, after the 2.5 ms duration", last)
	}
	if _, err := ParseWorkload(&agentpb.Workload{Sizes: "fixed:100", Arrivals: "poisson", RateRps: 1, Targets: []string{"10.0.0.1:4000"},
		DurationNs: 1_000_000, WarmupNs: 1_000_000}); err == nil {
		t.Error("a warm-up as long as the duration was accepted")
	}
}

// TestConfigOf: the agent and the simulated agent read a Configure
// request through ConfigOf, so both refuse what one refuses (the twin once
// took two collectives of one id, and any message size).
func TestConfigOf(t *testing.T) {
	coll := func(phase string) *agentpb.Collective {
		return &agentpb.Collective{Phase: phase, Kind: "ring-allreduce", Targets: []string{"10.0.0.1:4000", "10.0.0.2:4000"},
			Hosts: []string{"h1", "h2"}, Bytes: 8000, Iterations: 1}
	}
	client := func(sizes string) *agentpb.Workload {
		return &agentpb.Workload{Sizes: sizes, Arrivals: "closed", MaxOutstanding: 1, Targets: []string{"10.0.0.1:4000"}}
	}
	tests := []struct {
		name       string
		req        *agentpb.ConfigureRequest
		maxMessage int
		want       string // error text; "" for none
	}{
		{"ok", &agentpb.ConfigureRequest{Experiment: "e", Client: client("fixed:100"),
			Collectives: []*agentpb.Collective{coll("a"), coll("b")}}, 8000, ""},
		{"ids collide", &agentpb.ConfigureRequest{Experiment: "e", Collectives: []*agentpb.Collective{coll("a"), coll("a")}}, 8000, "collides"},
		{"client too large", &agentpb.ConfigureRequest{Experiment: "e", Client: client("fixed:2000")}, 1000, "homa carries at most 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ConfigOf(tc.req, "homa", tc.maxMessage, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case tc.want == "" && (c.Phase != rundir.PhaseMeasure || c.Client == nil || len(c.Collectives) != 2):
				t.Errorf("config %+v: want phase measure, a client and two collectives", c)
			}
		})
	}
}

// TestStopEndsIssuingBeforeTheDrain: Stop ends the schedules first and
// then drains, on either clock: a closed loop with no bound would
// otherwise keep an RPC open, and issuing, through the whole drain. (The
// twin once drained with its collectives still iterating.)
func TestStopEndsIssuingBeforeTheDrain(t *testing.T) {
	r, q, rows := virtualRun(t, &agentpb.Workload{Sizes: "fixed:100", Arrivals: "closed", MaxOutstanding: 1,
		Targets: []string{"10.0.0.1:1"}}, 10*time.Microsecond)
	const stopAt = int64(time.Millisecond)
	r.Pass(stopAt)
	r.Stop(stopAt + int64(time.Second))
	c := r.Counters("h1")
	if c.Issued < 90 || c.Completed != c.Issued {
		t.Errorf("counters %v: want about 100 RPCs issued before Stop, every one completed in the drain", c)
	}
	if last := (*rows)[len(*rows)-1]; last.SentNs > stopAt || q.Now() > stopAt+int64(10*time.Microsecond)+int64(time.Millisecond) {
		t.Errorf("last RPC sent at %d ns, drain left the clock at %d ns: want nothing sent after Stop at %d and the drain over with the last RPC",
			last.SentNs, q.Now(), stopAt)
	}
}
