package testbed

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how far a run is: a bar with ETA on a terminal, plain
// lines otherwise (CI logs, pipes).
type progress struct {
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
	p.done++
	outcome := "done"
	if incomplete {
		outcome = "incomplete"
	}
	if p.bar != nil {
		if incomplete {
			p.message("%s incomplete", name)
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
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
