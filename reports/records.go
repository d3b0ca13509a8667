package reports

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// sample is one completed RPC of the measure phase: what by-size statistics
// need, 32 bytes, so a million-RPC run stays small in memory.
type sample struct {
	length int64 // request bytes
	rtt    int64 // ns
	// reqOut and firstResp are the ns from the intended time to the
	// request's last byte out and to the response's first byte, as the
	// transport reported them (req_out_ns, first_resp_ns); 0 when it did not.
	reqOut, firstResp int64
}

// expRecords accumulates the measure-phase rows of one experiment.
type expRecords struct {
	name, transport string

	issued, completed, failed, inFlight int64
	warmup                              int64

	samples  []sample
	lags     []int64 // send lag (sent - intended), ns, of rows that were sent
	bytes    int64   // request + response bytes of completed RPCs
	offered  int64   // request + response bytes of every issued RPC
	reqBytes int64   // request bytes of every issued RPC
	retries  int64
	first    int64 // earliest intended_ns
	last     int64 // latest done_ns
	failures map[string]int64
}

// recordSet is everything read from rpcs.csv.
type recordSet struct {
	file  string
	exps  map[string]*expRecords
	order []string // experiment names in first-seen order
	// calib maps transport -> request length -> unloaded RTTs (ns).
	calib map[string]map[int64][]int64
	rows  int64
	empty bool // the file had not even a header
}

// maxFailureReasons bounds the distinct error strings kept per experiment.
const maxFailureReasons = 32

// failureKey turns an RPC's error message into the reason it is counted
// under: long digit runs (RPC ids, ports chosen by the kernel) become "N",
// so "homa: call 2038203913890130650 to 10.0.0.1: homa: rpc timed out" and
// every other timed-out call to 10.0.0.1 share one reason.
func failureKey(msg string) string {
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

// rpcColumns are the rpcs.csv columns reports read, by header name.
type rpcColumns struct {
	experiment, transport, phase, reqBytes, respBytes,
	intended, sent, done, rtt, status, errMsg, retries int
	reqOut, firstResp int
}

func findColumns(header []string) (rpcColumns, error) {
	idx := make(map[string]int, len(header))
	for i, h := range header {
		idx[h] = i
	}
	var missing []string
	get := func(name string, optional bool) int {
		i, ok := idx[name]
		if !ok {
			if !optional {
				missing = append(missing, name)
			}
			return -1
		}
		return i
	}
	c := rpcColumns{
		experiment: get("experiment", false),
		transport:  get("transport", false),
		phase:      get("phase", false),
		reqBytes:   get("req_bytes", false),
		respBytes:  get("resp_bytes", true),
		intended:   get("intended_ns", true),
		sent:       get("sent_ns", true),
		done:       get("done_ns", true),
		rtt:        get("rtt_ns", false),
		status:     get("status", false),
		errMsg:     get("error", true),
		retries:    get("retries", true),
		reqOut:     get("req_out_ns", true),
		firstResp:  get("first_resp_ns", true),
	}
	if len(missing) > 0 {
		return c, fmt.Errorf("rpcs.csv header lacks columns %v", missing)
	}
	return c, nil
}

// openRecords opens rpcs.csv, or rpcs.csv.gz when the plain file is absent.
func openRecords(dir string) (io.ReadCloser, string, error) {
	plain := filepath.Join(dir, "rpcs.csv")
	f, err := os.Open(plain)
	if err == nil {
		return f, plain, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("open records: %w", err)
	}
	gzName := plain + ".gz"
	f, err = os.Open(gzName)
	if err != nil {
		return nil, "", fmt.Errorf("open records: neither rpcs.csv nor rpcs.csv.gz: %w", err)
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		f.Close()
		return nil, "", fmt.Errorf("open %s: %w", gzName, err)
	}
	return gzipFile{zr, f}, gzName, nil
}

type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error { return errors.Join(g.Reader.Close(), g.f.Close()) }

// readRecords streams rpcs.csv once, keeping only compact per-RPC samples.
func readRecords(ctx context.Context, dir string) (*recordSet, error) {
	rc, name, err := openRecords(dir)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	rs := &recordSet{
		file:  filepath.Base(name),
		exps:  make(map[string]*expRecords),
		calib: make(map[string]map[int64][]int64),
	}
	r := csv.NewReader(bufio.NewReaderSize(rc, 1<<20))
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		// An empty file: a run that stopped before any RPC was recorded.
		rs.empty = true
		return rs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s header: %w", name, err)
	}
	cols, err := findColumns(header)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.FieldsPerRecord = len(header)
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		rs.rows++
		if rs.rows&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if err := rs.add(rec, cols); err != nil {
			line, _ := r.FieldPos(0)
			return nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
	}
	return rs, nil
}

