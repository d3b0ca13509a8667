package anatomy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"

	"github.com/homatb/homatb/rundir"
)

// ShortMaxBytes bounds the messages the summary calls short
// (rundir.IsShort).
const ShortMaxBytes = rundir.ShortMaxBytes

// Parts is one statistic of each part of the RTT, in microseconds.
type Parts struct {
	RTT          float64 `json:"rtt_us"`
	SendLag      float64 `json:"send_lag_us"`
	Host         float64 `json:"host_us"`
	Recovery     float64 `json:"recovery_us"`
	Wire         float64 `json:"wire_us"`
	Queue        float64 `json:"queue_us"`
	Switch       float64 `json:"switch_us"`
	Unattributed float64 `json:"unattributed_us"`
	// HostHOL is the part of Host spent behind bytes of the same TCP
	// connection that a switch held (rundir.Anatomy.HOLNs); it is in Host,
	// not beside it.
	HostHOL float64 `json:"host_hol_us"`
	// PreemptLag is the part of Queue spent waiting for a lower-priority
	// frame already on the link (rundir.Anatomy.PreemptNs); it is in
	// Queue, not beside it.
	PreemptLag float64 `json:"preempt_lag_us"`
	// LastHopQueue is the part of Queue at the last switch, the receiver's
	// downlink (rundir.Anatomy.LastHopQueueNs); in Queue too.
	LastHopQueue float64 `json:"last_hop_queue_us"`
}

// Summary is one experiment's anatomy of short RPCs (requests of at most
// ShortMaxBytes), as summary.json carries it.
type Summary struct {
	ShortMaxBytes int64 `json:"short_max_bytes"`
	// RPCs counts the completed short RPCs of the measurement, Joined
	// those whose records were all found.
	RPCs   int `json:"rpcs"`
	Joined int `json:"joined"`
	// Explained is the share of RPCs whose unattributed time is within
	// 20% of their RTT.
	Explained float64 `json:"explained"`
	// P50 and P99 are each part's percentiles over the RPCs (each taken on
	// its own, so they do not add up to the RTT's).
	P50 Parts `json:"p50"`
	P99 Parts `json:"p99"`
	// Median is each part's mean over the RPCs between the P40 and the P60
	// RTT: what a typical RPC is made of (these add up to their mean RTT).
	Median Parts `json:"median_mean"`
	// Tail is each part's mean over the RPCs at or above the P99 RTT: what
	// the tail is made of (these do add up to the tail's mean RTT).
	Tail     Parts `json:"tail_mean"`
	TailRPCs int   `json:"tail_rpcs"`
	// TailCause names the largest part of Tail.
	TailCause string `json:"tail_cause"`
	// PreemptionKnown says the switches kept every frame's record
	// (switch.records: all), which the preemption lag needs; with sampled
	// records PreemptLag is zero.
	PreemptionKnown bool `json:"preemption_known"`
	// HalfMaxBytes is the median request length of the experiment's
	// completed RPCs, and HalfTail each part's mean over the RPCs at or
	// below it whose RTT is at or above their P99 (HalfTailRPCs of them):
	// the shortest half's tail, whatever the short bound.
	HalfMaxBytes int64 `json:"half_max_bytes"`
	HalfTail     Parts `json:"half_tail_mean"`
	HalfTailRPCs int   `json:"half_tail_rpcs"`
}

