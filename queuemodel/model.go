// Package queuemodel is the single-queue model of message scheduling: one
// link, Poisson arrivals of messages whose sizes follow a workload (W1-W5),
// each message a job that needs its size in bytes of the link's time, and
// a scheduling policy — processor sharing (fair sharing), preemptive SRPT,
// first come first served, or k strict-priority levels split by size. It is
// exact and event-driven: between two events every job's remaining work
// changes at a known rate, so nothing is discretised.
//
// Slowdown is a message's time in the system over its size at the link
// rate (its time alone on the idle link).
package queuemodel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/homatb/homatb/workloads"
)

// Kind names a scheduling policy.
type Kind int

// The policies.
const (
	// PS is processor sharing: n jobs each served at rate 1/n.
	PS Kind = iota
	// SRPT serves the job with the least remaining work, preemptively.
	SRPT
	// FCFS serves jobs one at a time in arrival order.
	FCFS
	// Priority is k strict-priority levels split by size (Policy.Levels,
	// Policy.Split), each level ordered by Policy.Within (FCFS or PS).
	Priority
)

func (k Kind) String() string {
	switch k {
	case PS:
		return "ps"
	case SRPT:
		return "srpt"
	case FCFS:
		return "fcfs"
	case Priority:
		return "priority"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Split says how k priority levels divide message sizes.
type Split int

// The splits.
const (
	// EqualBytes cuts sizes so that each level carries the same share of
	// the bytes (cuts from the run's own messages).
	EqualBytes Split = iota
	// LogSpaced cuts sizes at k-1 points equally spaced in log(size)
	// between Policy.Lo and Policy.Hi (zero: the distribution's smallest
	// and largest message).
	LogSpaced
	// EqualMessages cuts sizes so that each level holds the same share of
	// the messages (cuts from the run's own messages).
	EqualMessages
)

func (s Split) String() string {
	switch s {
	case EqualBytes:
		return "equal-bytes"
	case LogSpaced:
		return "log-spaced"
	case EqualMessages:
		return "equal-messages"
	}
	return fmt.Sprintf("Split(%d)", int(s))
}

// Policy is a scheduling policy; Levels, Within, Split, Lo, Hi and Cuts
// apply to Priority only.
type Policy struct {
	Kind   Kind
	Levels int
	Within Kind
	Split  Split
	// Lo and Hi bound LogSpaced cuts in bytes; zero takes the size
	// distribution's smallest (Lo) or largest (Hi) message.
	Lo, Hi float64
	// Cuts, when set, are the level cuts as they are (Levels-1 sizes,
	// increasing), instead of Split's.
	Cuts []float64
}

// String names the policy, e.g. "srpt", "4 levels (equal-bytes, ps
// within)" or "8 levels (log-spaced 1000-1.6e+06 B, fcfs within)". Two
// policies that cut differently have different names.
func (p Policy) String() string {
	if p.Kind != Priority {
		return p.Kind.String()
	}
	return fmt.Sprintf("%d levels (%s)", p.Levels, p.SplitName())
}

// SplitName names a Priority policy's split and the discipline within a
// level, e.g. "log-spaced 1000-1.6e+06 B, ps within".
func (p Policy) SplitName() string {
	split := p.Split.String()
	switch {
	case p.Cuts != nil:
		split = fmt.Sprintf("cuts %v", p.Cuts)
	case p.Split == LogSpaced && (p.Lo != 0 || p.Hi != 0):
		split += " " + bound(p.Lo, "smallest") + "-" + bound(p.Hi, "largest") + " B"
	}
	return split + ", " + p.Within.String() + " within"
}

// bound prints a LogSpaced bound, zero as the distribution's own.
func bound(v float64, own string) string {
	if v == 0 {
		return own
	}
	return fmt.Sprintf("%g", v)
}

// Config is one run of the model.
type Config struct {
	// Sizes is the message-size distribution.
	Sizes workloads.SizeDist
	// Load is the offered load, the link's busy fraction, in (0, 1).
	Load float64
	// Messages is how many messages arrive (the article: 400,000).
	Messages int
	// Discard is the fraction of the first arrivals not measured
	// (the article: 0.1).
	Discard float64
	// Seed fixes the arrivals and sizes; every policy given the same seed
	// sees the same messages.
	Seed   uint64
	Policy Policy
}

// The article's run: 400,000 messages, the first 10% discarded.
const (
	ArticleMessages = 400_000
	ArticleDiscard  = 0.1
)

func (c Config) check() error {
	var errs []error
	if c.Sizes == nil {
		errs = append(errs, errors.New("sizes: no distribution"))
	}
	if !(c.Load > 0 && c.Load < 1) {
		errs = append(errs, fmt.Errorf("load: expected a fraction in (0, 1), got %g", c.Load))
	}
	if c.Messages < 2 || c.Messages > math.MaxInt32/2 {
		errs = append(errs, fmt.Errorf("messages: expected 2 to %d, got %d", math.MaxInt32/2, c.Messages))
	}
	if !(c.Discard >= 0 && c.Discard < 1) {
		errs = append(errs, fmt.Errorf("discard: expected a fraction in [0, 1), got %g", c.Discard))
	}
	switch c.Policy.Kind {
	case PS, SRPT, FCFS:
	case Priority:
		if c.Policy.Levels < 1 || c.Policy.Levels > 64 {
			errs = append(errs, fmt.Errorf("policy: levels: expected 1 to 64, got %d", c.Policy.Levels))
		}
		if c.Policy.Within != PS && c.Policy.Within != FCFS {
			errs = append(errs, fmt.Errorf("policy: within a level: expected ps or fcfs, got %s", c.Policy.Within))
		}
		if err := c.Policy.checkSplit(); err != nil {
			errs = append(errs, fmt.Errorf("policy: %w", err))
		}
	default:
		errs = append(errs, fmt.Errorf("policy: unknown kind %d", int(c.Policy.Kind)))
	}
	return errors.Join(errs...)
}

// checkSplit checks a Priority policy's split.
func (p Policy) checkSplit() error {
	switch {
	case p.Cuts != nil:
		if len(p.Cuts) != p.Levels-1 || !slices.IsSorted(p.Cuts) {
			return fmt.Errorf("cuts: expected %d increasing sizes, got %v", p.Levels-1, p.Cuts)
		}
	case p.Split != EqualBytes && p.Split != LogSpaced && p.Split != EqualMessages:
		return fmt.Errorf("split: expected equal-bytes, log-spaced or equal-messages, got %d", int(p.Split))
	case !(p.Lo >= 0) || !(p.Hi >= 0) || (p.Lo > 0 && p.Hi > 0 && p.Lo >= p.Hi):
		return fmt.Errorf("split: bounds: expected 0 <= lo < hi bytes (0: the distribution's own), got %g and %g", p.Lo, p.Hi)
	}
	return nil
}

// Run draws the messages of c and runs them through c.Policy. Arrivals go
// on after the last of them (not measured) until every measured message
// has left: a message's time under processor sharing depends on what
// arrives while it is served, and an arrival process that stops would
// make the last messages look faster than they are.
func Run(c Config) (*Result, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("queue model: %w", err)
	}
	r := rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15))
	// Time is in bytes at the link rate: a load rho of messages of mean
	// size m arrives at rate rho/m.
	gap := c.Sizes.Mean() / c.Load
	t := 0.0
	draw := func() (float64, float64) {
		t += r.ExpFloat64() * gap
		return t, float64(c.Sizes.Sample(r))
	}
	arrive := make([]float64, c.Messages)
	size := make([]float64, c.Messages)
	for i := range arrive {
		arrive[i], size[i] = draw()
	}
	return simulate(arrive, size, draw, c.Policy, c.Sizes, c.Discard)
}

