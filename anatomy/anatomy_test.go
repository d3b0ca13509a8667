package anatomy

import (
	"cmp"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/homatb/homatb/p4/switchstats"
	"github.com/homatb/homatb/rundir"
)

const (
	epoch = 1_700_000_000_000_000_000
	us    = 1000
)

// writeTrace writes one switch's postcards of experiment "exp" under dir.
func writeTrace(t *testing.T, dir, sw string, pcs []rundir.Postcard) {
	t.Helper()
	path := rundir.PostcardsPath(dir, "exp", sw)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b := switchstats.AppendPostcardHeader(nil, epoch)
	for _, p := range pcs {
		var rec [switchstats.PostcardLen]byte
		p.Encode(&rec)
		b = append(b, rec[:]...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// at is a time on the trace's clock as the agents write it (Unix ns).
func at(t int64) int64 { return epoch + t }

// pc is a packet seen by a switch: arrival, enqueue and dequeue in µs.
func pc(arr, enq, deq int64) rundir.Postcard {
	return rundir.Postcard{ArrivalNs: arr * us, EnqueueNs: enq * us, DequeueNs: deq * us}
}

func homaPkt(p rundir.Postcard, src, dst [4]byte, id uint64, off uint32, payload int) rundir.Postcard {
	p.Kind, p.IPProto, p.HomaType = switchstats.KindHoma, 146, homaData
	p.SrcIP, p.DstIP, p.RPCID, p.Seq = src, dst, id, off
	p.FrameLen = uint16(homaDataFrame + payload)
	return p
}

func tcpSeg(p rundir.Postcard, src, dst [4]byte, sport, dport uint16, seq, n uint32) rundir.Postcard {
	p.Kind, p.IPProto = switchstats.KindTCP, 6
	p.SrcIP, p.DstIP, p.SrcPort, p.DstPort, p.Seq, p.PayloadLen = src, dst, sport, dport, seq, n
	p.FrameLen = uint16(54 + n)
	return p
}

var (
	h1 = [4]byte{10, 0, 0, 1}
	h2 = [4]byte{10, 0, 1, 2}
	h3 = [4]byte{10, 0, 0, 3}
)

func fabric() *rundir.FabricRecord {
	return &rundir.FabricRecord{LinkBps: 50e6, MTU: 1500, FrameOverhead: 38, Hosts: []rundir.FabricHost{
		{Name: "h1", IP: "10.0.0.1", Switch: "l1"}, {Name: "h2", IP: "10.0.1.2", Switch: "l2"},
		{Name: "h3", IP: "10.0.0.3", Switch: "l1"}}}
}

// TestDecomposeKnownTrace checks the join and every part on a synthetic
// trace with known answers: a Homa RPC across two switches (with a stale
// copy of its request at the first switch and a late one at the second,
// which the join must skip), a TCP RPC pipelined behind another on one
// connection whose request was split in two segments, and an RPC nothing
// recorded.
func TestDecomposeKnownTrace(t *testing.T) {
	dir := t.TempDir()
	writeTrace(t, dir, "l1", []rundir.Postcard{
		// Homa RPC 100 from h1 to h2: the request's stale copy, then the one
		// that went on, and the response on its way back.
		homaPkt(pc(1150, 1151, 1300), h1, h2, 100, 0, 100),
		homaPkt(pc(1200, 1201, 1500), h1, h2, 100, 0, 100),
		homaPkt(pc(1905, 1906, 2500), h2, h1, 101, 0, 200),
		// TCP h1:40000 -> h3:5000: SYN, first request [0,104), second
		// [104,158) in two segments; SYN-ACK, responses [0,14) [14,28).
		tcpSeg(pc(100, 100, 100), h1, h3, 40000, 5000, 7000, 0),
		tcpSeg(pc(101, 101, 101), h3, h1, 5000, 40000, 9000, 0),
		tcpSeg(pc(4000, 4001, 4100), h1, h3, 40000, 5000, 7001, 104),
		tcpSeg(pc(4010, 4011, 4200), h1, h3, 40000, 5000, 7105, 20),
		tcpSeg(pc(4020, 4022, 4400), h1, h3, 40000, 5000, 7125, 34),
		tcpSeg(pc(4600, 4601, 4610), h3, h1, 5000, 40000, 9001, 14),
		tcpSeg(pc(4700, 4702, 4800), h3, h1, 5000, 40000, 9015, 14),
		// A third request [158,182) arrives before the retransmission of
		// the second's last segment, which TCP delivers first.
		tcpSeg(pc(5050, 5051, 5100), h1, h3, 40000, 5000, 7159, 24),
		tcpSeg(pc(5200, 5201, 5300), h1, h3, 40000, 5000, 7125, 34),
		tcpSeg(pc(5500, 5501, 5600), h3, h1, 5000, 40000, 9029, 18),
	})
	writeTrace(t, dir, "l2", []rundir.Postcard{
		homaPkt(pc(1510, 1511, 1600), h1, h2, 100, 0, 100),
		homaPkt(pc(1790, 1791, 1795), h1, h2, 100, 0, 100), // after the server had it
		homaPkt(pc(1800, 1801, 1900), h2, h1, 101, 0, 200),
	})
	ix, err := Load(dir, "exp")
	if err != nil {
		t.Fatal(err)
	}
	served := []rundir.Served{
		{Experiment: "exp", Transport: "homa", Server: "10.0.1.2:99", Client: "10.0.0.1:32768", RPCID: 100,
			ReqBytes: 100, RespBytes: 200, ReqNs: at(1700 * us), ReplyNs: at(1750 * us)},
		{Experiment: "exp", Transport: "tcp", Server: "10.0.0.3:5000", Client: "10.0.0.1:40000", ReqOffset: 104,
			RespOffset: 14, ReqBytes: 50, RespBytes: 10, ReqNs: at(4450 * us), ReplyNs: at(4500 * us)},
		{Experiment: "exp", Transport: "tcp", Server: "10.0.0.3:5000", Client: "10.0.0.1:40000", ReqOffset: 158,
			RespOffset: 28, ReqBytes: 20, RespBytes: 14, ReqNs: at(5350 * us), ReplyNs: at(5450 * us)},
	}
	j := NewJoiner(ix, fabric(), served)
	tests := []struct {
		name string
		rpc  rundir.RPC
		want rundir.Anatomy
	}{
		{"homa two switches", rundir.RPC{Transport: "homa", Client: "h1", Server: "10.0.1.2:99", Local: "10.0.0.1:32768",
			RPCID: 100, ReqBytes: 100, RespBytes: 200, IntendedNs: at(1000 * us), SentNs: at(1100 * us), DoneNs: at(3000 * us), RTTNs: 2000 * us},
			// The stale copy reached l1 50 µs before the one that went on:
			// loss recovery.
			rundir.Anatomy{SendLagNs: 100 * us, ClientTxNs: 50 * us, RecoveryNs: 50 * us, ServerRxNs: 100 * us, ServerAppNs: 50 * us,
				ServerTxNs: 50 * us, ClientRxNs: 500 * us, HostNs: 750 * us, WireNs: 15 * us,
				ReqQueueNs: 299*us + 89*us, RespQueueNs: 99*us + 594*us, QueueNs: 1081 * us, LastHopQueueNs: 89*us + 594*us, SwitchNs: 4 * us, Hops: 2, Joined: "full"}},
		{"homa, the client waited for a lost packet", rundir.RPC{Transport: "homa", Client: "h1", Server: "10.0.1.2:99", Local: "10.0.0.1:32768",
			RPCID: 100, ReqBytes: 100, RespBytes: 200, IntendedNs: at(1000 * us), SentNs: at(1100 * us), DoneNs: at(3000 * us), RTTNs: 2000 * us,
			RecoveryFromNs: at(2600 * us)},
			// As above, but the client's transport says it waited for a
			// lost packet from 2600 µs: 400 µs of its receive time was
			// loss recovery.
			rundir.Anatomy{SendLagNs: 100 * us, ClientTxNs: 50 * us, RecoveryNs: 450 * us, ServerRxNs: 100 * us, ServerAppNs: 50 * us,
				ServerTxNs: 50 * us, ClientRxNs: 100 * us, HostNs: 350 * us, WireNs: 15 * us,
				ReqQueueNs: 299*us + 89*us, RespQueueNs: 99*us + 594*us, QueueNs: 1081 * us, LastHopQueueNs: 89*us + 594*us, SwitchNs: 4 * us, Hops: 2, Joined: "full"}},
		{"tcp pipelined, split request", rundir.RPC{Transport: "tcp", Client: "h1", Server: "10.0.0.3:5000", Local: "10.0.0.1:40000",
			ReqOffset: 104, RespOffset: 14, ReqBytes: 50, RespBytes: 10,
			IntendedNs: at(3900 * us), SentNs: at(3950 * us), DoneNs: at(4900 * us), RTTNs: 1000 * us},
			// Behind queued bytes of its own connection: the request while
			// [0,104) queued at l1 (4001-4020 of its 3950-4020 send), the
			// response while [0,14) did (4601-4610 of 4500-4700).
			rundir.Anatomy{SendLagNs: 50 * us, ClientTxNs: 70 * us, ServerRxNs: 50 * us, ServerAppNs: 50 * us,
				ServerTxNs: 200 * us, ClientRxNs: 100 * us, HostNs: 470 * us, HOLNs: 28 * us,
				ReqQueueNs: 378 * us, RespQueueNs: 98 * us, QueueNs: 476 * us, LastHopQueueNs: 476 * us, SwitchNs: 4 * us, Hops: 1, Joined: "full"}},
		{"tcp held back by a retransmission", rundir.RPC{Transport: "tcp", Client: "h1", Server: "10.0.0.3:5000", Local: "10.0.0.1:40000",
			ReqOffset: 158, RespOffset: 28, ReqBytes: 20, RespBytes: 14,
			IntendedNs: at(5000 * us), SentNs: at(5000 * us), DoneNs: at(5700 * us), RTTNs: 700 * us},
			// The lost segment's first copy came before the send: all of
			// the wait for its retransmission is loss recovery.
			rundir.Anatomy{RecoveryNs: 200 * us, ServerRxNs: 50 * us, ServerAppNs: 100 * us,
				ServerTxNs: 50 * us, ClientRxNs: 100 * us, HostNs: 300 * us,
				ReqQueueNs: 99 * us, RespQueueNs: 99 * us, QueueNs: 198 * us, LastHopQueueNs: 198 * us, SwitchNs: 2 * us, Hops: 1, Joined: "full"}},
		{"nothing recorded", rundir.RPC{Transport: "homa", Client: "h3", Server: "10.0.1.2:99", RPCID: 200, ReqBytes: 100,
			IntendedNs: at(5000 * us), SentNs: at(5010 * us), DoneNs: at(6000 * us), RTTNs: 1000 * us},
			rundir.Anatomy{SendLagNs: 10 * us, UnattributedNs: 990 * us, Joined: "no-request+no-response+no-server"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := j.Decompose(&tc.rpc)
			w := tc.want
			w.Transport, w.Client, w.Server, w.RPCID = tc.rpc.Transport, tc.rpc.Client, tc.rpc.Server, tc.rpc.RPCID
			w.ReqBytes, w.RespBytes, w.RTTNs = tc.rpc.ReqBytes, tc.rpc.RespBytes, tc.rpc.RTTNs
			if w.UnattributedNs == 0 {
				w.UnattributedNs = w.RTTNs - w.SendLagNs - w.HostNs - w.RecoveryNs - w.WireNs - w.QueueNs - w.SwitchNs
			}
			if got != w {
				t.Errorf("got  %+v\nwant %+v", got, w)
			}
		})
	}
}

// TestDecomposeServerRecovery: a server's account of waiting for a lost
// request packet carves its receive time, and the client's send time
// within the wait, into recovery; the application's time stays host.
func TestDecomposeServerRecovery(t *testing.T) {
	dir := t.TempDir()
	writeTrace(t, dir, "l1", []rundir.Postcard{
		homaPkt(pc(1200, 1201, 1500), h1, h2, 100, 0, 100),
		homaPkt(pc(1905, 1906, 2500), h2, h1, 101, 0, 200),
	})
	writeTrace(t, dir, "l2", []rundir.Postcard{
		homaPkt(pc(1510, 1511, 1600), h1, h2, 100, 0, 100),
		homaPkt(pc(1800, 1801, 1900), h2, h1, 101, 0, 200),
	})
	ix, err := Load(dir, "exp")
	if err != nil {
		t.Fatal(err)
	}
	served := []rundir.Served{{Experiment: "exp", Transport: "homa", Server: "10.0.1.2:99", Client: "10.0.0.1:32768", RPCID: 100,
		ReqBytes: 100, RespBytes: 200, ReqNs: at(1700 * us), ReplyNs: at(1750 * us), RecoveryFromNs: at(1150 * us)}}
	rpc := rundir.RPC{Transport: "homa", Client: "h1", Server: "10.0.1.2:99", Local: "10.0.0.1:32768",
		RPCID: 100, ReqBytes: 100, RespBytes: 200, IntendedNs: at(1000 * us), SentNs: at(1100 * us), DoneNs: at(3000 * us), RTTNs: 2000 * us}
	got := NewJoiner(ix, fabric(), served).Decompose(&rpc)
	// The wait [1150, 1700] covers 50 of the client's 100 µs to l1 and all
	// 100 µs of the server's receive time.
	if got.RecoveryNs != 150*us || got.ClientTxNs != 50*us || got.ServerRxNs != 0 || got.ServerAppNs != 50*us {
		t.Errorf("recovery %d, client tx %d, server rx %d, app %d µs; want 150, 50, 0, 50",
			got.RecoveryNs/us, got.ClientTxNs/us, got.ServerRxNs/us, got.ServerAppNs/us)
	}
	if sum := got.SendLagNs + got.HostNs + got.RecoveryNs + got.WireNs + got.QueueNs + got.SwitchNs + got.UnattributedNs; sum != got.RTTNs {
		t.Errorf("parts sum to %d, RTT %d", sum, got.RTTNs)
	}
}

// summarizeShort is the summary of whole rows, all of them short.
func summarizeShort(rows []rundir.Anatomy) *Summary {
	pr := make([]partsRow, len(rows))
	for i := range rows {
		pr[i] = rowOf(&rows[i], inShort)
	}
	return summarize(pr, inShort)
}

// TestSummarize checks the short-message summary on rows with known parts.
func TestSummarize(t *testing.T) {
	var rows []rundir.Anatomy
	for i := range 100 {
		host, queue := int64(100*us), int64(10*us)
		if i >= 98 { // the tail: a long switch queue
			queue = 5000 * us
		}
		unattr := int64(0)
		if i < 5 {
			unattr = 50 * us // five RPCs with a large unexplained part
		}
		rows = append(rows, rundir.Anatomy{Joined: "full", ReqBytes: 100, SendLagNs: 5 * us, HostNs: host, QueueNs: queue,
			UnattributedNs: unattr, RTTNs: 5*us + host + queue + unattr})
	}
	s := summarizeShort(rows)
	if s.RPCs != 100 || s.Joined != 100 || s.Explained != 0.95 {
		t.Errorf("rpcs %d joined %d explained %v, want 100 100 0.95", s.RPCs, s.Joined, s.Explained)
	}
	if s.P50.Host != 100 || s.P50.Queue != 10 || s.P99.Queue != 5000 || s.P99.RTT != 5105 {
		t.Errorf("p50 %+v p99 %+v", s.P50, s.P99)
	}
	if s.TailRPCs != 2 || s.Tail.Queue != 5000 || s.TailCause != "queue" {
		t.Errorf("tail %d RPCs %+v cause %q, want the one with a 5 ms queue", s.TailRPCs, s.Tail, s.TailCause)
	}
}

// TestBehindQueued checks the union of queued intervals of earlier bytes
// on a connection: overlaps counted once, later bytes and other
// connections ignored, the window clipped.
func TestBehindQueued(t *testing.T) {
	ix := NewIndex()
	add := func(p rundir.Postcard) { ix.Add("l1", 0, &p) }
	add(tcpSeg(pc(0, 0, 0), h1, h3, 40000, 5000, 999, 0)) // SYN: stream offset 0 is seq 1000
	add(tcpSeg(pc(10, 10, 50), h1, h3, 40000, 5000, 1000, 100))
	add(tcpSeg(pc(20, 30, 80), h1, h3, 40000, 5000, 1100, 100))   // overlaps the one before
	add(tcpSeg(pc(90, 100, 120), h1, h3, 40000, 5000, 1200, 100)) // offset 200
	add(tcpSeg(pc(5, 5, 200), h1, h3, 40001, 5000, 1000, 100))    // another connection
	ix.Finish()
	k := flowKey{src: h1, dst: h3, srcPort: 40000, dstPort: 5000}
	tests := []struct {
		name     string
		off      uint32
		from, to int64 // µs
		want     int64 // µs
	}{
		{"union of overlapping segments", 200, 0, 200, 70}, // [10,80]
		{"later bytes count", 300, 0, 200, 90},             // [10,80] + [100,120]
		{"clipped", 200, 40, 60, 20},                       // [40,60]
		{"nothing before offset 0", 0, 0, 200, 0},          // no earlier byte
		{"empty window", 200, 60, 60, 0},                   //
		{"window after the queue", 300, 130, 400, 0},       // all dequeued
	}
	for _, tc := range tests {
		if got := ix.behindQueued(k, tc.off, tc.from*us, tc.to*us); got != tc.want*us {
			t.Errorf("%s: %d µs, want %d", tc.name, got/us, tc.want)
		}
	}
}

// TestTailCauseHOL: a tail spent mostly waiting behind the connection's
// queued bytes is named for that, not for the host it was spent on.
func TestTailCauseHOL(t *testing.T) {
	var rows []rundir.Anatomy
	for i := range 100 {
		host, hol := int64(100*us), int64(0)
		if i >= 98 {
			host, hol = 6000*us, 5000*us
		}
		rows = append(rows, rundir.Anatomy{Joined: "full", HostNs: host, HOLNs: hol, QueueNs: 2000 * us, RTTNs: host + 2000*us + int64(i)})
	}
	s := summarizeShort(rows)
	if s.Tail.HostHOL != 5000 || s.Tail.Host != 6000 || s.TailCause != "host_hol" {
		t.Errorf("tail %+v cause %q, want host_hol 5000 of host 6000 and cause host_hol", s.Tail, s.TailCause)
	}
}

// TestPreemptLag: a critical packet's wait at a port splits into the rest
// of a lower-priority frame already on the link when it was enqueued
// (preemption lag) and the frames queued ahead of it; a frame of its own
// or a higher priority on the link is queueing; with a Sieve's records
// nothing is called preemption lag.
func TestPreemptLag(t *testing.T) {
	// The port's frames: a long message's packet (queue 1) on the link
	// from 0 to 10 µs, then a queue-7 one to 12 µs.
	low := homaPkt(pc(0, 0, 0), h3, h2, 8, 0, 1400)
	low.Queue, low.EgressPort = 1, 2
	hi := homaPkt(pc(1, 1, 10), h3, h2, 10, 0, 1400)
	hi.Queue, hi.EgressPort = 7, 2
	for _, tc := range []struct {
		name     string
		queue    uint8
		enq, deq int64 // the critical packet's, µs
		sieved   bool
		want     int64 // µs
	}{
		{"behind the low frame, then a queued one", 7, 4, 12, false, 6},
		{"the frame on the link of its own priority", 1, 4, 12, false, 0},
		{"the frame on the link of a higher priority", 6, 11, 12, false, 0},
		{"no wait", 7, 12, 12, false, 0},
		{"sampled records", 7, 4, 12, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := NewIndex()
			crit := homaPkt(pc(tc.enq, tc.enq, tc.deq), h1, h2, 100, 0, 100)
			crit.Queue, crit.EgressPort = tc.queue, 2
			for _, p := range []rundir.Postcard{low, hi, crit} {
				ix.Add("l2", epoch, &p)
			}
			ix.Finish()
			ix.sieved = tc.sieved
			p, ok := ix.critical(flowKey{src: h1, dst: h2, id: 100}, span{hi: 100}, "l2", at(0), at(100*us))
			if !ok {
				t.Fatal("critical packet not found")
			}
			if got := ix.preemptLag(p); got != tc.want*us {
				t.Errorf("preemption lag %d ns, want %d µs", got, tc.want)
			}
		})
	}
}

// TestShortestHalfTail: the median request length bounds the shortest
// half, and its tail is the mean of each part over its RPCs at or above
// their P99 RTT.
func TestShortestHalfTail(t *testing.T) {
	var rpcs []rundir.RPC
	var rows []partsRow
	for i := range 200 {
		n := int64(100 + i) // median request 199 bytes
		rpcs = append(rpcs, rundir.RPC{ReqBytes: n})
		rows = append(rows, rowOf(&rundir.Anatomy{ReqBytes: n, RTTNs: int64(i+1) * us, QueueNs: int64(i+1) * us / 2, PreemptNs: int64(i+1) * us / 4}, inShortest))
	}
	// A row outside the set counts for nothing.
	rows = append(rows, rowOf(&rundir.Anatomy{ReqBytes: 9000, RTTNs: 9000 * us, QueueNs: 9000 * us}, inShort))
	if m := medianReq(RPCs(rpcs)); m != 199 {
		t.Errorf("medianReq = %d, want 199", m)
	}
	if m := medianReq(RPCs(nil)); m != -1 {
		t.Errorf("medianReq of none = %d, want -1", m)
	}
	// Of 200 RTTs of 1-200 µs the P99 is 198 µs: the tail is 198-200.
	p, n := tailOf(rows, inShortest)
	if n != 3 || p.RTT != 199 || p.Queue != 99.5 || p.PreemptLag != 49.75 {
		t.Errorf("tailOf = %+v over %d, want RTT 199, queue 99.5, preemption lag 49.75 over 3", p, n)
	}
}

// TestDeparturePacking: a departure keeps its time, negative too (a file
// whose clock started before the first file's), and its queue, and orders
// as the times do.
func TestDeparturePacking(t *testing.T) {
	for _, tc := range []struct {
		deq   int64
		queue uint8
	}{{0, 0}, {1_234_567_890, 7}, {-42, 3}, {5, 1}} {
		d := newDeparture(tc.deq, tc.queue)
		if d.deq() != tc.deq || d.queue() != tc.queue {
			t.Errorf("newDeparture(%d, %d) reads %d, %d", tc.deq, tc.queue, d.deq(), d.queue())
		}
	}
	if !(newDeparture(-1, 7) < newDeparture(0, 0) && newDeparture(9, 7) < newDeparture(10, 0)) {
		t.Error("departures do not order by time")
	}
}

// TestSummarizeSets: a summary over one set of compact rows is the one
// over that set's whole rows alone; rows of the other set change nothing,
// and unsampled rows count in the RPCs and the RTT's percentiles only.
func TestSummarizeSets(t *testing.T) {
	var whole []rundir.Anatomy
	var rows []partsRow
	for i := range 100 {
		a := rundir.Anatomy{Joined: "full", ReqBytes: 100, HostNs: int64(i) * us, QueueNs: 10 * us, RTTNs: int64(i)*us + 10*us}
		if i%10 == 0 {
			a = rundir.Anatomy{Joined: JoinedUnsampled, ReqBytes: 100, RTTNs: int64(i)*us + 10*us}
		}
		whole = append(whole, a)
		rows = append(rows, rowOf(&a, inShort|inShortest))
		if i < 3 { // a longer RPC of the shortest half only, far slower
			rows = append(rows, rowOf(&rundir.Anatomy{Joined: "full", ReqBytes: 2000, QueueNs: 900 * us, RTTNs: 1000 * us}, inShortest))
		}
	}
	want, got := summarizeShort(whole), summarize(rows, inShort)
	if *got != *want {
		t.Errorf("summary of the short set\n got %+v\nwant %+v", got, want)
	}
	if got.RPCs != 100 || got.Joined != 90 {
		t.Errorf("rpcs %d joined %d, want 100 and 90 (10 unsampled)", got.RPCs, got.Joined)
	}
	if _, n := tailOf(rows, inShortest); n != 3 {
		t.Errorf("the shortest half's tail has %d rows, want the 3 slow ones at or above its P99", n)
	}
}

// TestIndexedQueriesAsScans: firstCopy and behindQueued, which search a
// flow's packets through an index and a bound, give what a scan of every
// packet in the recovery window gives, on a long connection whose
// segments are sent again (copies at several switches) and queued for
// very different times.
func TestIndexedQueriesAsScans(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	ix := NewIndex()
	k := flowKey{src: h1, dst: h3, srcPort: 40000, dstPort: 5000}
	syn := tcpSeg(pc(0, 0, 0), h1, h3, 40000, 5000, 999, 0)
	ix.Add("l1", 0, &syn)
	for i := range 3000 {
		seq := 1000 + uint32(rng.IntN(400))*100 // resent segments share a seq
		arr := int64(i)*us + rng.Int64N(5*us)
		enq := arr + rng.Int64N(us)
		deq := enq + rng.Int64N([]int64{us, 50 * us, 2000 * us}[rng.IntN(3)])
		p := tcpSeg(pc(arr/us, enq/us, deq/us), h1, h3, 40000, 5000, seq, 100)
		ix.Add([]string{"l1", "s1", "l2"}[rng.IntN(3)], 0, &p)
	}
	ix.Finish()
	f := ix.flows[k]
	scanFirst := func(first *sighting, from int64) int64 {
		earliest := first.arr
		for _, s := range f.s {
			if s.deq < first.deq && s.deq >= from-recoveryWindow && s.sw == first.sw && s.seq == first.seq && s.payload == first.payload {
				earliest = min(earliest, s.arr)
			}
		}
		return earliest
	}
	scanBehind := func(off uint32, from, to int64) int64 {
		var ivs [][2]int64
		for _, s := range f.s {
			if s.deq > from && s.deq <= to+recoveryWindow && s.seq-f.isn-1 < off && s.enq < to {
				ivs = append(ivs, [2]int64{max(s.enq, from), min(s.deq, to)})
			}
		}
		slices.SortFunc(ivs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		var total, end int64 = 0, from
		for _, iv := range ivs {
			if lo := max(iv[0], end); iv[1] > lo {
				total, end = total+iv[1]-lo, iv[1]
			}
		}
		return total
	}
	for range 500 {
		first := f.s[rng.IntN(len(f.s))]
		from := first.deq - rng.Int64N(3000*us)
		if got, want := ix.firstCopy(k, path{first}, from), scanFirst(&first, from); got != want {
			t.Fatalf("firstCopy of %+v from %d: %d, a scan gives %d", first, from, got, want)
		}
		off, lo := uint32(rng.IntN(40000)), rng.Int64N(3000*us)
		hi := lo + rng.Int64N(500*us)
		if got, want := ix.behindQueued(k, off, lo, hi), scanBehind(off, lo, hi); got != want {
			t.Fatalf("behindQueued(%d, %d, %d): %d, a scan gives %d", off, lo, hi, got, want)
		}
	}
}