// Experiments lists the experiments of the run in dir that have switch
// records (postcard files), sorted. A run without them (BMv2, postcards
// off, or an older run) has no anatomy.
func Experiments(dir string) ([]string, error) {
	exps, err := rundir.PostcardExperiments(dir)
	if err != nil {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	return exps, nil
}

// Rows are an experiment's completed measured RPCs as the anatomy reads
// them, so a caller can hold them in less than a whole rundir.RPC each.
type Rows interface {
	Len() int
	// At fills r with the i-th RPC: at least its columns the anatomy reads
	// (those of rundir.RPC that Joiner.Decompose and Sieve.Kept read, its
	// phase and status among them).
	At(i int, r *rundir.RPC)
}

// RPCs are Rows held whole.
type RPCs []rundir.RPC

// Len is how many RPCs there are.
func (s RPCs) Len() int { return len(s) }

// At copies the i-th RPC into r.
func (s RPCs) At(i int, r *rundir.RPC) { *r = s[i] }

// Experiment decomposes one experiment's completed measured RPCs (rows,
// its rows of rpcs.csv) with its switches' postcards in run directory dir
// and its servers' rows (served), hands each decomposed row to write in
// the order of rows, and returns the summary of its short RPCs (nil when
// it has none). Only this experiment's postcards are in memory, and only
// while it runs.
func Experiment(ctx context.Context, dir, exp string, fabric *rundir.FabricRecord, rows Rows, served []rundir.Served, write func(*rundir.Anatomy) error) (*Summary, error) {
	ix, err := Load(dir, exp)
	if err != nil {
		return nil, err
	}
	j := NewJoiner(ix, fabric, served)
	var sieve func(*rundir.RPC) bool
	if ix.Sieved() {
		s, err := SieveOf(rows)
		if err != nil {
			return nil, err
		}
		sieve = s.Kept
	}
	half := medianReq(rows)
	// The summaries read a compact row of each short or shortest-half RPC:
	// a W1 experiment's millions of whole rows were most of its memory.
	n := 0
	var r rundir.RPC
	for i := range rows.Len() {
		rows.At(i, &r)
		if rundir.IsShort(r.ReqBytes, r.RespBytes, ShortMaxBytes) || r.ReqBytes <= half {
			n++
		}
	}
	kept := make([]partsRow, 0, n)
	for i := range rows.Len() {
		if i&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rows.At(i, &r)
		var a rundir.Anatomy
		if sieve != nil && !sieve(&r) {
			a = Unsampled(&r)
		} else {
			a = j.Decompose(&r)
		}
		if err := write(&a); err != nil {
			return nil, err
		}
		var in uint8
		if rundir.IsShort(a.ReqBytes, a.RespBytes, ShortMaxBytes) {
			in |= inShort
		}
		if a.ReqBytes <= half {
			in |= inShortest
		}
		if in != 0 {
			kept = append(kept, rowOf(&a, in))
		}
	}
	s := summarize(kept, inShort)
	if s.RPCs == 0 {
		return nil, nil
	}
	s.PreemptionKnown = ix.PreemptionKnown()
	s.HalfMaxBytes = half
	s.HalfTail, s.HalfTailRPCs = tailOf(kept, inShortest)
	return s, nil
}

// medianReq is the median request length of rows (-1 when there are
// none).
func medianReq(rows Rows) int64 {
	if rows.Len() == 0 {
		return -1
	}
	l := make([]int64, rows.Len())
	var r rundir.RPC
	for i := range l {
		rows.At(i, &r)
		l[i] = r.ReqBytes
	}
	slices.Sort(l)
	return quantile(l, 0.5)
}

// Writer writes anatomy.csv a row at a time.
type Writer struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	cw   *rundir.CSVWriter[rundir.Anatomy]
}

// Create starts anatomy.csv at path (its header written), replacing any
// file there and the compressed copy an earlier report's run left
// (rundir.CompressLarge).
func Create(path string) (*Writer, error) {
	if err := os.Remove(path + rundir.ZstdExt); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	cw, err := rundir.Anatomies().NewWriter(bw, true)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("anatomy: %s: %w", path, err)
	}
	return &Writer{path: path, f: f, bw: bw, cw: cw}, nil
}

// Write appends one row.
func (w *Writer) Write(a *rundir.Anatomy) error {
	if err := w.cw.Write(a); err != nil {
		return fmt.Errorf("anatomy: %s: %w", w.path, err)
	}
	return nil
}

