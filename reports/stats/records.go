package stats

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/homatb/homatb/rundir"
)

// sample is one completed RPC of the measure phase: what by-size statistics
// need, 40 bytes, so a million-RPC run stays small in memory.
type sample struct {
	length int64 // request bytes
	rtt    int64 // ns
	// reqOut and firstResp are the ns from the intended time to the
	// request's last byte out and to the response's first byte, as the
	// transport reported them (req_out_ns, first_resp_ns); 0 when it did not.
	reqOut, firstResp int64
	resp              int32  // response bytes
	client            uint16 // index into the experiment's clients
	// links is how many links the request crosses to its server (0:
	// unknown); the response crosses as many back.
	links uint8
}

// calibPoint is one transport's calibration RPCs of one request length.
type calibPoint struct {
	rtts  []int64 // ns
	resp  int64   // response bytes (of the last row; they are all the same)
	links uint8
}

// ExpRecords accumulates the measure-phase rows of one experiment.
type ExpRecords struct {
	Name, transport string
	// of is the experiment a part of a shared one belongs to (PartName).
	of string

	Issued, completed, failed, inFlight int64
	warmup                              int64

	Samples  []sample
	lags     []int64 // send lag (sent - intended), ns, of rows that were sent
	bytes    int64   // request + response bytes of completed RPCs
	offered  int64   // request + response bytes of every issued RPC
	reqBytes int64   // request bytes of every issued RPC
	retries  int64
	first    int64 // earliest intended_ns
	last     int64 // latest done_ns
	Failures map[string]int64
	clients  []string // client hosts, in first-seen order
	// clientOf and serverOf are the indexes of clients and servers by
	// name: a search of the slices was O(hosts) a record, hours for the
	// 134 million records of an 8,192-host collective.
	clientOf, serverOf map[string]uint16
	// spans are every measured RPC's issue and end, for the backlog and
	// the receivers' load; servers the server hosts they index.
	spans   []span
	servers []string
	// steps are the collectives' step messages, kept out of samples;
	// flows the connection matrices' rows, kept out of them too.
	steps rundir.Steps
	flows []rundir.RPC
	// flowLinks are the links between each flow's hosts (0: unknown).
	flowLinks []uint8
	// anat holds the completed measured rows the latency anatomy joins
	// (only the columns it reads), for an experiment with switch records.
	anat []anatRow
}

// anatRow is a completed measured RPC as the latency anatomy reads it:
// 128 bytes where a whole rundir.RPC is 360, one per RPC of an
// experiment with switch records.
type anatRow struct {
	client, server, local            string // interned
	rpcID                            uint64
	reqBytes, respBytes              int64
	rtt, intended, sent, done        int64
	reqOffset, respOffset, recovered int64
}

// anatRows are an experiment's anatRows as anatomy.Rows.
type anatRows struct {
	exp, transport string
	rows           []anatRow
}

// Len is how many rows there are.
func (a anatRows) Len() int { return len(a.rows) }

// At fills r with row i: its phase and status are the measurement's and
// completed, as every row kept is.
func (a anatRows) At(i int, r *rundir.RPC) {
	x := &a.rows[i]
	*r = rundir.RPC{Experiment: a.exp, Transport: a.transport, Phase: rundir.PhaseMeasure, Status: rundir.StatusCompleted,
		Client: x.client, Server: x.server, Local: x.local, RPCID: x.rpcID, ReqBytes: x.reqBytes, RespBytes: x.respBytes,
		RTTNs: x.rtt, IntendedNs: x.intended, SentNs: x.sent, DoneNs: x.done,
		ReqOffset: x.reqOffset, RespOffset: x.respOffset, RecoveryFromNs: x.recovered}
}