// Simulate runs the given messages (arrival times non-decreasing, sizes
// positive, both in bytes at the link rate) through policy, measuring all
// but the first discard fraction of them; nothing arrives after them.
// dist gives the bounds of log-spaced levels (nil: the messages' own
// smallest and largest).
func Simulate(arrive, size []float64, policy Policy, dist workloads.SizeDist, discard float64) (*Result, error) {
	if len(arrive) != len(size) || len(arrive) == 0 || len(arrive) > math.MaxInt32/2 {
		return nil, fmt.Errorf("queue model: expected as many arrivals as sizes (1 to %d), got %d and %d", math.MaxInt32/2, len(arrive), len(size))
	}
	for i := range arrive {
		if !(size[i] > 0) || (i > 0 && arrive[i] < arrive[i-1]) {
			return nil, fmt.Errorf("queue model: message %d: expected a positive size and an arrival no earlier than the one before, got size %g at %g", i, size[i], arrive[i])
		}
	}
	return simulate(arrive, size, nil, policy, dist, discard)
}

// simulate is the event loop. After the given messages, more (when not
// nil) draws further arrivals, served but not measured, until every given
// message has left.
func simulate(arrive, size []float64, more func() (float64, float64), policy Policy, dist workloads.SizeDist, discard float64) (*Result, error) {
	n := len(arrive)
	d, cuts := newDiscipline(policy, size, dist)
	finish := make([]float64, n)
	t, a, done := 0.0, 0, 0
	// The next arrival: one of the given messages, then drawn ones, which
	// are numbered from n up (their completions are not recorded).
	nextT, nextS := arrive[0], size[0]
	extra := int32(n)
	for done < n {
		dt := d.next()
		// An arrival at the very instant of a completion comes after it.
		if !math.IsInf(nextT, 1) && nextT < t+dt {
			d.serve(nextT - t)
			t = nextT
			if a < n {
				d.add(int32(a), nextS)
			} else {
				d.add(extra, nextS)
				extra++
			}
			a++
			switch {
			case a < n:
				nextT, nextS = arrive[a], size[a]
			case more != nil && extra < math.MaxInt32:
				nextT, nextS = more()
			default:
				nextT = math.Inf(1)
			}
			continue
		}
		d.serve(dt)
		t += dt
		if j := d.pop(); int(j) < n {
			finish[j] = t
			done++
		}
	}
	first := int(discard * float64(n))
	res := &Result{Policy: policy, Cuts: cuts, Sizes: size[first:], Slowdowns: make([]float64, n-first)}
	for i := first; i < n; i++ {
		res.Slowdowns[i-first] = (finish[i] - arrive[i]) / size[i]
	}
	return res, nil
}