// Append appends the rows of b, formatted as Write formats them.
func (w *Writer) Append(b *Buffer) error {
	if err := b.cw.Flush(); err != nil {
		return fmt.Errorf("anatomy: %w", err)
	}
	if err := w.cw.Flush(); err != nil {
		return fmt.Errorf("anatomy: %s: %w", w.path, err)
	}
	if _, err := w.bw.Write(b.buf.Bytes()); err != nil {
		return fmt.Errorf("anatomy: %s: %w", w.path, err)
	}
	return nil
}

// Buffer formats rows of anatomy.csv in memory, for a Writer to append
// later: experiments decomposed at once keep their rows in the order of
// the experiments.
type Buffer struct {
	buf bytes.Buffer
	cw  *rundir.CSVWriter[rundir.Anatomy]
}

// NewBuffer returns an empty Buffer.
func NewBuffer() *Buffer {
	b := &Buffer{}
	// Without a header, NewWriter cannot fail.
	b.cw, _ = rundir.Anatomies().NewWriter(&b.buf, false)
	return b
}

// Write formats one row.
func (b *Buffer) Write(a *rundir.Anatomy) error { return b.cw.Write(a) }

// Close flushes the rows and closes the file.
func (w *Writer) Close() error {
	err := w.cw.Flush()
	if err == nil {
		err = w.bw.Flush()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("anatomy: %s: %w", w.path, err)
	}
	return nil
}

// ReadServed groups served.csv's rows of the given experiments by
// experiment, the whole file at once; a run without the file (older, or no
// server answered) has none. ServedGroups reads one experiment at a time.
func ReadServed(dir string, exps []string) (map[string][]rundir.Served, error) {
	rd, c, err := openServed(dir)
	if rd == nil || err != nil {
		return nil, err
	}
	defer c.Close()
	out := map[string][]rundir.Served{}
	var s rundir.Served
	for {
		if err := rd.Read(&s); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("anatomy: %w", err)
		}
		if slices.Contains(exps, s.Experiment) {
			out[s.Experiment] = append(out[s.Experiment], s)
		}
	}
}

// openServed opens served.csv, compressed or not (rundir.OpenRunFile);
// nil without the file.
func openServed(dir string) (*rundir.CSVReader[rundir.Served], io.Closer, error) {
	f, path, err := rundir.OpenRunFile(dir, rundir.ServedRPCs().File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, fmt.Errorf("anatomy: %w", err)
	}
	rd, err := rundir.ServedRPCs().NewReader(bufio.NewReaderSize(f, 1<<20), path)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("anatomy: %w", err)
	}
	return rd, f, nil
}

// ServedGroups reads served.csv one experiment at a time, in the order
// the run wrote them (each experiment's rows together, experiments in the
// order they ran), so only one experiment's rows are in memory.
type ServedGroups struct {
	rd    *rundir.CSVReader[rundir.Served]
	c     io.Closer
	pos   map[string]int // each experiment's place in the run's order
	asked map[string]bool
	last  int // the place of the experiment asked for last
	// strs interns the rows' strings, so a row kept does not hold on to
	// its CSV line.
	strs rundir.Strings
	next rundir.Served
	has  bool // next holds a row not yet handed out
	eof  bool
	// size is how many rows For handed out last: the next experiment's
	// start with room for as many (a sweep's experiments often have as
	// many), not growing by copying.
	size int
}

// OpenServedGroups opens served.csv of dir, whose experiments ran in
// order; without the file every experiment has no rows.
func OpenServedGroups(dir string, order []string) (*ServedGroups, error) {
	rd, c, err := openServed(dir)
	if err != nil {
		return nil, err
	}
	g := &ServedGroups{rd: rd, c: c, pos: map[string]int{}, asked: map[string]bool{}, strs: rundir.Strings{}, last: -1, eof: rd == nil}
	for i, e := range order {
		g.pos[e] = i
	}
	return g, nil
}

