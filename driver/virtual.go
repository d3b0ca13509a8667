package driver

// EventQueue is a discrete-event queue in virtual time, in ns
// (simnet.Clock): what the simulator runs its network on.
type EventQueue interface {
	Now() int64
	At(at int64, fn func())
	// Run runs the events due until at.
	Run(until int64)
}

// OnQueue is a Clock on q whose virtual time 0 is the Unix time epoch
// (ns), so that records read as Unix times like an agent's.
func OnQueue(q EventQueue, epoch int64) Clock { return virtual{q: q, epoch: epoch} }

type virtual struct {
	q     EventQueue
	epoch int64
}

func (v virtual) Now() int64 { return v.epoch + v.q.Now() }

func (v virtual) At(t int64, fn func()) Event {
	e := &queued{fn: fn}
	v.q.At(t-v.epoch, e.run)
	return e
}

// Do runs fn at once: the caller is among the queue's events or between
// its runs.
func (v virtual) Do(fn func()) { fn() }

// Pass runs the queue in steps of a millisecond, so that done is asked at
// least that often.
func (v virtual) Pass(t int64, done func() bool) {
	for v.Now() < t && !done() {
		v.q.Run(min(t, v.Now()+stepNs) - v.epoch)
	}
}

const stepNs = 1_000_000

// queued is an event on a queue that cannot take one back: cancelled, it
// runs and does nothing.
type queued struct {
	fn        func()
	cancelled bool
}

func (e *queued) run() {
	if !e.cancelled {
		e.fn()
	}
}

func (e *queued) Cancel() { e.cancelled = true }
