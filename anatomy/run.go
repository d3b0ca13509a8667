package anatomy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/homatb/homatb/runfmt"
)

// ShortMaxBytes bounds the messages the summary calls short
// (runfmt.IsShort).
const ShortMaxBytes = runfmt.ShortMaxBytes

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
	// connection that a switch held (runfmt.Anatomy.HOLNs); it is in Host,
	// not beside it.
	HostHOL float64 `json:"host_hol_us"`
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
}

// Result is a run's anatomy: a row per completed measured RPC of every
// experiment with switch records, and each such experiment's summary.
type Result struct {
	Rows      []runfmt.Anatomy
	Summaries map[string]*Summary
}

// Analyse decomposes every completed measured RPC of the run in dir whose
// experiment has switch records. A run without records (BMv2, postcards
// off, or an older run) has no anatomy: nil.
func Analyse(ctx context.Context, dir string, fabric *runfmt.Fabric) (*Result, error) {
	if fabric == nil {
		return nil, nil
	}
	exps, err := experimentsWithRecords(dir)
	if err != nil || len(exps) == 0 {
		return nil, err
	}
	rows, err := readRPCs(ctx, dir, exps)
	if err != nil {
		return nil, err
	}
	served, err := readServed(dir, exps)
	if err != nil {
		return nil, err
	}
	res := &Result{Summaries: map[string]*Summary{}}
	for _, exp := range exps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ix, err := Load(dir, exp)
		if err != nil {
			return nil, err
		}
		j := NewJoiner(ix, fabric, served[exp])
		var short []runfmt.Anatomy
		for i := range rows[exp] {
			a := j.Decompose(&rows[exp][i])
			res.Rows = append(res.Rows, a)
			if runfmt.IsShort(a.ReqBytes, a.RespBytes, ShortMaxBytes) {
				short = append(short, a)
			}
		}
		if len(short) > 0 {
			res.Summaries[exp] = Summarize(short)
		}
	}
	return res, nil
}

// WriteCSV writes rows as anatomy.csv at path.
func WriteCSV(path string, rows []runfmt.Anatomy) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("anatomy: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	cw, err := runfmt.Anatomies().NewWriter(bw, true)
	if err == nil {
		for i := range rows {
			if err = cw.Write(&rows[i]); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = cw.Flush()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("anatomy: %s: %w", path, err)
	}
	return nil
}

// experimentsWithRecords lists the experiments with postcard files.
func experimentsWithRecords(dir string) ([]string, error) {
	files, err := filepath.Glob(runfmt.PostcardsPath(dir, "*", "*"))
	if err != nil {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	var exps []string
	for _, f := range files {
		if exp := filepath.Base(filepath.Dir(f)); !slices.Contains(exps, exp) {
			exps = append(exps, exp)
		}
	}
	slices.Sort(exps)
	return exps, nil
}

// readRPCs keeps the completed measured rows of the given experiments.
func readRPCs(ctx context.Context, dir string, exps []string) (map[string][]runfmt.RPC, error) {
	rc, name, err := runfmt.OpenRPCs(dir)
	if err != nil {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	defer rc.Close()
	rd, err := runfmt.RPCs().NewReader(bufio.NewReaderSize(rc, 1<<20), name)
	if err != nil {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	out := map[string][]runfmt.RPC{}
	var r runfmt.RPC
	for n := 0; ; n++ {
		if err := rd.Read(&r); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("anatomy: %w", err)
		}
		if n&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if r.Phase == runfmt.PhaseMeasure && r.Status == runfmt.StatusCompleted && slices.Contains(exps, r.Experiment) {
			out[r.Experiment] = append(out[r.Experiment], r)
		}
	}
}

// readServed groups served.csv's rows by experiment; a run without the
// file (older, or no server answered) has none.
func readServed(dir string, exps []string) (map[string][]runfmt.Served, error) {
	path := filepath.Join(dir, runfmt.ServedRPCs().File)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	defer f.Close()
	rd, err := runfmt.ServedRPCs().NewReader(bufio.NewReaderSize(f, 1<<20), path)
	if err != nil {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	out := map[string][]runfmt.Served{}
	var s runfmt.Served
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

// nParts is how many values partsOf gives.
const nParts = 9

// partsOf lists a row's RTT and parts in Parts' order.
func partsOf(a *runfmt.Anatomy) [nParts]int64 {
	return [nParts]int64{a.RTTNs, a.SendLagNs, a.HostNs, a.RecoveryNs, a.WireNs, a.QueueNs, a.SwitchNs, a.UnattributedNs, a.HOLNs}
}

func toParts(v [nParts]float64) Parts {
	return Parts{RTT: v[0], SendLag: v[1], Host: v[2], Recovery: v[3], Wire: v[4], Queue: v[5], Switch: v[6], Unattributed: v[7], HostHOL: v[8]}
}

// Summarize computes the summary of rows (one experiment's short RPCs).
func Summarize(rows []runfmt.Anatomy) *Summary {
	s := &Summary{ShortMaxBytes: ShortMaxBytes, RPCs: len(rows)}
	if len(rows) == 0 {
		return s
	}
	explained := 0
	cols := make([][]int64, nParts)
	for i := range rows {
		a := &rows[i]
		if a.Joined == "full" {
			s.Joined++
		}
		if a.RTTNs > 0 && 5*abs(a.UnattributedNs) <= a.RTTNs {
			explained++
		}
		for k, v := range partsOf(a) {
			cols[k] = append(cols[k], v)
		}
	}
	s.Explained = float64(explained) / float64(len(rows))
	var p50, p99 [nParts]float64
	for k := range cols {
		slices.Sort(cols[k])
		p50[k], p99[k] = micros(quantile(cols[k], 0.5)), micros(quantile(cols[k], 0.99))
	}
	s.P50, s.P99 = toParts(p50), toParts(p99)
	// The tail: RPCs at or above the P99 RTT, by their own parts; the
	// median likewise over the middle fifth.
	s.Tail, s.TailRPCs = meanParts(rows, quantile(cols[0], 0.99), math.MaxInt64)
	s.Median, _ = meanParts(rows, quantile(cols[0], 0.4), quantile(cols[0], 0.6))
	s.TailCause = largest(s.Tail)
	return s
}

// meanParts is each part's mean over the rows whose RTT is in [lo, hi],
// and how many rows that is.
func meanParts(rows []runfmt.Anatomy, lo, hi int64) (Parts, int) {
	var sum [nParts]float64
	n := 0
	for i := range rows {
		if rows[i].RTTNs < lo || rows[i].RTTNs > hi {
			continue
		}
		n++
		for k, v := range partsOf(&rows[i]) {
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
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func micros(ns int64) float64 { return math.Round(float64(ns)/10) / 100 }

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
