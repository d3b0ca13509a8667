package testbed

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how far a run is: a bar with ETA on a terminal, plain
// lines otherwise (CI logs, pipes).
type progress struct {
	// mu orders the lines of the run's goroutine and the heartbeat's.
	mu      sync.Mutex
	w       io.Writer
	bar     *progressbar.ProgressBar
	total   int
	done    int
	start   time.Time
	planned []time.Duration // expected length of each remaining step
}

func newProgress(w io.Writer, planned []time.Duration) *progress {
	p := &progress{w: w, total: len(planned), start: time.Now(), planned: planned}
	if w == nil {
		return p
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(p.total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("starting"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// begin announces the next step.
func (p *progress) begin(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.bar != nil:
		p.bar.Describe(name)
	case p.w != nil:
		fmt.Fprintf(p.w, "[%d/%d] %s ...\n", p.done+1, p.total, name)
	}
}

// step marks a step finished, "done" or, when incomplete (interrupted,
// or its records could not all be stopped and fetched), "incomplete". The
// plain ETA scales the steps still planned by how long the finished ones
// took against their plan.
func (p *progress) step(name string, incomplete bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	outcome := "done"
	if incomplete {
		outcome = "incomplete"
	}
	if p.bar != nil {
		if incomplete {
			p.say("%s incomplete", name)
		}
		_ = p.bar.Add(1)
		return
	}
	if p.w == nil {
		return
	}
	elapsed := time.Since(p.start)
	var plannedDone, plannedLeft time.Duration
	for i, d := range p.planned {
		if i < p.done {
			plannedDone += d
		} else {
			plannedLeft += d
		}
	}
	eta := plannedLeft
	if plannedDone > 0 {
		eta = time.Duration(float64(plannedLeft) * float64(elapsed) / float64(plannedDone))
	}
	fmt.Fprintf(p.w, "[%d/%d] %s %s (elapsed %s, ETA %s)\n", p.done, p.total, name, outcome, elapsed.Round(time.Second), eta.Round(time.Second))
}

// message prints a line without disturbing the bar.
func (p *progress) message(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.say(format, args...)
}

// say is message with mu held.
func (p *progress) say(format string, args ...any) {
	if p.w == nil {
		return
	}
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintf(p.w, format+"\n", args...)
	if p.bar != nil {
		_ = p.bar.RenderBlank()
	}
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// heartbeatEvery is how often a long simulated experiment says how far
// it has gone.
const heartbeatEvery = 30 * time.Second

// virtualProgress is a timeline that can say how far an experiment has
// gone in virtual time (simulate.Network), from any goroutine.
type virtualProgress interface {
	Progress() (done, total time.Duration, events uint64, ok bool)
}

// heartbeat prints, every interval of wall time until the returned
// function is called, how far experiment name has gone in virtual time,
// when the run's timeline is virtual: a simulated experiment of
// thousands of hosts can take an hour with nothing else to say.
func (r *run) heartbeat(name string, every time.Duration) (stop func()) {
	vp, ok := r.time.(virtualProgress)
	if !ok || r.prog.w == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if d, total, events, ok := vp.Progress(); ok {
					r.prog.message("  %s", heartbeatLine(name, d, total, events, time.Since(start)))
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// heartbeatLine says how far an experiment has gone: "ring: 3.2ms of
// 50.05ms simulated (6%), 41.2 million events in 2m30s".
func heartbeatLine(name string, done, total time.Duration, events uint64, wall time.Duration) string {
	pct := 0.0
	if total > 0 {
		pct = 100 * min(float64(done)/float64(total), 1)
	}
	return fmt.Sprintf("%s: %v of %v simulated (%.0f%%), %.1f million events in %v", name, done.Round(time.Microsecond), total, pct, float64(events)/1e6, wall.Round(time.Second))
}