// RecordSet is everything read from rpcs.csv.
type RecordSet struct {
	file  string
	Exps  map[string]*ExpRecords
	order []string // experiment names in first-seen order
	// Calib maps transport -> request length -> its calibration RPCs.
	Calib map[string]map[int64]*calibPoint
	// switchOf maps host names and addresses to their switch (from the
	// manifest's fabric), so each RPC knows how many links it crosses.
	switchOf map[string]string
	fabric   *rundir.FabricRecord
	rows     int64
	empty    bool // the file had not even a header
	// anatomy says which experiments the latency anatomy joins (those with
	// switch records); their completed measured rows are kept in anat.
	anatomy func(experiment string) bool
	// strs interns the host and address strings of the rows kept, so they
	// do not hold on to their CSV lines.
	strs rundir.Strings
	// sizes are the lengths of the last experiment handed on whole: the
	// next one's slices start with room for as many (a sweep's next
	// experiment is often the same workload over another transport), so
	// they seldom grow by copying.
	sizes expSizes
}

// expSizes are the lengths of an experiment's per-RPC slices.
type expSizes struct{ samples, lags, spans, anat int }

// maxFailureReasons bounds the distinct error strings kept per experiment.
const maxFailureReasons = 32

// FailureKey turns an RPC's error message into the reason it is counted
// under: long digit runs (RPC ids, ports chosen by the kernel) become "N",
// so "homa: call 2038203913890130650 to 10.0.0.1: homa: rpc timed out" and
// every other timed-out call to 10.0.0.1 share one reason.
func FailureKey(msg string) string {
	if msg == "" {
		return "unspecified"
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		j := i
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		switch {
		case j-i >= 5:
			b.WriteByte('N')
			i = j
		case j > i:
			b.WriteString(msg[i:j])
			i = j
		default:
			b.WriteByte(msg[i])
			i++
		}
	}
	return b.String()
}

// OpenRecords opens rpcs.csv, or rpcs.csv.gz when the plain file is absent.
func OpenRecords(dir string) (io.ReadCloser, string, error) { return rundir.OpenRPCs(dir) }

// ReadRecords streams rpcs.csv once, keeping only compact per-RPC samples.
// fabric, when known, tells each RPC's path length; anatomy, when not nil,
// picks the experiments whose rows the latency anatomy needs.
//
// With done nil every experiment's records stay in the set. Otherwise done
// gets each experiment as soon as its rows end, and the set drops it: only
// one experiment's records are in memory at a time. That needs the file as
// runs write it, calibration first and each experiment's rows together;
// anything else is rundir.ErrNotGrouped, and the caller reads again with
// done nil.
func ReadRecords(ctx context.Context, dir string, fabric *rundir.FabricRecord, anatomy func(string) bool, done func(*RecordSet, *ExpRecords) error) (*RecordSet, error) {
	return ReadRecordsSplit(ctx, dir, fabric, anatomy, nil, done)
}

