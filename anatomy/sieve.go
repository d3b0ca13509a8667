package anatomy

import (
	"errors"
	"fmt"
	"io"
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
type Sieve struct {
	rows []sieveRow
	// tail is, per size class, the RTT from which a long RPC is the tail.
	tail map[int]int64
}

type sieveRow struct {
	id    uint64
	short bool
	class int // bits.Len64 of the request's and response's bytes
	rtt   int64
}

// SieveOf makes the Sieve of an experiment's completed measured RPCs.
func SieveOf(rows []rundir.RPC) *Sieve {
	s := &Sieve{}
	for i := range rows {
		s.Add(&rows[i])
	}
	s.Finish()
	return s
}

// Add counts one row of the experiment (rows of other phases and
// unfinished RPCs are passed over, as the anatomy passes over them).
func (s *Sieve) Add(r *rundir.RPC) {
	if !measured(r) || r.RPCID == 0 {
		return
	}
	s.rows = append(s.rows, sieveRow{id: r.RPCID &^ 1, short: rundir.IsShort(r.ReqBytes, r.RespBytes, ShortMaxBytes),
		class: bits.Len64(uint64(r.ReqBytes + r.RespBytes)), rtt: r.DoneNs - r.IntendedNs})
}

// Finish works out the tails; call it after the last Add.
func (s *Sieve) Finish() {
	by := map[int][]int64{}
	for _, r := range s.rows {
		if !r.short {
			by[r.class] = append(by[r.class], r.rtt)
		}
	}
	s.tail = make(map[int]int64, len(by))
	for c, rtts := range by {
		slices.Sort(rtts)
		s.tail[c] = quantile(rtts, 0.99)
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

// KeptIDs are the RPC ids (even: the client's) whose records the Sieve
// keeps.
func (s *Sieve) KeptIDs() map[uint64]bool {
	ids := map[uint64]bool{}
	for _, r := range s.rows {
		if r.short || s.keep(r.id, r.class, r.rtt) {
			ids[r.id] = true
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
	return measured(r) && s.keep(r.RPCID&^1, bits.Len64(uint64(r.ReqBytes+r.RespBytes)), r.DoneNs-r.IntendedNs)
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
	var ids map[uint64]bool
	if s != nil {
		ids = s.KeptIDs()
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
		if err := compactOne(dir, exp, sw, s != nil, ids, &st); err != nil {
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
func compactOne(dir, exp, sw string, sieve bool, ids map[uint64]bool, st *CompactStats) error {
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
			case p.Kind == switchstats.KindHoma && p.HomaType == homaData && int(p.FrameLen) > homaDataFrame && ids[p.RPCID&^1]:
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
