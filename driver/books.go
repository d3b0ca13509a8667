package driver

import (
	"maps"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
)

// issueOrder hands the rows of a run's RPCs to out in the order issued,
// each once it and every row issued before it are final. So rpcs.csv
// lists RPCs in issue order on both clocks, and a long experiment holds
// only the rows of its open RPCs and of those issued after the oldest of
// them.
type issueOrder struct {
	out     func(*rundir.RPC)
	pending []*rundir.RPC
}

func (o *issueOrder) issued(row *rundir.RPC) { o.pending = append(o.pending, row) }

// flush hands out the leading final rows (a row's status is set as it
// ends or the books close).
func (o *issueOrder) flush() {
	n := 0
	for n < len(o.pending) && o.pending[n].Status != "" {
		o.out(o.pending[n])
		o.pending[n] = nil
		n++
	}
	o.pending = o.pending[n:]
}

// close hands out every row still held, final or not, in the order
// issued.
func (o *issueOrder) close() {
	for _, row := range o.pending {
		o.out(row)
	}
	o.pending = nil
}

// lagMaxUs bounds the lag and RTT histograms (one minute); longer values
// saturate.
const lagMaxUs = 60_000_000

// tally is one host's books as its counters report them: its RPCs by
// outcome, why they failed and, when timed, their send lags and RTTs.
type tally struct {
	count rundir.Books
	// open is counted apart, not derived from count, so that issued =
	// completed + failed + in flight + open checks the books.
	open     uint64
	failures map[string]uint64
	// lag is the send lag, rtt the RTT of completed non-warmup RPCs, in
	// µs; nil when not timed.
	lag, rtt *hdrhistogram.Histogram
	hosts    []*Host
}

func newTally(timed bool) *tally {
	t := &tally{failures: map[string]uint64{}}
	if timed {
		t.lag, t.rtt = hdrhistogram.New(1, lagMaxUs, 3), hdrhistogram.New(1, lagMaxUs, 3)
	}
	return t
}

// hostBooks books one host's RPCs: exactly one Issued for every RPC sent,
// then Ended (completed or failed) or, when the books close first,
// InFlight; in its tally, then the run's books.
type hostBooks struct {
	r *Run
	t *tally
}

func (b hostBooks) Issued(row *rundir.RPC) {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	t := b.t
	t.count.Issued++
	t.open++
	if t.lag != nil {
		t.lag.RecordValue(min(max((row.SentNs-row.IntendedNs)/1000, 0), lagMaxUs))
	}
	b.r.order.issued(row)
}

func (b hostBooks) Ended(row *rundir.RPC) {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	t := b.t
	t.open--
	if row.Status != rundir.StatusCompleted {
		t.count.Failed++
		t.failures[row.Reason]++
	} else {
		t.count.Completed++
		if t.rtt != nil && row.Phase != rundir.PhaseWarmup {
			t.rtt.RecordValue(min(max((row.DoneNs-row.IntendedNs)/1000, 1), lagMaxUs))
		}
	}
	b.r.order.flush()
}

func (b hostBooks) InFlight(*rundir.RPC) {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	b.t.open--
	b.t.count.InFlight++
	b.r.order.flush()
}

// counters is the tally as an agent reports it: the RPCs still open
// count as in flight.
func (t *tally) counters() *agentpb.Counters {
	c := &agentpb.Counters{Issued: t.count.Issued, Completed: t.count.Completed, Failed: t.count.Failed,
		InFlight: t.count.InFlight + t.open, Failures: maps.Clone(t.failures), Transport: map[string]uint64{}}
	for _, h := range t.hosts {
		c.OutstandingLimitWaits += h.SlotWaits()
	}
	if t.lag != nil && t.lag.TotalCount() > 0 {
		c.LagP50Us, c.LagP99Us, c.LagMaxUs = quantiles(t.lag)
	}
	if t.rtt != nil && t.rtt.TotalCount() > 0 {
		c.RttP50Us, c.RttP99Us, c.RttMaxUs = quantiles(t.rtt)
	}
	return c
}

func quantiles(h *hdrhistogram.Histogram) (p50, p99, maximum float64) {
	return float64(h.ValueAtQuantile(50)), float64(h.ValueAtQuantile(99)), float64(h.Max())
}