// ReadRecordsSplit is ReadRecords with shared experiments split: split,
// when not nil, gives the transports of each experiment that ran several
// at once (nil for the others), and each transport's rows make an
// experiment of their own (PartName), done in that order.
func ReadRecordsSplit(ctx context.Context, dir string, fabric *rundir.FabricRecord, anatomy func(string) bool, split func(string) []string, done func(*RecordSet, *ExpRecords) error) (*RecordSet, error) {
	rc, name, err := OpenRecords(dir)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	rs := &RecordSet{
		file:    filepath.Base(name),
		Exps:    make(map[string]*ExpRecords),
		Calib:   make(map[string]map[int64]*calibPoint),
		anatomy: anatomy,
		strs:    rundir.Strings{},
	}
	if fabric != nil {
		rs.fabric, rs.switchOf = fabric, fabric.SwitchOf()
	}
	var current string
	finished := map[string]bool{}
	finish := func() error {
		if current == "" {
			return nil
		}
		finished[current] = true
		if split != nil && split(current) != nil {
			for _, tr := range split(current) {
				if e := rs.Exps[PartName(current, tr)]; e != nil {
					delete(rs.Exps, e.Name)
					if err := done(rs, e); err != nil {
						return err
					}
				}
			}
			return nil
		}
		e := rs.Exps[current]
		delete(rs.Exps, current)
		if e != nil {
			rs.sizes = expSizes{len(e.Samples), len(e.lags), len(e.spans), len(e.anat)}
		}
		return done(rs, e)
	}
	r, err := rundir.RPCs().NewReader(bufio.NewReaderSize(rc, 1<<20), name)
	if err != nil {
		return nil, err
	}
	// An empty file: a run that stopped before any RPC was recorded.
	rs.empty = r.Empty()
	var rec rundir.RPC
	for {
		if err := r.Read(&rec); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		rs.rows++
		if rs.rows&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if done != nil {
			switch {
			case rec.Phase == rundir.PhaseCalibrate && (current != "" || len(finished) > 0):
				return nil, fmt.Errorf("%s row %d: a calibration row after experiment %s's: %w", name, rs.rows, current, rundir.ErrNotGrouped)
			case rec.Phase == rundir.PhaseCalibrate || rec.Experiment == current:
			case finished[rec.Experiment]:
				return nil, fmt.Errorf("%s row %d: experiment %s again after %s: %w", name, rs.rows, rec.Experiment, current, rundir.ErrNotGrouped)
			default:
				if err := finish(); err != nil {
					return nil, err
				}
				current = rec.Experiment
			}
		}
		if split != nil && rec.Phase != rundir.PhaseCalibrate && split(rec.Experiment) != nil {
			rs.exp(PartName(rec.Experiment, rec.Transport), rec.Transport).of = rec.Experiment
			rec.Experiment = PartName(rec.Experiment, rec.Transport)
		}
		if err := rs.add(&rec); err != nil {
			return nil, fmt.Errorf("%s row %d: %w", name, rs.rows, err)
		}
	}
	if done != nil {
		if err := finish(); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// anatomyRow is the part of rec the latency anatomy reads
// (anatomy.Joiner.Decompose), its strings interned.
func (rs *RecordSet) anatomyRow(rec *rundir.RPC) anatRow {
	return anatRow{client: rs.strs.Intern(rec.Client), server: rs.strs.Intern(rec.Server), local: rs.strs.Intern(rec.Local),
		rpcID: rec.RPCID, reqBytes: rec.ReqBytes, respBytes: rec.RespBytes, rtt: rec.RTTNs,
		intended: rec.IntendedNs, sent: rec.SentNs, done: rec.DoneNs,
		reqOffset: rec.ReqOffset, respOffset: rec.RespOffset, recovered: rec.RecoveryFromNs}
}

// sinceIntended turns a transport time into ns since intended: 0 when the
// transport did not say, an error when it lies outside intended..done.
func sinceIntended(t int64, what string, intended, done int64) (int64, error) {
	if t == 0 || intended <= 0 {
		return 0, nil
	}
	if t < intended || t > done {
		return 0, fmt.Errorf("column %s: %d outside intended_ns %d .. done_ns %d", what, t, intended, done)
	}
	return max(t-intended, 1), nil
}

// add folds one row into the set.
func (rs *RecordSet) add(rec *rundir.RPC) error {
	length, rtt := rec.ReqBytes, rec.RTTNs
	switch rec.Phase {
	case rundir.PhaseCalibrate:
		if rec.Status != rundir.StatusCompleted || rtt <= 0 {
			return nil
		}
		m := rs.Calib[rec.Transport]
		if m == nil {
			m = make(map[int64]*calibPoint)
			rs.Calib[rec.Transport] = m
		}
		p := m[length]
		if p == nil {
			p = &calibPoint{}
			m[length] = p
		}
		p.rtts = append(p.rtts, rtt)
		p.resp, p.links = rec.RespBytes, rs.links(rec)
		return nil
	case rundir.PhaseWarmup:
		rs.exp(rec.Experiment, rec.Transport).warmup++
		return nil
	case rundir.PhaseMeasure:
	default:
		return fmt.Errorf("unknown phase %q", rec.Phase)
	}
	e := rs.exp(rec.Experiment, rec.Transport)
	e.Issued++
	intended := rec.IntendedNs
	e.retries += rec.Retries
	e.offered += length + rec.RespBytes
	e.reqBytes += length
	if intended > 0 && (e.first == 0 || intended < e.first) {
		e.first = intended
	}
	if rec.SentNs > 0 && intended > 0 {
		e.lags = append(e.lags, rec.SentNs-intended)
	}
	if rec.Matrix != "" {
		e.flows = append(e.flows, *rec)
		e.flowLinks = append(e.flowLinks, rs.links(rec))
	}
	if rec.ServerHost != "" {
		bytes := length + rec.RespBytes
		if bytes < 0 || bytes > maxSpanBytes {
			return fmt.Errorf("req_bytes %d and resp_bytes %d: want 0 to %d together", length, rec.RespBytes, int64(maxSpanBytes))
		}
		issued, done := cmp.Or(intended, rec.SentNs), int64(0)
		if rec.Status != rundir.StatusInflight {
			// A failed RPC the records give no end leaves the backlog
			// when it is issued: when it failed is not known.
			done = cmp.Or(rec.DoneNs, issued)
		}
		server := indexOf(&e.servers, &e.serverOf, rs.strs.Intern(rec.ServerHost))
		e.spans = append(e.spans, newSpan(issued, done, bytes, server, rec.Status == rundir.StatusCompleted))
	}
	if rec.Collective != "" {
		if err := e.steps.Add(rec); err != nil {
			return err
		}
	}
	switch rec.Status {
	case rundir.StatusCompleted:
		done := rec.DoneNs
		e.completed++
		e.bytes += length + rec.RespBytes
		e.last = max(e.last, done)
		x := sample{length: length, rtt: rtt, resp: int32(min(rec.RespBytes, math.MaxInt32)), links: rs.links(rec),
			client: e.clientIndex(rec.Client)}
		var err error
		if x.reqOut, err = sinceIntended(rec.ReqOutNs, "req_out_ns", intended, done); err != nil {
			return err
		}
		if x.firstResp, err = sinceIntended(rec.FirstRespNs, "first_resp_ns", intended, done); err != nil {
			return err
		}
		if rec.Collective == "" && rec.Matrix == "" {
			e.Samples = append(e.Samples, x)
		}
		if rs.anatomy != nil && rs.anatomy(cmp.Or(e.of, e.Name)) {
			e.anat = append(e.anat, rs.anatomyRow(rec))
		}
	case rundir.StatusFailed:
		e.failed++
		reason := rec.Reason
		if reason == "" { // runs from before the reason column
			reason = FailureKey(rec.Error)
		}
		if _, ok := e.Failures[reason]; ok || len(e.Failures) < maxFailureReasons {
			e.Failures[reason]++
		} else {
			e.Failures["other"]++
		}
	case rundir.StatusInflight:
		e.inFlight++
	default:
		return fmt.Errorf("unknown status %q", rec.Status)
	}
	return nil
}

// links is how many links the RPC's request crosses, 0 when unknown.
func (rs *RecordSet) links(rec *rundir.RPC) uint8 {
	if rs.fabric == nil {
		return 0
	}
	server, _, _ := strings.Cut(rec.Server, ":")
	return uint8(rs.fabric.LinksBetween(rs.switchOf[rec.Client], rs.switchOf[server]))
}

// clientIndex returns the index of a client host in e.clients, adding it
// when new; past 65,535 clients every further one shares the last index.
func (e *ExpRecords) clientIndex(host string) uint16 { return indexOf(&e.clients, &e.clientOf, host) }

// indexOf is host's index in hosts, appended when new (hosts holds at
// most MaxUint16 - 1 names; later ones share the last index); of indexes
// hosts by name.
func indexOf(hosts *[]string, of *map[string]uint16, host string) uint16 {
	if i, ok := (*of)[host]; ok {
		return i
	}
	if len(*hosts) == math.MaxUint16 {
		return math.MaxUint16 - 1
	}
	if *of == nil {
		*of = map[string]uint16{}
	}
	*hosts = append(*hosts, host)
	i := uint16(len(*hosts) - 1)
	(*of)[host] = i
	return i
}

func (rs *RecordSet) exp(name, transport string) *ExpRecords {
	if e, ok := rs.Exps[name]; ok {
		return e
	}
	z := rs.sizes
	e := &ExpRecords{Name: rs.strs.Intern(name), transport: rs.strs.Intern(transport), Failures: make(map[string]int64),
		Samples: make([]sample, 0, z.samples), lags: make([]int64, 0, z.lags), spans: make([]span, 0, z.spans)}
	if rs.anatomy != nil && rs.anatomy(name) {
		e.anat = make([]anatRow, 0, z.anat)
	}
	rs.Exps[name] = e
	rs.order = append(rs.order, e.Name)
	return e
}
