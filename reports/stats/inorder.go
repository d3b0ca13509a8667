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
type inOrder struct {
	sem chan struct{}
	// before and after are closed when the last submitted job's step of
	// that name has ended: the next job's waits for them.
	before, after chan struct{}
	wg            sync.WaitGroup
	mu            sync.Mutex
	err           error
}

func newInOrder(n int) *inOrder {
	done := make(chan struct{})
	close(done)
	return &inOrder{sem: make(chan struct{}, max(n, 1)), before: done, after: done}
}

// submit starts a job once fewer than n are running (it blocks until
// then), or returns the error a step already failed with.
func (p *inOrder) submit(before, work, after func() error) error {
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
	prevBefore, prevAfter := p.before, p.after
	myBefore, myAfter := make(chan struct{}), make(chan struct{})
	p.before, p.after = myBefore, myAfter
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() { <-p.sem }()
		p.step(prevBefore, myBefore, before)
		if p.failed() == nil {
			p.fail(work())
		}
		p.step(prevAfter, myAfter, after)
	}()
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