func field(rec []string, i int) string {
	if i < 0 {
		return ""
	}
	return rec[i]
}

func intField(rec []string, i int, what string) (int64, error) {
	s := field(rec, i)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("column %s: %w", what, err)
	}
	return v, nil
}

// sinceIntended reads a transport time column as ns since intended: 0
// when absent or 0 (the transport did not say), an error when it lies
// outside intended..done.
func sinceIntended(rec []string, i int, what string, intended, done int64) (int64, error) {
	t, err := intField(rec, i, what)
	if err != nil || t == 0 || intended <= 0 {
		return 0, err
	}
	if t < intended || t > done {
		return 0, fmt.Errorf("column %s: %d outside intended_ns %d .. done_ns %d", what, t, intended, done)
	}
	return max(t-intended, 1), nil
}

// add folds one row into the set.
func (rs *recordSet) add(rec []string, c rpcColumns) error {
	length, err := intField(rec, c.reqBytes, "req_bytes")
	if err != nil {
		return err
	}
	rtt, err := intField(rec, c.rtt, "rtt_ns")
	if err != nil {
		return err
	}
	status := rec[c.status]
	switch rec[c.phase] {
	case "calibrate":
		if status != "completed" || rtt <= 0 {
			return nil
		}
		tr := rec[c.transport]
		m := rs.calib[tr]
		if m == nil {
			m = make(map[int64][]int64)
			rs.calib[tr] = m
		}
		m[length] = append(m[length], rtt)
		return nil
	case "warmup":
		rs.exp(rec[c.experiment], rec[c.transport]).warmup++
		return nil
	case "measure":
	default:
		return fmt.Errorf("unknown phase %q", rec[c.phase])
	}
	e := rs.exp(rec[c.experiment], rec[c.transport])
	e.issued++
	intended, err := intField(rec, c.intended, "intended_ns")
	if err != nil {
		return err
	}
	sent, err := intField(rec, c.sent, "sent_ns")
	if err != nil {
		return err
	}
	retries, err := intField(rec, c.retries, "retries")
	if err != nil {
		return err
	}
	e.retries += retries
	if resp, err := intField(rec, c.respBytes, "resp_bytes"); err != nil {
		return err
	} else {
		e.offered += length + resp
		e.reqBytes += length
	}
	if intended > 0 && (e.first == 0 || intended < e.first) {
		e.first = intended
	}
	if sent > 0 && intended > 0 {
		e.lags = append(e.lags, sent-intended)
	}
	switch status {
	case "completed":
		done, err := intField(rec, c.done, "done_ns")
		if err != nil {
			return err
		}
		resp, err := intField(rec, c.respBytes, "resp_bytes")
		if err != nil {
			return err
		}
		e.completed++
		e.bytes += length + resp
		e.last = max(e.last, done)
		x := sample{length: length, rtt: rtt}
		if x.reqOut, err = sinceIntended(rec, c.reqOut, "req_out_ns", intended, done); err != nil {
			return err
		}
		if x.firstResp, err = sinceIntended(rec, c.firstResp, "first_resp_ns", intended, done); err != nil {
			return err
		}
		e.samples = append(e.samples, x)
	case "failed":
		e.failed++
		reason := failureKey(field(rec, c.errMsg))
		if _, ok := e.failures[reason]; ok || len(e.failures) < maxFailureReasons {
			e.failures[reason]++
		} else {
			e.failures["other"]++
		}
	case "inflight":
		e.inFlight++
	default:
		return fmt.Errorf("unknown status %q", status)
	}
	return nil
}

func (rs *recordSet) exp(name, transport string) *expRecords {
	if e, ok := rs.exps[name]; ok {
		return e
	}
	e := &expRecords{name: name, transport: transport, failures: make(map[string]int64)}
	rs.exps[name] = e
	rs.order = append(rs.order, name)
	return e
}
