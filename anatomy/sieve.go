package anatomy

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/bits"
	"os"
	"slices"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
)

// SampleEvery is the sample of long RPCs a Sieve keeps besides their
// tail: one in SampleEvery, by RPC id.
const SampleEvery = 16

// JoinedUnsampled is the joined column of an anatomy.csv row whose RPC a
// Sieve passed over: its records were not kept, so it has no parts.
const JoinedUnsampled = "unsampled"

// sampled reports whether RPC id is in the sample: a fixed hash (the
// writer and every later reader must choose the same RPCs; splitmix64's
// finalizer, so ids that differ in a few bits spread).
func sampled(id uint64) bool {
	z := id&^1 + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return (z^z>>31)%SampleEvery == 0
}

// Sieve chooses an experiment's RPCs whose switch records a sampled run
// keeps, from their rows alone, so a reader of the run (Experiment)
// chooses the same ones from rpcs.csv: every short RPC (rundir.IsShort
// with ShortMaxBytes: one packet each way, and the RPCs the anatomy's
// summary is made of, so it is exact), every long RPC whose RTT is at or
// above the P99 of the long RPCs of its size (sizes in powers of two:
// the tail), and one in SampleEvery of the others by RPC id. TCP RPCs
// (RPC id 0) keep all their connections' data records: their critical
// segment may carry an earlier RPC's bytes.
//
// A Sieve sees a long experiment's rows as they are written, and the P99
// of a size class is known only after its last row, so its memory must
// not grow with the experiment: the chosen ids are a bit set (RPC ids
// are consecutive per client, so a few bits an RPC), and the long RPCs'
// RTTs, which the tails need twice (once to find each class's P99 exactly
// and once to choose the RPCs at or above it), are spilled to an unlinked
// temporary file past a bounded buffer and read back by Finish.
type Sieve struct {
	ids idSet
	// counts is the number of long RPCs per size class.
	counts map[int]int
	// long are the long RPCs not yet spilled; spill the file holding
	// the earlier ones (nil until the buffer first fills), spillAt the
	// buffer's bound (0: spillRows).
	long    []sieveRow
	spill   *os.File
	spillW  *bufio.Writer
	spillAt int
	err     error
	// tail is, per size class, the RTT from which a long RPC is the tail.
	tail map[int]int64
}

// spillRows bounds the long RPCs a Sieve holds in memory (24 B each).
const spillRows = 1 << 15

// sieveRow is a long RPC as the tails need it.
type sieveRow struct {
	id    uint64
	rtt   int64
	class int // bits.Len64 of the request's and response's bytes
}

// sieveRowLen is a spilled sieveRow's size: id, RTT, class.
const sieveRowLen = 17

// SieveOf makes the Sieve of an experiment's completed measured RPCs.
func SieveOf(rows Rows) (*Sieve, error) {
	s := &Sieve{}
	var r rundir.RPC
	for i := range rows.Len() {
		rows.At(i, &r)
		s.Add(&r)
	}
	return s, s.Finish()
}

// Add counts one row of the experiment (rows of other phases and
// unfinished RPCs are passed over, as the anatomy passes over them).
func (s *Sieve) Add(r *rundir.RPC) {
	if !measured(r) || r.RPCID == 0 {
		return
	}
	id := r.RPCID &^ 1
	if rundir.IsShort(r.ReqBytes, r.RespBytes, ShortMaxBytes) {
		s.ids.add(id)
		return
	}
	c := sizeClass(r)
	if s.counts == nil {
		s.counts = map[int]int{}
	}
	s.counts[c]++
	s.long = append(s.long, sieveRow{id: id, rtt: r.DoneNs - r.IntendedNs, class: c})
	if len(s.long) >= cmp.Or(s.spillAt, spillRows) {
		s.spillLong()
	}
}

func sizeClass(r *rundir.RPC) int { return bits.Len64(uint64(r.ReqBytes + r.RespBytes)) }

// spillLong appends the buffered long RPCs to the spill file; an error is
// kept for Finish.
func (s *Sieve) spillLong() {
	if s.err != nil {
		s.long = s.long[:0]
		return
	}
	if s.spill == nil {
		f, err := os.CreateTemp("", "homatb-sieve-*")
		if err != nil {
			s.err = fmt.Errorf("anatomy: sieve: %w", err)
			return
		}
		// Unlinked at once: nothing is left behind whatever happens.
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			s.err = fmt.Errorf("anatomy: sieve: %w", err)
			return
		}
		s.spill, s.spillW = f, bufio.NewWriter(f)
	}
	var b [sieveRowLen]byte
	for _, r := range s.long {
		binary.LittleEndian.PutUint64(b[0:], r.id)
		binary.LittleEndian.PutUint64(b[8:], uint64(r.rtt))
		b[16] = byte(r.class)
		if _, err := s.spillW.Write(b[:]); err != nil {
			s.err = fmt.Errorf("anatomy: sieve: %w", err)
			break
		}
	}
	s.long = s.long[:0]
}