// For returns experiment exp's rows. Experiments must be asked for in the
// run's order (not every one need be); the rows of those skipped are
// passed over. rundir.ErrNotGrouped when exp is not in the order or the
// file's rows are not grouped in it.
func (g *ServedGroups) For(exp string) ([]rundir.Served, error) {
	at, ok := g.pos[exp]
	if !ok || at <= g.last {
		return nil, fmt.Errorf("anatomy: served.csv: %s asked for out of the run's order: %w", exp, rundir.ErrNotGrouped)
	}
	g.asked[exp], g.last = true, at
	var out []rundir.Served
	for {
		if !g.has && !g.eof {
			switch err := g.rd.Read(&g.next); {
			case errors.Is(err, io.EOF):
				g.eof = true
			case err != nil:
				return nil, fmt.Errorf("anatomy: %w", err)
			default:
				g.has = true
			}
		}
		if !g.has {
			if len(out) > 0 {
				g.size = len(out)
			}
			return out, nil
		}
		k := g.next.Experiment
		kAt, known := g.pos[k]
		switch {
		case k == exp:
			row := g.next
			row.Experiment, row.Transport, row.ServerHost = exp, g.strs.Intern(row.Transport), g.strs.Intern(row.ServerHost)
			row.Server, row.Client = g.strs.Intern(row.Server), g.strs.Intern(row.Client)
			if out == nil {
				out = make([]rundir.Served, 0, g.size)
			}
			out = append(out, row)
			g.has = false
		case !known:
			return nil, fmt.Errorf("anatomy: served.csv: experiment %s is not the run's: %w", k, rundir.ErrNotGrouped)
		case kAt > at:
			if len(out) > 0 {
				g.size = len(out)
			}
			return out, nil // exp's rows end here, or it has none
		case g.asked[k]:
			return nil, fmt.Errorf("anatomy: served.csv: experiment %s again after %s: %w", k, exp, rundir.ErrNotGrouped)
		default:
			g.has = false // an earlier experiment's, not asked for
		}
	}
}

// Close closes the file.
func (g *ServedGroups) Close() error {
	if g.c == nil {
		return nil
	}
	return g.c.Close()
}

// nParts is how many values partsOf gives.
const nParts = 11

// partsOf lists a row's RTT and parts in Parts' order.
func partsOf(a *rundir.Anatomy) [nParts]int64 {
	return [nParts]int64{a.RTTNs, a.SendLagNs, a.HostNs, a.RecoveryNs, a.WireNs, a.QueueNs, a.SwitchNs, a.UnattributedNs, a.HOLNs, a.PreemptNs, a.LastHopQueueNs}
}

func toParts(v [nParts]float64) Parts {
	return Parts{RTT: v[0], SendLag: v[1], Host: v[2], Recovery: v[3], Wire: v[4], Queue: v[5], Switch: v[6], Unattributed: v[7], HostHOL: v[8], PreemptLag: v[9], LastHopQueue: v[10]}
}

// partsRow is what the summaries read of one decomposed RPC: its RTT and
// parts (partsOf) and flags, 96 bytes where a whole rundir.Anatomy is 256.
type partsRow struct {
	v    [nParts]int64
	in   uint8 // the sets the row is in: inShort, inShortest
	full bool  // joined "full": every record of the RPC found
	// unsampled: a Sieve passed over the RPC (JoinedUnsampled), so it has
	// no parts.
	unsampled bool
}

// The sets of rows a summary is taken over.
const (
	inShort    uint8 = 1 << iota // requests and responses short (rundir.IsShort)
	inShortest                   // requests at most the median request
)

func rowOf(a *rundir.Anatomy, in uint8) partsRow {
	return partsRow{v: partsOf(a), in: in, full: a.Joined == "full", unsampled: a.Joined == JoinedUnsampled}
}