// newDiscipline builds policy's discipline and, for levels, its cuts.
func newDiscipline(p Policy, sizes []float64, dist workloads.SizeDist) (discipline, []float64) {
	switch p.Kind {
	case PS:
		return &ps{}, nil
	case SRPT:
		return &srpt{}, nil
	case FCFS:
		return &fifo{}, nil
	}
	cuts := p.Cuts
	switch {
	case cuts != nil:
	case p.Split == LogSpaced:
		lo, hi := slices.Min(sizes), slices.Max(sizes)
		if dist != nil {
			lo, hi = float64(dist.Min()), float64(dist.Max())
		}
		if p.Lo > 0 {
			lo = p.Lo
		}
		if p.Hi > 0 {
			hi = p.Hi
		}
		cuts = LogCuts(lo, hi, p.Levels)
	case p.Split == EqualMessages:
		cuts = MessageCuts(sizes, p.Levels)
	default:
		cuts = ByteCuts(sizes, p.Levels)
	}
	q := &levels{cuts: cuts, level: make([]discipline, p.Levels)}
	for i := range q.level {
		if p.Within == PS {
			q.level[i] = &ps{}
		} else {
			q.level[i] = &fifo{}
		}
	}
	return q, cuts
}

// LogCuts are the k-1 sizes equally spaced in log(size) strictly between
// lo and hi: level i holds sizes in (cuts[i-1], cuts[i]].
func LogCuts(lo, hi float64, k int) []float64 {
	cuts := make([]float64, k-1)
	for i := range cuts {
		cuts[i] = lo * math.Pow(hi/lo, float64(i+1)/float64(k))
	}
	return cuts
}

// MessageCuts are the k-1 sizes that split sizes into k equal shares of
// the messages: cuts[i] is the size at rank (i+1)/k of the sorted sizes, so
// level i holds the messages at or below it (and above cuts[i-1]).
func MessageCuts(sizes []float64, k int) []float64 {
	s := slices.Sorted(slices.Values(sizes))
	cuts := make([]float64, k-1)
	for i := range cuts {
		cuts[i] = s[max(0, (i+1)*len(s)/k-1)]
	}
	return cuts
}

// ByteCuts are the k-1 sizes that split the bytes of sizes into k equal
// shares: cuts[i] is the smallest size at or below which messages carry
// at least (i+1)/k of all bytes.
func ByteCuts(sizes []float64, k int) []float64 {
	s := slices.Sorted(slices.Values(sizes))
	total := 0.0
	for _, v := range s {
		total += v
	}
	cuts := make([]float64, 0, k-1)
	sum := 0.0
	for _, v := range s {
		sum += v
		for len(cuts) < k-1 && sum >= total*float64(len(cuts)+1)/float64(k) {
			cuts = append(cuts, v)
		}
	}
	return cuts
}