// eachLong calls f with every long RPC added, the spilled ones first.
func (s *Sieve) eachLong(f func(sieveRow)) error {
	if s.spill != nil {
		if err := s.spillW.Flush(); err != nil {
			return fmt.Errorf("anatomy: sieve: %w", err)
		}
		if _, err := s.spill.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("anatomy: sieve: %w", err)
		}
		rd := bufio.NewReader(s.spill)
		var b [sieveRowLen]byte
		for {
			if _, err := io.ReadFull(rd, b[:]); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("anatomy: sieve: %w", err)
			}
			f(sieveRow{id: binary.LittleEndian.Uint64(b[0:]), rtt: int64(binary.LittleEndian.Uint64(b[8:])), class: int(b[16])})
		}
	}
	for _, r := range s.long {
		f(r)
	}
	return nil
}

// Finish works out the tails and the RPCs kept; call it once, after the
// last Add. Each class's P99 is its k-th largest RTT, k known from the
// class's count, so a min-heap of k RTTs (a hundredth of the class) finds
// it exactly in one pass; a second pass keeps the RPCs at or above it.
func (s *Sieve) Finish() error {
	defer s.Close()
	if s.err != nil {
		return s.err
	}
	heaps := make(map[int]*rttHeap, len(s.counts))
	for c, n := range s.counts {
		// quantile(sorted, 0.99) is the (n-i)-th largest.
		heaps[c] = &rttHeap{k: n - quantileIndex(n, 0.99)}
	}
	if err := s.eachLong(func(r sieveRow) { heaps[r.class].offer(r.rtt) }); err != nil {
		return err
	}
	s.tail = make(map[int]int64, len(heaps))
	for c, h := range heaps {
		s.tail[c] = h.v[0]
	}
	return s.eachLong(func(r sieveRow) {
		if s.keep(r.id, r.class, r.rtt) {
			s.ids.add(r.id)
		}
	})
}

// Close releases what Finish reads (the spill file, the buffer); Finish
// calls it, and so should an owner that abandons the Sieve unfinished.
func (s *Sieve) Close() {
	if s.spill != nil {
		s.spill.Close()
		s.spill, s.spillW = nil, nil
	}
	s.long = nil
}

// rttHeap keeps the k largest RTTs offered, smallest first (v[0]).
type rttHeap struct {
	k int
	v []int64
}

func (h *rttHeap) offer(rtt int64) {
	if len(h.v) < h.k {
		h.v = append(h.v, rtt)
		for i := len(h.v) - 1; i > 0; {
			p := (i - 1) / 2
			if h.v[p] <= h.v[i] {
				break
			}
			h.v[p], h.v[i] = h.v[i], h.v[p]
			i = p
		}
		return
	}
	if rtt <= h.v[0] {
		return
	}
	h.v[0] = rtt
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h.v) && h.v[l] < h.v[m] {
			m = l
		}
		if l+1 < len(h.v) && h.v[l+1] < h.v[m] {
			m = l + 1
		}
		if m == i {
			return
		}
		h.v[m], h.v[i] = h.v[i], h.v[m]
		i = m
	}
}

// keep reports whether the Sieve keeps a long RPC of size class c and
// RTT rtt.
func (s *Sieve) keep(id uint64, c int, rtt int64) bool {
	if t, ok := s.tail[c]; ok && rtt >= t {
		return true
	}
	return sampled(id)
}

// KeepsID reports whether the Sieve keeps the records of RPC id (either
// end's: the client's even id or the server's odd one); valid after
// Finish.
func (s *Sieve) KeepsID(id uint64) bool { return s.ids.has(id &^ 1) }

// KeptIDs are the RPC ids (even: the client's) whose records the Sieve
// keeps, ascending; valid after Finish.
func (s *Sieve) KeptIDs() []uint64 { return s.ids.list() }

// idSet is a set of even RPC ids: a bit each, in words of 64 consecutive
// ids, so a client's consecutive ids take a few bits each.
type idSet map[uint64]uint64

func (m *idSet) add(id uint64) {
	if *m == nil {
		*m = idSet{}
	}
	(*m)[id>>7] |= 1 << (id >> 1 & 63)
}

func (m idSet) has(id uint64) bool { return m[id>>7]&(1<<(id>>1&63)) != 0 }

func (m idSet) list() []uint64 {
	var ids []uint64
	for _, w := range slices.Sorted(maps.Keys(m)) {
		for b := m[w]; b != 0; b &= b - 1 {
			ids = append(ids, w<<7|uint64(bits.TrailingZeros64(b))<<1)
		}
	}
	return ids
}