// summarize computes the summary of the rows in set in.
func summarize(rows []partsRow, in uint8) *Summary {
	s := &Summary{ShortMaxBytes: ShortMaxBytes}
	// RPCs a Sieve passed over have no parts: they count in the RTT's
	// percentiles, which place the tail and the middle fifth, and in
	// nothing else.
	explained, sampled := 0, 0
	for i := range rows {
		r := &rows[i]
		if r.in&in == 0 {
			continue
		}
		s.RPCs++
		if r.unsampled {
			continue
		}
		sampled++
		if r.full {
			s.Joined++
		}
		if rtt := r.v[0]; rtt > 0 && 5*abs(r.v[7]) <= rtt {
			explained++
		}
	}
	if s.RPCs == 0 {
		return s
	}
	s.Explained = float64(explained) / float64(max(sampled, 1))
	// Each part's percentiles, one column at a time in one buffer.
	col := make([]int64, 0, sampled)
	var p50, p99 [nParts]float64
	for k := range nParts {
		col = col[:0]
		for i := range rows {
			if rows[i].in&in != 0 && !rows[i].unsampled {
				col = append(col, rows[i].v[k])
			}
		}
		slices.Sort(col)
		p50[k], p99[k] = micros(quantile(col, 0.5)), micros(quantile(col, 0.99))
	}
	s.P50, s.P99 = toParts(p50), toParts(p99)
	// The tail: RPCs at or above the P99 RTT, by their own parts; the
	// median likewise over the middle fifth.
	rtts := rttsOf(rows, in)
	s.Tail, s.TailRPCs = meanParts(rows, in, quantile(rtts, 0.99), math.MaxInt64)
	s.Median, _ = meanParts(rows, in, quantile(rtts, 0.4), quantile(rtts, 0.6))
	s.TailCause = largest(s.Tail)
	return s
}

// rttsOf is the sorted RTTs of the rows in set in.
func rttsOf(rows []partsRow, in uint8) []int64 {
	var rtts []int64
	for i := range rows {
		if rows[i].in&in != 0 {
			rtts = append(rtts, rows[i].v[0])
		}
	}
	slices.Sort(rtts)
	return rtts
}

// tailOf is each part's mean over the rows in set in at or above their
// P99 RTT, and how many rows that is.
func tailOf(rows []partsRow, in uint8) (Parts, int) {
	return meanParts(rows, in, quantile(rttsOf(rows, in), 0.99), math.MaxInt64)
}

// meanParts is each part's mean over the sampled rows in set in whose RTT
// is in [lo, hi], and how many rows that is.
func meanParts(rows []partsRow, in uint8, lo, hi int64) (Parts, int) {
	var sum [nParts]float64
	n := 0
	for i := range rows {
		r := &rows[i]
		if r.in&in == 0 || r.v[0] < lo || r.v[0] > hi || r.unsampled {
			continue
		}
		n++
		for k, v := range r.v {
			sum[k] += float64(v)
		}
	}
	for k := range sum {
		sum[k] = micros(int64(math.Round(sum[k] / float64(max(n, 1)))))
	}
	return toParts(sum), n
}

// largest names the biggest part of p, RTT aside, with the host's time
// behind its connection's queued bytes (host_hol) apart from the rest of
// the host's.
func largest(p Parts) string {
	names := []string{"send_lag", "host", "host_hol", "recovery", "wire", "queue", "switch", "unattributed"}
	vals := []float64{p.SendLag, p.Host - p.HostHOL, p.HostHOL, p.Recovery, p.Wire, p.Queue, p.Switch, math.Abs(p.Unattributed)}
	best := 0
	for i, v := range vals {
		if v > vals[best] {
			best = i
		}
	}
	return names[best]
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[quantileIndex(len(sorted), q)]
}

// quantileIndex is the index of quantile q in a sorted sample of n > 0.
func quantileIndex(n int, q float64) int {
	return min(max(int(math.Ceil(q*float64(n)))-1, 0), n-1)
}

func micros(ns int64) float64 { return math.Round(float64(ns)/10) / 100 }

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
