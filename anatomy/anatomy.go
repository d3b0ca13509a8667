// Package anatomy tells where each RPC's time went. It joins three records
// of an experiment: the client's row of rpcs.csv (intended, sent, done),
// the server's row of served.csv (request in, reply out) and the switches'
// per-packet records (postcards: arrival, enqueue and dequeue of every
// frame), and splits the RTT along the path of the RPC's critical packets
// into send lag, host, loss recovery, wire, switch queueing and switch
// processing. docs/reports.md ("Latency anatomy") defines each part.
//
// The critical packet of a message is the one that left the last switch
// before the receiver (server or client) had the whole message: for a
// single-packet message its packet, for a longer one the last to arrive,
// which for Homa is usually its last granted packet. TCP delivers bytes in
// order, so its critical packet is the last segment carrying any byte up
// to the message's end: the message's own last segment, or the
// retransmission of an earlier message's lost one that held it back. Its earlier hops are the same packet's records at the switches
// before.
package anatomy

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
)

// Homa's DATA packet type and the length of the headers in front of its
// payload (Ethernet, IPv4 without options, Homa's DATA header).
const (
	homaData      = 0x10
	homaDataFrame = 14 + 20 + 56
)

// flowKey names the packets of one direction of one message stream: a
// Homa RPC's packets from one side (ports zero, id the sender id) or a TCP
// connection's from one side (id zero).
type flowKey struct {
	src, dst         [4]byte
	srcPort, dstPort uint16
	id               uint64
}

// sighting is one switch's record of one data-carrying packet.
type sighting struct {
	arr     int64
	enq     int64
	deq     int64
	seq     uint32 // Homa offset or TCP sequence number
	payload uint32 // bytes of message or stream data
	sw      uint16 // index into Index.switches
	port    uint16 // egress port
	queue   uint8  // egress queue: a higher one has strict priority
}

// portKey names one egress port of one switch.
type portKey struct {
	sw   uint16
	port uint16
}

// departure is one frame's start on an egress port's link, in ns from
// the index's base, shifted left by three bits, and the queue it left
// (0-7) in those bits: 8 bytes a frame, where a port logs every frame,
// and ordered as the starts are.
type departure int64

func newDeparture(deqRel int64, queue uint8) departure {
	return departure(deqRel<<3 | int64(queue&7))
}

func (d departure) deq() int64   { return int64(d) >> 3 }
func (d departure) queue() uint8 { return uint8(d & 7) }

// flow holds a flow's data packets in dequeue order.
type flow struct {
	s []sighting
	// maxStay is the longest any of s spent queued (deq - enq): none
	// dequeued later than that after a time was queued at it.
	maxStay int64
	// copies are s's indexes by switch, sequence number, payload and
	// dequeue, made at the flow's first firstCopy: a packet's copies at
	// one switch are a run of them. A TCP connection's flow holds every
	// packet of its life, and scanning them for each RPC took a third of
	// a report's time.
	copies []int32
	// isn is the TCP flow's initial sequence number: the sequence number of
	// its first packet without data (its SYN) when hasISN.
	isn    uint32
	hasISN bool
	synArr int64
}

// Index holds the data packets of one experiment's postcards.
type Index struct {
	switches []string
	flows    map[flowKey]*flow
	sieved   bool // the files are a Sieve's (switchstats.PostcardSieved)
	// ports holds every frame's departure of each egress port, in
	// dequeue order after Finish: what was on the link when a critical
	// packet arrived (preemption lag).
	ports map[portKey][]departure
	// base is the origin of the departures' times (Unix ns): the first
	// file's clock origin.
	base       int64
	hasBase    bool
	lastSwitch uint16 // switchIndex's last answer
	// intervals is behindQueued's scratch, kept between its calls.
	intervals [][2]int64
}

// Load indexes every switch's postcards of an experiment in run directory
// dir, compressed or not. An experiment without postcards is an empty
// index (HasRecords false).
func Load(dir, experiment string) (*Index, error) {
	switches, err := rundir.PostcardSwitches(dir, experiment)
	if err != nil {
		return nil, fmt.Errorf("anatomy: %w", err)
	}
	if len(switches) > math.MaxUint16 {
		return nil, fmt.Errorf("anatomy: %s: records of %d switches, more than the %d it indexes", experiment, len(switches), math.MaxUint16)
	}
	ix := NewIndex()
	for _, sw := range switches {
		if err := ix.load(dir, experiment, sw); err != nil {
			return nil, err
		}
	}
	ix.Finish()
	return ix, nil
}

