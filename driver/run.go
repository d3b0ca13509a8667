package driver

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
)

// Clock is a Scheduler a run can wait on: the host's wall clock in an
// agent (HostClock), the simulated network's event queue in the twin
// (OnQueue).
type Clock interface {
	Scheduler
	// Do runs fn among the clock's events and returns once it has run.
	Do(fn func())
	// Pass lets the clock's time pass until t, or until done, asked among
	// its events at least every millisecond of its time, reports true.
	Pass(t int64, done func() bool)
}

// Run is what one process runs of an experiment on one clock: an agent
// its host's workload, the twin every simulated host's. It holds a Host
// per host and transport, the books, which hand the records to out in the
// order issued across the hosts, and each host's tally for its counters.
type Run struct {
	clock Clock
	// timed keeps each host's send lags and RTTs (an agent's; in virtual
	// time nothing is late but for max_outstanding).
	timed bool

	hosts []*Host
	byKey map[string]*Host // by host and transport

	// mu guards the books: an agent's Status reads the tallies while its
	// clock's loop books.
	mu      sync.Mutex
	order   issueOrder
	tallies map[string]*tally
}

// NewRun returns a run on clock whose final rows go to out; timed keeps
// the hosts' send lags and RTTs.
func NewRun(clock Clock, timed bool, out func(*rundir.RPC)) *Run {
	return &Run{clock: clock, timed: timed, byKey: map[string]*Host{}, order: issueOrder{out: out}, tallies: map[string]*tally{}}
}

// Add adds cfg's workload, sending through tr; a host may have one per
// transport. It must come before Start.
func (r *Run) Add(cfg Config, tr Transport) {
	r.mu.Lock() // an agent's Status may be reading the tallies
	defer r.mu.Unlock()
	t := r.tallies[cfg.Host]
	if t == nil {
		t = newTally(r.timed)
		r.tallies[cfg.Host] = t
	}
	h := newHost(cfg, r.clock, tr, hostBooks{r, t})
	t.hosts = append(t.hosts, h)
	r.hosts = append(r.hosts, h)
	r.byKey[cfg.Host+" "+cfg.Transport] = h
}

// Start begins every host's client, then every matrix, then every
// collective, so that events due at one instant run in that order.
func (r *Run) Start() {
	r.clock.Do(func() {
		for _, h := range r.hosts {
			if h.client != nil {
				h.client.start()
			}
		}
		for _, h := range r.hosts {
			for _, m := range h.mats {
				m.start()
			}
		}
		for _, h := range r.hosts {
			for _, c := range h.colls {
				c.start()
			}
		}
	})
}

// Arrived tells host's workload on transport of a request its server had
// whole at at; it must run among the clock's events.
func (r *Run) Arrived(host, transport string, req []byte, at int64) {
	if h := r.Host(host, transport); h != nil {
		h.Arrived(req, at)
	}
}

// Host is host's workload on transport, nil if the run has none: for a
// caller that tells it of many arrivals (Host.Arrived), which Arrived
// would look up by name each time.
func (r *Run) Host(host, transport string) *Host { return r.byKey[host+" "+transport] }

// Pass lets the clock's time pass until t (Unix ns), or until no host may
// still issue and none has an RPC open.
func (r *Run) Pass(t int64) {
	r.clock.Pass(t, func() bool { return !slices.ContainsFunc(r.hosts, (*Host).Busy) })
}

// Stop ends every schedule, gives the open RPCs until drainUntil (Unix ns)
// to end and closes the books: what is still open is recorded as in
// flight, and every row goes out.
func (r *Run) Stop(drainUntil int64) {
	r.clock.Do(func() {
		for _, h := range r.hosts {
			h.StopIssuing()
		}
	})
	r.clock.Pass(drainUntil, func() bool {
		return !slices.ContainsFunc(r.hosts, func(h *Host) bool { return h.Open() > 0 })
	})
	r.clock.Do(func() {
		for _, h := range r.hosts {
			h.Close()
		}
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.order.close()
}

// Counters is host's tally: its RPCs by outcome (those still open as in
// flight), their failures by reason, send lags and RTTs when timed, and
// its clients' waits for a slot. Served and the transport's counters are
// the caller's to add. It may be called from any goroutine.
func (r *Run) Counters(host string) *agentpb.Counters {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tallies[host]; t != nil {
		return t.counters()
	}
	return &agentpb.Counters{Transport: map[string]uint64{}, Failures: map[string]uint64{}}
}

// Responder answers requests as every homatb server does: with zeros, as
// many as each asks for (ResponseLength). Its zero buffer grows to the
// longest answer and is then shared; it is safe for concurrent use.
type Responder struct {
	mu     sync.Mutex
	zeros  atomic.Pointer[[]byte]
	served atomic.Uint64
}

// Answer counts req as served and returns its answer, read-only.
func (r *Responder) Answer(req []byte) []byte {
	n := ResponseLength(req)
	r.served.Add(1)
	return r.Zeros(n)
}

// Served counts the requests answered.
func (r *Responder) Served() uint64 { return r.served.Load() }

// Zeros is n zero bytes, read-only.
func (r *Responder) Zeros(n int) []byte {
	if z := r.zeros.Load(); z != nil && len(*z) >= n {
		return (*z)[:n]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if z := r.zeros.Load(); z != nil && len(*z) >= n {
		return (*z)[:n]
	}
	z := make([]byte, max(n, 64<<10))
	r.zeros.Store(&z)
	return z[:n]
}
