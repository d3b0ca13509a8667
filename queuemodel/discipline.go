package queuemodel

import "math"

// A discipline decides which jobs one link of rate 1 (a byte of work per
// unit of time) serves. The event loop in Run calls it in three ways: a job
// arrives (add), time passes while nothing arrives (serve), and the next
// job completes (pop). Work and time are both in bytes at the link rate.
type discipline interface {
	// add queues job j with size bytes of work at the current time.
	add(j int32, size float64)
	// next is the time until the next completion if nothing arrives
	// (+Inf when empty).
	next() float64
	// serve advances time by dt, no more than next().
	serve(dt float64)
	// pop removes and returns the job that completes now (next() was 0,
	// or dt equal to it was just served).
	pop() int32
	// len is the number of jobs in the system.
	len() int
}

// fifo serves the oldest job alone: first come, first served.
type fifo struct {
	jobs []int32
	rem  []float64 // remaining work, parallel to jobs
	head int
}

func (q *fifo) add(j int32, size float64) {
	q.jobs = append(q.jobs, j)
	q.rem = append(q.rem, size)
}

func (q *fifo) next() float64 {
	if q.head == len(q.jobs) {
		return math.Inf(1)
	}
	return q.rem[q.head]
}

func (q *fifo) serve(dt float64) {
	if q.head < len(q.jobs) {
		q.rem[q.head] -= dt
	}
}

func (q *fifo) pop() int32 {
	j := q.jobs[q.head]
	q.head++
	// Compact once the served prefix is most of the slice, so memory stays
	// bounded by the queue's peak rather than the run's length.
	if q.head > 1024 && q.head*2 > len(q.jobs) {
		n := copy(q.jobs, q.jobs[q.head:])
		copy(q.rem, q.rem[q.head:])
		q.jobs, q.rem, q.head = q.jobs[:n], q.rem[:n], 0
	}
	return j
}

func (q *fifo) len() int { return len(q.jobs) - q.head }

// ps is processor sharing: each of the n jobs present is served at rate
// 1/n. It keeps the virtual time v, the service every present job has
// received since time zero would have had (dv/dt = 1/n), so a job arriving
// at virtual time v with size s completes when v reaches v+s: the job with
// the smallest such tag leaves first, and the tags never change.
type ps struct {
	v    float64
	tags minHeap
}

func (q *ps) add(j int32, size float64) { q.tags.push(item{key: q.v + size, job: j}) }

func (q *ps) next() float64 {
	if len(q.tags) == 0 {
		return math.Inf(1)
	}
	return math.Max(0, q.tags[0].key-q.v) * float64(len(q.tags))
}

func (q *ps) serve(dt float64) {
	if n := len(q.tags); n > 0 {
		q.v += dt / float64(n)
	}
}

func (q *ps) pop() int32 {
	it := q.tags.pop()
	// Snap to the tag: rounding in v must not make the next job's share
	// start from a virtual time past its own completion.
	q.v = math.Max(q.v, it.key)
	return it.job
}

func (q *ps) len() int { return len(q.tags) }

// srpt serves the job with the least remaining work, preempting on
// arrival (ties: the earlier arrival). Only the job in service loses work,
// and it stays the minimum, so the heap never needs fixing after serve.
type srpt struct{ rem minHeap }

func (q *srpt) add(j int32, size float64) { q.rem.push(item{key: size, job: j}) }

func (q *srpt) next() float64 {
	if len(q.rem) == 0 {
		return math.Inf(1)
	}
	return math.Max(0, q.rem[0].key)
}

func (q *srpt) serve(dt float64) {
	if len(q.rem) > 0 {
		q.rem[0].key -= dt
	}
}

func (q *srpt) pop() int32 { return q.rem.pop().job }

func (q *srpt) len() int { return len(q.rem) }

// levels is k strict-priority levels: a job's level is given by its size
// (cuts[i] is the largest size of level i; level 0 is the highest), the
// highest non-empty level is served alone, preempting lower ones, and
// each level orders its own jobs by its own discipline.
type levels struct {
	cuts  []float64
	level []discipline
	// cur is the level the last next() found; serve and pop act on it.
	cur int
}

func (q *levels) add(j int32, size float64) {
	i := 0
	for i < len(q.cuts) && size > q.cuts[i] {
		i++
	}
	q.level[i].add(j, size)
}

func (q *levels) next() float64 {
	for i, l := range q.level {
		if l.len() > 0 {
			q.cur = i
			return l.next()
		}
	}
	return math.Inf(1)
}

func (q *levels) serve(dt float64) {
	if q.next() < math.Inf(1) {
		q.level[q.cur].serve(dt)
	}
}

func (q *levels) pop() int32 {
	q.next()
	return q.level[q.cur].pop()
}

func (q *levels) len() int {
	n := 0
	for _, l := range q.level {
		n += l.len()
	}
	return n
}

// item is a job in a heap, ordered by key and then by job number, which is
// the arrival order: ties go to the earlier arrival, deterministically.
type item struct {
	key float64
	job int32
}

func (a item) less(b item) bool { return a.key < b.key || (a.key == b.key && a.job < b.job) }

// minHeap is a binary min-heap of items.
type minHeap []item

func (h *minHeap) push(it item) {
	*h = append(*h, it)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *minHeap) pop() item {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	i := 0
	for {
		l, m := 2*i+1, i
		if l < len(s) && s[l].less(s[m]) {
			m = l
		}
		if r := l + 1; r < len(s) && s[r].less(s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
