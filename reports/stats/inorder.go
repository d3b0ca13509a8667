package stats

import (
	"sync"
)

// inOrder runs jobs, at most n at once, each in three steps: before, one
// job at a time in the order submitted (reading a file in order); work, at
// the same time as other jobs' (the computing); after, one job at a time in
// the order submitted (writing the outputs, so they are the same whatever
// n). With n = 1 the caller runs each job whole before it returns. Once a
// step fails, no further step runs and wait returns its error.
//
// A job also costs memory (an experiment's records, read before it is
// submitted and held until its work ends), and the jobs under way share a
// budget: submit lets the caller go on to read the next job only while
// what the jobs hold and one more of the same cost fit in it, or once they
// hold nothing. So a run of large experiments is analysed one at a time
// instead of running the machine out of memory.
type inOrder struct {
	sem chan struct{}
	// before and after are closed when the last submitted job's step of
	// that name has ended: the next job's waits for them.
	before, after chan struct{}
	wg            sync.WaitGroup
	mu            sync.Mutex
	err           error
	// budget is the bytes the jobs under way may hold together (0: no
	// bound); held is what they hold, freed signalled when it falls.
	budget, held int64
	freed        *sync.Cond
}

func newInOrder(n int, budget int64) *inOrder {
	done := make(chan struct{})
	close(done)
	p := &inOrder{sem: make(chan struct{}, max(n, 1)), before: done, after: done, budget: max(budget, 0)}
	p.freed = sync.NewCond(&p.mu)
	return p
}

// fits waits until the jobs under way hold nothing or what they hold and
// more bytes fit in the budget.
func (p *inOrder) fits(more int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.budget > 0 && p.held > 0 && p.held+more > p.budget {
		p.freed.Wait()
	}
}

// submit starts a job of cost bytes once fewer than n are running (it
// blocks until then) and returns once a next job of the same cost would
// fit in the budget beside those under way; or it returns the error a step
// already failed with.
func (p *inOrder) submit(cost int64, before, work, after func() error) error {
	if err := p.failed(); err != nil {
		return err
	}
	if cap(p.sem) == 1 {
		// One at a time: in the caller, which reads the next experiment's
		// records only after, as a run always did (one core, one
		// experiment's records in memory).
		for _, f := range []func() error{before, work, after} {
			if err := f(); err != nil {
				p.fail(err)
				return err
			}
		}
		return nil
	}
	p.sem <- struct{}{}
	p.mu.Lock()
	p.held += cost
	p.mu.Unlock()
	prevBefore, prevAfter := p.before, p.after
	myBefore, myAfter := make(chan struct{}), make(chan struct{})
	p.before, p.after = myBefore, myAfter
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() { <-p.sem }()
		defer func() {
			p.mu.Lock()
			p.held -= cost
			p.mu.Unlock()
			p.freed.Broadcast()
		}()
		p.step(prevBefore, myBefore, before)
		if p.failed() == nil {
			p.fail(work())
		}
		p.step(prevAfter, myAfter, after)
	}()
	// The caller reads the next job's records (about as large) now.
	p.fits(cost)
	return nil
}

// step runs f once the previous job's step has ended, and then lets the
// next job's run; it never lets the next one run before the previous one
// ended, also after a failure, so that steps never overlap.
func (p *inOrder) step(prev, mine chan struct{}, f func() error) {
	<-prev
	defer close(mine)
	if p.failed() == nil {
		p.fail(f())
	}
}

func (p *inOrder) fail(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *inOrder) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// wait waits for every submitted job and returns the first error.
func (p *inOrder) wait() error {
	p.wg.Wait()
	return p.failed()
}