// NewIndex returns an empty index; Add fills it and Finish readies it.
func NewIndex() *Index { return &Index{flows: map[flowKey]*flow{}, ports: map[portKey][]departure{}} }

// HasRecords reports whether any switch recorded a data packet.
func (ix *Index) HasRecords() bool { return len(ix.flows) > 0 }

// Sieved reports whether the records are those a Sieve kept, not every
// frame's: RPCs the Sieve passed over have none.
func (ix *Index) Sieved() bool { return ix.sieved }

func (ix *Index) load(dir, experiment, sw string) error {
	pr, c, err := rundir.OpenPostcards(dir, experiment, sw)
	if err != nil {
		return fmt.Errorf("anatomy: %w", err)
	}
	defer c.Close()
	ix.sieved = ix.sieved || pr.Flags&switchstats.PostcardSieved != 0
	var p rundir.Postcard
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
// epochNs (Unix ns): Homa DATA packets, TCP segments with data, and the
// first TCP segment without data of each direction (the SYN, whose
// sequence number places the stream's byte offsets).
func (ix *Index) Add(sw string, epochNs int64, p *rundir.Postcard) {
	si := ix.switchIndex(sw)
	if !ix.sieved {
		// A Sieve's records may lack the frame on the link: no
		// preemption lag is read from them, so none is kept.
		if !ix.hasBase {
			ix.base, ix.hasBase = epochNs, true
		}
		pk := portKey{sw: si, port: p.EgressPort}
		ix.ports[pk] = append(ix.ports[pk], newDeparture(epochNs+p.DequeueNs-ix.base, p.Queue))
	}
	var k flowKey
	var payload uint32
	switch p.Kind {
	case switchstats.KindHoma:
		if p.HomaType != homaData || int(p.FrameLen) <= homaDataFrame {
			return
		}
		k = flowKey{src: p.SrcIP, dst: p.DstIP, id: p.RPCID}
		payload = uint32(int(p.FrameLen) - homaDataFrame)
	case switchstats.KindTCP:
		k = flowKey{src: p.SrcIP, dst: p.DstIP, srcPort: p.SrcPort, dstPort: p.DstPort}
		payload = p.PayloadLen
	default:
		return
	}
	f := ix.flows[k]
	if f == nil {
		f = &flow{}
		ix.flows[k] = f
	}
	arr := epochNs + p.ArrivalNs
	if payload == 0 {
		if !f.hasISN || arr < f.synArr {
			f.isn, f.hasISN, f.synArr = p.Seq, true, arr
		}
		return
	}
	f.s = append(f.s, sighting{sw: si, arr: arr, enq: epochNs + p.EnqueueNs,
		deq: epochNs + p.DequeueNs, seq: p.Seq, payload: payload, port: p.EgressPort, queue: p.Queue})
	f.maxStay = max(f.maxStay, p.DequeueNs-p.EnqueueNs)
}

// switchIndex numbers sw; Load reads one switch's records at a time, so
// the last one asked for is remembered rather than searched for among a
// fabric's hundreds.
func (ix *Index) switchIndex(sw string) uint16 {
	if len(ix.switches) > 0 && ix.switches[ix.lastSwitch] == sw {
		return ix.lastSwitch
	}
	i := slices.Index(ix.switches, sw)
	if i < 0 {
		i = len(ix.switches)
		ix.switches = append(ix.switches, sw)
	}
	ix.lastSwitch = uint16(i)
	return ix.lastSwitch
}

// Finish sorts every flow's packets by dequeue time; call it after the
// last Add.
func (ix *Index) Finish() {
	for _, f := range ix.flows {
		slices.SortFunc(f.s, func(a, b sighting) int { return cmp.Compare(a.deq, b.deq) })
	}
	for _, d := range ix.ports {
		slices.Sort(d)
	}
}

// PreemptionKnown reports whether the index holds every frame the
// switches sent (not a Sieve's choice), which preemption lag needs: the
// frame on the link when a critical packet arrived may belong to any
// message.
func (ix *Index) PreemptionKnown() bool { return ix.HasRecords() && !ix.sieved }

// preemptLag is the part of a critical packet's switch queueing spent
// waiting for a frame of a lower-priority queue that was already on the
// link when the packet was enqueued (link-level preemption lag: a packet
// of a longer message already on the wire), at every hop of p. The frame
// in service is the port's last departure before the enqueue; it ended
// when the port's next frame started, since the port does not idle while
// the critical packet waits. Zero when the index lacks some frames
// (PreemptionKnown false).
func (ix *Index) preemptLag(p path) (lag int64) {
	if !ix.PreemptionKnown() {
		return 0
	}
	for _, s := range p {
		wait := s.deq - s.enq
		if wait <= 0 {
			continue
		}
		d := ix.ports[portKey{sw: s.sw, port: s.port}]
		enq := s.enq - ix.base
		i, _ := slices.BinarySearchFunc(d, enq, func(x departure, t int64) int { return cmp.Compare(x.deq(), t) })
		if i == 0 || i >= len(d) || d[i-1].queue() >= s.queue {
			continue
		}
		lag += min(d[i].deq()-enq, wait)
	}
	return lag
}

// span is a message's bytes in its flow: Homa offsets [lo, hi) of the
// message, or TCP stream offsets relative to the first data byte.
type span struct {
	lo, hi uint32
	tcp    bool
}

// completes reports whether s's data can be the last the receiver needed
// for the span: a Homa packet of the message; a TCP segment with any byte
// before the span's end, since TCP delivers in order and an earlier
// message's lost segment holds the span back until it is retransmitted.
func (sp span) completes(f *flow, s *sighting) bool {
	if sp.tcp {
		return s.seq-f.isn-1 < sp.hi // wraps as sequence numbers do
	}
	return s.seq < sp.hi && s.seq+s.payload > sp.lo
}

// path is a critical packet's records, first switch to last.
type path []sighting

func (p path) queue() (q int64) {
	for _, s := range p {
		q += s.deq - s.enq
	}
	return q
}

// lastHopQueue is the queueing at the path's last switch (the receiver's
// downlink); zero for an empty path.
func (p path) lastHopQueue() int64 {
	if len(p) == 0 {
		return 0
	}
	return p[len(p)-1].deq - p[len(p)-1].enq
}

func (p path) processing() (d int64) {
	for _, s := range p {
		d += s.enq - s.arr
	}
	return d
}

// transit is the time between switches: from each hop's dequeue to the
// next one's arrival.
func (p path) transit() (d int64) {
	for i := 1; i < len(p); i++ {
		d += p[i].arr - p[i-1].deq
	}
	return d
}

// critical finds a message's critical packet: of the flow's packets
// that can complete the span (span.completes) and left switch last (the
// receiver's) between from and to, the one that left last; then the same packet at
// each earlier switch, latest first, each before the next hop's arrival.
func (ix *Index) critical(k flowKey, sp span, last string, from, to int64) (path, bool) {
	f := ix.flows[k]
	lastSwAt := slices.Index(ix.switches, last)
	lastSw := uint16(lastSwAt)
	if f == nil || lastSwAt < 0 || (sp.tcp && !f.hasISN) {
		return nil, false
	}
	// Packets sorted by dequeue: start at the last one not after to.
	i, _ := slices.BinarySearchFunc(f.s, to+1, func(s sighting, t int64) int { return cmp.Compare(s.deq, t) })
	for i--; i >= 0 && f.s[i].deq >= from; i-- {
		if s := &f.s[i]; s.sw == lastSw && sp.completes(f, s) {
			break
		}
	}
	if i < 0 || f.s[i].deq < from {
		return nil, false
	}
	hops := path{f.s[i]}
	seen := []uint16{lastSw}
	for j := i - 1; j >= 0 && f.s[j].deq >= from; j-- {
		s, next := &f.s[j], &hops[len(hops)-1]
		if s.seq == next.seq && s.payload == next.payload && s.deq <= next.arr && !slices.Contains(seen, s.sw) {
			hops = append(hops, *s)
			seen = append(seen, s.sw)
		}
	}
	slices.Reverse(hops)
	return hops, true
}

// recoveryWindow bounds how far before a message's send the search for an
// earlier copy of its critical packet goes.
const recoveryWindow = int64(5e9)

// firstCopy is the earliest arrival, at the critical packet's first
// switch, of any copy of it (the same data): earlier than the critical
// copy's own when that is a retransmission.
func (ix *Index) firstCopy(k flowKey, p path, from int64) int64 {
	f, first := ix.flows[k], p[0]
	earliest := first.arr
	if len(f.copies) != len(f.s) {
		f.copies = make([]int32, len(f.s))
		for i := range f.copies {
			f.copies[i] = int32(i)
		}
		slices.SortFunc(f.copies, func(a, b int32) int { return f.copyKey(a).compare(f.copyKey(b)) })
	}
	// The copies of first at its switch dequeued from the window's start
	// up to (not at) first's own dequeue.
	want := copyKey{sw: first.sw, seq: first.seq, payload: first.payload, deq: from - recoveryWindow}
	i, _ := slices.BinarySearchFunc(f.copies, want, func(x int32, w copyKey) int { return f.copyKey(x).compare(w) })
	for ; i < len(f.copies); i++ {
		s := &f.s[f.copies[i]]
		if s.sw != first.sw || s.seq != first.seq || s.payload != first.payload || s.deq >= first.deq {
			break
		}
		earliest = min(earliest, s.arr)
	}
	return earliest
}

// copyKey orders a flow's sightings for firstCopy.
type copyKey struct {
	sw           uint16
	seq, payload uint32
	deq          int64
}

func (f *flow) copyKey(i int32) copyKey {
	s := &f.s[i]
	return copyKey{sw: s.sw, seq: s.seq, payload: s.payload, deq: s.deq}
}

func (a copyKey) compare(b copyKey) int {
	return cmp.Or(cmp.Compare(a.sw, b.sw), cmp.Compare(a.seq, b.seq), cmp.Compare(a.payload, b.payload), cmp.Compare(a.deq, b.deq))
}

// behindQueued is how long within [from, to] some byte of flow k before
// stream offset off (a TCP flow's) was in a switch queue: the union of
// those segments' enqueue-to-dequeue intervals, clipped to the window.
func (ix *Index) behindQueued(k flowKey, off uint32, from, to int64) int64 {
	f := ix.flows[k]
	if f == nil || !f.hasISN || to <= from {
		return 0
	}
	// Segments by dequeue: those dequeued after from, up to the bound
	// the recovery search uses on how long one may have been queued, or
	// the flow's longest stay in a queue when that is shorter (one
	// dequeued later was enqueued after to).
	i, _ := slices.BinarySearchFunc(f.s, from+1, func(s sighting, t int64) int { return cmp.Compare(s.deq, t) })
	ivs := ix.intervals[:0]
	defer func() { ix.intervals = ivs[:0] }()
	for ; i < len(f.s) && f.s[i].deq <= to+min(recoveryWindow, f.maxStay); i++ {
		s := &f.s[i]
		if s.seq-f.isn-1 >= off || s.enq >= to {
			continue
		}
		ivs = append(ivs, [2]int64{max(s.enq, from), min(s.deq, to)})
	}
	// Their union, without sorting: the intervals end in dequeue order,
	// so going back from the last, everything already counted covers
	// [earliest start so far, this one's end] and this one adds what lies
	// before that.
	var total int64
	earliest := int64(math.MaxInt64)
	for j := len(ivs) - 1; j >= 0; j-- {
		lo, hi := ivs[j][0], min(ivs[j][1], earliest)
		total += max(hi-lo, 0)
		earliest = min(earliest, lo)
	}
	return total
}

// interval is [lo, hi) in Unix ns; empty when hi <= lo.
type interval struct{ lo, hi int64 }

func (iv interval) len() int64 { return max(0, iv.hi-iv.lo) }

// overlap is how much of iv lies within the union of ws.
func (iv interval) overlap(ws []interval) int64 {
	var cut []interval
	for _, w := range ws {
		if c := (interval{max(iv.lo, w.lo), min(iv.hi, w.hi)}); c.len() > 0 {
			cut = append(cut, c)
		}
	}
	slices.SortFunc(cut, func(a, b interval) int { return cmp.Compare(a.lo, b.lo) })
	var total int64
	end := iv.lo
	for _, c := range cut {
		if lo := max(c.lo, end); c.hi > lo {
			total += c.hi - lo
			end = c.hi
		}
	}
	return total
}

// servedKey finds a server's row for a client's: Homa by the client's
// address and RPC id, TCP by the connection and the request's offset.
type servedKey struct {
	client, server string
	id             uint64
	offset         int64
}

// Joiner decomposes the RPCs of one experiment.
type Joiner struct {
	ix *Index
	// switchOf maps a host's name or address to its top-of-rack switch.
	switchOf map[string]string
	ipOf     map[string]string
	served   map[servedKey]*rundir.Served
}

// NewJoiner prepares the join of an experiment's postcards (ix), its
// servers' rows and the fabric the run built.
func NewJoiner(ix *Index, fabric *rundir.FabricRecord, served []rundir.Served) *Joiner {
	j := &Joiner{ix: ix, switchOf: fabric.SwitchOf(), ipOf: map[string]string{}, served: map[servedKey]*rundir.Served{}}
	for _, h := range fabric.Hosts {
		j.ipOf[h.Name] = h.IP
	}
	for i := range served {
		s := &served[i]
		j.served[keyOfServed(s)] = s
	}
	return j
}

func keyOfServed(s *rundir.Served) servedKey {
	if s.RPCID != 0 {
		return servedKey{client: addrOnly(s.Client), server: s.Server, id: s.RPCID}
	}
	return servedKey{client: s.Client, server: s.Server, offset: s.ReqOffset}
}

func addrOnly(ipPort string) string {
	if ap, err := netip.ParseAddrPort(ipPort); err == nil {
		return ap.Addr().String()
	}
	return ipPort
}

// Decompose splits one completed RPC's RTT. Every part is an interval
// between two recorded times; what no pair of records brackets (a
// critical packet or the server's row not found) is unattributed.
func (j *Joiner) Decompose(r *rundir.RPC) rundir.Anatomy {
	a := rundir.Anatomy{Experiment: r.Experiment, Transport: r.Transport, Client: r.Client, Server: r.Server,
		RPCID: r.RPCID, ReqBytes: r.ReqBytes, RespBytes: r.RespBytes, RTTNs: r.RTTNs, SendLagNs: r.SentNs - r.IntendedNs}
	clientIP := j.ipOf[r.Client]
	if r.Local != "" {
		clientIP = addrOnly(r.Local)
	}
	server, _ := netip.ParseAddrPort(r.Server)
	client, _ := netip.ParseAddr(clientIP)
	var sv *rundir.Served
	var reqKey, respKey flowKey
	var reqSpan, respSpan span
	if r.RPCID != 0 {
		sv = j.served[servedKey{client: clientIP, server: r.Server, id: r.RPCID}]
		reqKey = flowKey{src: client.As4(), dst: server.Addr().As4(), id: r.RPCID}
		respKey = flowKey{src: server.Addr().As4(), dst: client.As4(), id: r.RPCID | 1}
		reqSpan, respSpan = span{hi: uint32(r.ReqBytes)}, span{hi: uint32(r.RespBytes)}
	} else {
		local, _ := netip.ParseAddrPort(r.Local)
		sv = j.served[servedKey{client: r.Local, server: r.Server, offset: r.ReqOffset}]
		reqKey = flowKey{src: client.As4(), dst: server.Addr().As4(), srcPort: local.Port(), dstPort: server.Port()}
		respKey = flowKey{src: server.Addr().As4(), dst: client.As4(), srcPort: server.Port(), dstPort: local.Port()}
		// The 4-byte length prefix travels with the message.
		reqSpan = span{lo: uint32(r.ReqOffset), hi: uint32(r.ReqOffset + 4 + r.ReqBytes), tcp: true}
		respSpan = span{lo: uint32(r.RespOffset), hi: uint32(r.RespOffset + 4 + r.RespBytes), tcp: true}
	}
	// The request must have left the last switch before the server had it
	// (or, without the server's row, before the response began); the
	// response after the server replied and before the call returned.
	reqBy := r.DoneNs
	if sv != nil {
		reqBy = sv.ReqNs
	}
	req, reqOK := j.ix.critical(reqKey, reqSpan, j.switchOf[server.Addr().String()], r.SentNs, reqBy)
	respFrom := r.SentNs
	if sv != nil {
		respFrom = sv.ReplyNs
	} else if reqOK {
		respFrom = req[len(req)-1].deq
	}
	resp, respOK := j.ix.critical(respKey, respSpan, j.switchOf[clientIP], respFrom, r.DoneNs)

	var missing []string
	if !reqOK {
		missing = append(missing, "no-request")
	}
	if !respOK {
		missing = append(missing, "no-response")
	}
	if sv == nil {
		missing = append(missing, "no-server")
	}
	a.Joined = "full"
	if len(missing) > 0 {
		a.Joined = strings.Join(missing, "+")
	}
	a.Hops = max(len(req), len(resp))
	a.ReqQueueNs, a.RespQueueNs = req.queue(), resp.queue()
	a.QueueNs = a.ReqQueueNs + a.RespQueueNs
	a.PreemptNs = j.ix.preemptLag(req) + j.ix.preemptLag(resp)
	a.LastHopQueueNs = req.lastHopQueue() + resp.lastHopQueue()
	a.SwitchNs = req.processing() + resp.processing()
	a.WireNs = req.transit() + resp.transit()
	// Host intervals, each carved below where it waited for loss recovery.
	var clientTx, serverRx, serverTx, clientRx, serverAll interval
	var waits []interval
	if reqOK {
		clientTx = interval{r.SentNs, req[0].arr}
		// From the first copy of the critical packet reaching its first
		// switch (or the send, if later) to the copy that got through.
		waits = append(waits, interval{max(j.ix.firstCopy(reqKey, req, r.SentNs), r.SentNs), req[0].arr})
	}
	if sv != nil {
		a.ServerAppNs = sv.ReplyNs - sv.ReqNs
		if reqOK {
			serverRx = interval{req[len(req)-1].deq, sv.ReqNs}
		}
		if respOK {
			serverTx = interval{sv.ReplyNs, resp[0].arr}
			waits = append(waits, interval{max(j.ix.firstCopy(respKey, resp, sv.ReplyNs), sv.ReplyNs), resp[0].arr})
		}
		// The transport's own account: the server from its last progress
		// before the RESEND that found a request packet lost, until the
		// request was whole.
		if sv.RecoveryFromNs != 0 {
			waits = append(waits, interval{sv.RecoveryFromNs, sv.ReqNs})
		}
	} else if reqOK && respOK {
		// Without the server's row its three parts are one interval.
		serverAll = interval{req[len(req)-1].deq, resp[0].arr}
	}
	if respOK {
		clientRx = interval{resp[len(resp)-1].deq, r.DoneNs}
	}
	// The client's: from its last progress before the RESEND that found a
	// packet lost (of the response, or the whole request) to the end.
	if r.RecoveryFromNs != 0 {
		waits = append(waits, interval{r.RecoveryFromNs, r.DoneNs})
	}
	carve := func(iv interval) (host int64) {
		rec := iv.overlap(waits)
		a.RecoveryNs += rec
		return iv.len() - rec
	}
	a.ClientTxNs, a.ServerRxNs, a.ServerTxNs, a.ClientRxNs = carve(clientTx), carve(serverRx), carve(serverTx), carve(clientRx)
	if sv == nil && reqOK && respOK {
		a.ServerAppNs = carve(serverAll)
	}
	if reqSpan.tcp {
		// The first part of each send is the sender's own: from the write
		// to the first copy of the critical segment reaching a switch.
		a.HOLNs = j.ix.behindQueued(reqKey, reqSpan.lo, r.SentNs, r.SentNs+a.ClientTxNs)
		if sv != nil {
			a.HOLNs += j.ix.behindQueued(respKey, respSpan.lo, sv.ReplyNs, sv.ReplyNs+a.ServerTxNs)
		}
	}
	a.HostNs = a.ClientTxNs + a.ServerRxNs + a.ServerAppNs + a.ServerTxNs + a.ClientRxNs
	a.UnattributedNs = a.RTTNs - a.SendLagNs - a.HostNs - a.RecoveryNs - a.WireNs - a.QueueNs - a.SwitchNs
	return a
}
