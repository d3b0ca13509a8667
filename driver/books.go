package driver

import "github.com/homatb/homatb/rundir"

// Books is the Sink the agent and the simulator keep their records with:
// it counts each RPC's outcome and hands the rows to out in the order
// issued, each once it and every row issued before it are final. So
// rpcs.csv lists RPCs in issue order on both clocks, and a long
// experiment holds only the rows of its open RPCs and of those issued
// after the oldest of them.
type Books struct {
	Count rundir.Books
	// Failures counts the failed RPCs by reason.
	Failures map[string]uint64
	// open is counted apart, not derived from Count, so that issued =
	// completed + failed + in flight + open checks the books.
	open    uint64
	out     func(*rundir.RPC)
	pending []*rundir.RPC
}

// NewBooks returns books that hand each final row to out.
func NewBooks(out func(*rundir.RPC)) *Books {
	return &Books{Failures: map[string]uint64{}, out: out}
}

// Issued books a row as issued and open.
func (b *Books) Issued(row *rundir.RPC) {
	b.pending = append(b.pending, row)
	b.Count.Issued++
	b.open++
}

// Ended books a completed or failed row.
func (b *Books) Ended(row *rundir.RPC) {
	b.open--
	if row.Status == rundir.StatusCompleted {
		b.Count.Completed++
	} else {
		b.Count.Failed++
		b.Failures[row.Reason]++
	}
	b.flush()
}

// InFlight books a row open when the books closed.
func (b *Books) InFlight(*rundir.RPC) {
	b.open--
	b.Count.InFlight++
	b.flush()
}

// Open is the number of rows issued and not yet final.
func (b *Books) Open() uint64 { return b.open }

// Close hands out every row still held, final or not, in the order issued.
func (b *Books) Close() {
	for _, row := range b.pending {
		b.out(row)
	}
	b.pending = nil
}

// flush hands out the leading final rows (a row's status is set as it
// ends or the books close).
func (b *Books) flush() {
	n := 0
	for n < len(b.pending) && b.pending[n].Status != "" {
		b.out(b.pending[n])
		b.pending[n] = nil
		n++
	}
	b.pending = b.pending[n:]
}