// measured reports whether r is a completed RPC of the measurement.
func measured(r *rundir.RPC) bool {
	return r.Phase == rundir.PhaseMeasure && r.Status == rundir.StatusCompleted
}

// Kept reports whether the Sieve keeps r's records.
func (s *Sieve) Kept(r *rundir.RPC) bool {
	if r.RPCID == 0 || rundir.IsShort(r.ReqBytes, r.RespBytes, ShortMaxBytes) {
		return true
	}
	return measured(r) && s.keep(r.RPCID&^1, sizeClass(r), r.DoneNs-r.IntendedNs)
}

// Unsampled is the anatomy.csv row of an RPC whose records a Sieve did not
// keep.
func Unsampled(r *rundir.RPC) rundir.Anatomy {
	return rundir.Anatomy{Experiment: r.Experiment, Transport: r.Transport, Client: r.Client, Server: r.Server,
		RPCID: r.RPCID, ReqBytes: r.ReqBytes, RespBytes: r.RespBytes, RTTNs: r.RTTNs, SendLagNs: r.SentNs - r.IntendedNs,
		Joined: JoinedUnsampled}
}

// CompactStats counts what Compact read and kept.
type CompactStats struct {
	Read, Kept          uint64
	RawBytes, ZstdBytes int64
}

// Compact compresses every switch's records of experiment exp in run
// directory dir (PostcardsPath) into PostcardsPath+ZstdExt and removes the
// plain files. With a Sieve (records: sampled) it keeps only the records
// the anatomy reads of the RPCs the Sieve keeps: their Homa DATA packets,
// TCP segments with data, and of each TCP direction the segment without
// data that arrived first (its SYN, which places the stream); the files
// are then marked switchstats.PostcardSieved. Without one it keeps all.
func Compact(dir, exp string, s *Sieve) (CompactStats, error) {
	var st CompactStats
	switches, err := rundir.PostcardSwitches(dir, exp)
	if err != nil {
		return st, fmt.Errorf("anatomy: %w", err)
	}
	for _, sw := range switches {
		raw := rundir.PostcardsPath(dir, exp, sw)
		fi, err := os.Stat(raw)
		if errors.Is(err, os.ErrNotExist) {
			continue // compressed already
		} else if err != nil {
			return st, fmt.Errorf("anatomy: %w", err)
		}
		st.RawBytes += fi.Size()
		if err := compactOne(dir, exp, sw, s, &st); err != nil {
			return st, err
		}
		if fi, err := os.Stat(raw + rundir.ZstdExt); err == nil {
			st.ZstdBytes += fi.Size()
		}
		if err := os.Remove(raw); err != nil {
			return st, fmt.Errorf("anatomy: %w", err)
		}
	}
	return st, nil
}

// compactOne writes one switch's kept records compressed.
func compactOne(dir, exp, sw string, s *Sieve, st *CompactStats) error {
	sieve := s != nil
	pr, c, err := rundir.OpenPostcards(dir, exp, sw)
	if err != nil {
		return fmt.Errorf("anatomy: %w", err)
	}
	defer c.Close()
	var flags uint8
	if sieve {
		flags = switchstats.PostcardSieved
	}
	w, err := rundir.CreatePostcards(dir, exp, sw, pr.EpochNs, flags|pr.Flags)
	if err != nil {
		return fmt.Errorf("anatomy: %w", err)
	}
	// syns: per TCP direction the segment without data that arrived
	// first, written after the rest (Add takes the earliest, wherever it
	// stands in the file).
	syns := map[flowKey]rundir.Postcard{}
	var synOrder []flowKey
	var p rundir.Postcard
	for {
		err := pr.Next(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.Close()
			return fmt.Errorf("anatomy: switch %s: %w", sw, err)
		}
		st.Read++
		if sieve {
			switch {
			case p.Kind == switchstats.KindTCP && p.PayloadLen == 0:
				k := flowKey{src: p.SrcIP, dst: p.DstIP, srcPort: p.SrcPort, dstPort: p.DstPort}
				if old, ok := syns[k]; !ok || p.ArrivalNs < old.ArrivalNs {
					if !ok {
						synOrder = append(synOrder, k)
					}
					syns[k] = p
				}
				continue
			case p.Kind == switchstats.KindTCP:
			case p.Kind == switchstats.KindHoma && p.HomaType == homaData && int(p.FrameLen) > homaDataFrame && s.KeepsID(p.RPCID):
			default:
				continue
			}
		}
		st.Kept++
		w.Write(&p)
	}
	for _, k := range synOrder {
		p := syns[k]
		st.Kept++
		w.Write(&p)
	}
	return w.Close()
}
