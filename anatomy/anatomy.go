// Package anatomy joins the switches' per-packet records (postcards, see
// runfmt.Postcard) to the RPCs of rpcs.csv, to tell the switch's share of
// an RPC's latency from the hosts'. This first piece covers single-packet
// Homa requests: it finds the request's DATA packet at every switch it
// crossed and reports its queueing there.
package anatomy

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/runfmt"
)

// Hop is one switch's handling of a packet.
type Hop struct {
	Switch string
	// ArrivalNs and DequeueNs are Unix nanoseconds (the record's clock
	// placed by its file's origin).
	ArrivalNs, DequeueNs int64
	// QueueNs is the packet's wait in the switch: dequeue minus enqueue.
	QueueNs    int64
	EgressPort uint16
	Queue      uint8
}

// Match is the switch side of one request.
type Match struct {
	RPCID uint64
	Hops  []Hop // in arrival order
	// QueueNs is the request packet's queueing summed over its hops.
	QueueNs int64
	// ByTime says the request was matched by its server and time window
	// rather than by its RPC id (rpcs.csv has no id column yet).
	ByTime bool
}

// request is what the index keeps of one client's Homa request: the DATA
// packets it sent, by the sender id the client gave the RPC.
type request struct {
	server  netip.AddrPort
	offsets []uint32 // distinct DATA offsets seen; one for a single-packet message
	hops    []Hop
}

// Index holds the Homa request DATA packets of an experiment's postcards.
type Index struct {
	byID     map[uint64]*request
	byServer map[netip.AddrPort][]uint64 // request ids in first-arrival order
}

// NewIndex returns an empty index; Add fills it.
func NewIndex() *Index {
	return &Index{byID: map[uint64]*request{}, byServer: map[netip.AddrPort][]uint64{}}
}

// Load indexes every switch's postcards of an experiment in run directory
// dir; an experiment without any is an empty index.
func Load(dir, experiment string) (*Index, error) {
	files, err := filepath.Glob(runfmt.PostcardsPath(dir, experiment, "*"))
	if err != nil {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	slices.Sort(files)
	ix := NewIndex()
	for _, f := range files {
		if err := ix.load(dir, experiment, strings.TrimSuffix(filepath.Base(f), ".postcards")); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

func (ix *Index) load(dir, experiment, sw string) error {
	pr, c, err := runfmt.OpenPostcards(dir, experiment, sw)
	if err != nil {
		return fmt.Errorf("anatomy: %w", err)
	}
	defer c.Close()
	var p runfmt.Postcard
	for {
		switch err := pr.Next(&p); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("anatomy: switch %s: %w", sw, err)
		}
		ix.Add(sw, pr.EpochNs, &p)
	}
}

// Add indexes one postcard of switch sw whose file's clock origin is
// epochNs. Only Homa DATA packets sent by a client (even sender id) are
// kept: they are the requests.
func (ix *Index) Add(sw string, epochNs int64, p *runfmt.Postcard) {
	const typeData = 0x10
	if p.Kind != switchstats.KindHoma || p.HomaType != typeData || p.RPCID&1 != 0 {
		return
	}
	r := ix.byID[p.RPCID]
	if r == nil {
		r = &request{server: netip.AddrPortFrom(netip.AddrFrom4(p.DstIP), p.DstPort)}
		ix.byID[p.RPCID] = r
		ix.byServer[r.server] = append(ix.byServer[r.server], p.RPCID)
	}
	if !slices.Contains(r.offsets, p.Seq) {
		r.offsets = append(r.offsets, p.Seq)
	}
	if p.Seq == 0 {
		r.hops = append(r.hops, Hop{Switch: sw, ArrivalNs: epochNs + p.ArrivalNs, DequeueNs: epochNs + p.DequeueNs,
			QueueNs: p.DequeueNs - p.EnqueueNs, EgressPort: p.EgressPort, Queue: p.Queue})
	}
}

// Request finds the switch side of a single-packet Homa request. With its
// RPC id (id, or else rpcs.csv's rpc_id) the match is exact; without (runs
// written before that column), it is the only request to the RPC's server
// whose packet reached the first switch between the RPC's sent and done
// times. It reports false
// for a request with several DATA packets, none, or more than one candidate.
func (ix *Index) Request(rpc *runfmt.RPC, id uint64) (Match, bool) {
	if id == 0 {
		id = rpc.RPCID // rpcs.csv's rpc_id, where the transport has one
	}
	if id != 0 {
		return ix.match(id, false)
	}
	server, err := netip.ParseAddrPort(rpc.Server)
	if err != nil || rpc.SentNs == 0 {
		return Match{}, false
	}
	end := rpc.DoneNs
	if end == 0 {
		end = rpc.SentNs + rpc.RTTNs
	}
	found := uint64(0)
	for _, cand := range ix.byServer[server] {
		r := ix.byID[cand]
		if len(r.hops) == 0 {
			continue
		}
		if t := r.hops[0].ArrivalNs; t >= rpc.SentNs && t <= end {
			if found != 0 {
				return Match{}, false // ambiguous
			}
			found = cand
		}
	}
	if found == 0 {
		return Match{}, false
	}
	return ix.match(found, true)
}

func (ix *Index) match(id uint64, byTime bool) (Match, bool) {
	r := ix.byID[id]
	if r == nil || len(r.offsets) != 1 || len(r.hops) == 0 {
		return Match{}, false
	}
	m := Match{RPCID: id, Hops: slices.Clone(r.hops), ByTime: byTime}
	slices.SortFunc(m.Hops, func(a, b Hop) int { return int(a.ArrivalNs - b.ArrivalNs) })
	for _, h := range m.Hops {
		m.QueueNs += h.QueueNs
	}
	return m, true
}
