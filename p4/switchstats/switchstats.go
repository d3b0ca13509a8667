// Package switchstats declares the embedded switch's statistics document:
// what its admin socket serves at GET /stats, what `homatb switch
// --stats-file` writes, and what a run directory keeps per experiment as
// switch/<experiment>/<switch>.json (docs/formats.md). The switch fills it;
// the orchestrator differences two of them; reports read it. It imports
// nothing, so p4 stays standalone and readers need not link the dataplane.
package switchstats

// Stats is a snapshot of one switch's counters.
type Stats struct {
	DeviceID uint64 `json:"device_id"`
	Ports    []Port `json:"ports"`
}

// Port holds the counters of one port. Drops are split by cause: queue tail
// drops are per queue, the rest are per port.
type Port struct {
	Port  uint16 `json:"port"`
	Iface string `json:"iface"`
	// Peer is the node at the port's other end, a host ("h3") or a switch
	// ("p1"), as the run laid the network out; "" where the run does not
	// know it (the switch's own admin socket, an external topology). It
	// tells a host's downlink from a link between switches.
	Peer       string  `json:"peer,omitempty"`
	RxPkts     uint64  `json:"rx_pkts"`
	TxPkts     uint64  `json:"tx_pkts"`
	FaultDrops uint64  `json:"fault_drops"`
	RateBps    uint64  `json:"rate_bps"` // 0: unshaped
	Queues     []Queue `json:"queues"`

	RxBytes       uint64 `json:"rx_bytes"`
	TxBytes       uint64 `json:"tx_bytes"`
	PipelineDrops uint64 `json:"pipeline_drops"` // ingress verdict Drop
	BadVerdicts   uint64 `json:"bad_verdicts"`   // unknown egress port or queue > 7
	EgressDrops   uint64 `json:"egress_drops"`   // egress control dropped
	OversizeDrops uint64 `json:"oversize_drops"` // frame longer than MaxFrame
	TxErrors      uint64 `json:"tx_errors"`      // refused by the device
	PcapDrops     uint64 `json:"pcap_drops"`     // left out of the capture
	Postcards     uint64 `json:"postcards"`      // per-packet records written (Postcard)
	PostcardDrops uint64 `json:"postcard_drops"` // records lost because the writer fell behind
	NoBuffer      uint64 `json:"no_buffer"`      // pool ran dry (should stay 0)
	KernelDrops   uint64 `json:"kernel_drops"`   // lost in the socket before the switch read them
	// RankDrops counts the frames a rank_order port dropped to stay within
	// its buffer (arriving or queued, the largest ranks); they are queue
	// 0's drops too.
	RankDrops uint64 `json:"rank_drops"`
	// TrimmedPkts counts the Homa DATA frames a trim_above port cut to
	// their header; they are queued (or dropped) in queue 7.
	TrimmedPkts uint64 `json:"trimmed_pkts"`
	// LostLinkNs is link time, in ns, that the port's scheduler lost while
	// a frame waited: it woke later than it may catch up, so the port
	// sent less than its rate. It measures the host's CPU, not the
	// network; an emulation is faithful only while it stays near 0.
	LostLinkNs uint64 `json:"lost_link_ns"`
	// RemarkedPkts, MeteredPkts and SpoofDrops are tor.p4's defences on
	// the packets that arrived on this port: DSCP re-marked (an untrusted
	// host), over a meter (re-marked to queue 0 or dropped), dropped for
	// a source address not the port's host's (also in PipelineDrops).
	RemarkedPkts uint64  `json:"remarked_pkts"`
	MeteredPkts  uint64  `json:"metered_pkts"`
	SpoofDrops   uint64  `json:"spoof_drops"`
	DropProb     float64 `json:"drop_prob"`  // gauge: the fault injector's setting
	DropEvery    uint64  `json:"drop_every"` // gauge: the fault injector's setting
}

// Queue holds the counters of one (port, queue). Depth, peak and delay
// fields are gauges; the rest count. Delays are µs from arrival to the start
// of transmission, from a histogram with 1 µs buckets below 64 µs and about
// 3% resolution above.
type Queue struct {
	Queue     int    `json:"queue"`
	EnqPkts   uint64 `json:"enq_pkts"`
	EnqBytes  uint64 `json:"enq_bytes"`
	SentPkts  uint64 `json:"sent_pkts"`
	SentBytes uint64 `json:"sent_bytes"`
	DropPkts  uint64 `json:"drop_pkts"`
	DropBytes uint64 `json:"drop_bytes"`
	// CEMarkedPkts counts the frames the egress control marked CE.
	CEMarkedPkts uint64 `json:"ce_marked_pkts"`
	DepthPkts    int    `json:"depth_pkts"`
	DepthBytes   int    `json:"depth_bytes"`
	PeakPkts     int    `json:"peak_pkts"`
	PeakBytes    int    `json:"peak_bytes"`
	DelayP50Us   uint32 `json:"delay_p50_us"`
	DelayP99Us   uint32 `json:"delay_p99_us"`
	DelayMaxUs   uint32 `json:"delay_max_us"`
	// PFC (802.1Qbb) of this priority on this port, when configured:
	// PAUSE frames the switch sent out of the port because the frames it
	// received there reached XOFF, resumes it sent at XON, PAUSE frames
	// and resumes it received, and how long, in ns, the peer kept this
	// egress queue paused.
	PFCPausesSent  uint64 `json:"pfc_pauses_sent,omitempty"`
	PFCResumesSent uint64 `json:"pfc_resumes_sent,omitempty"`
	PFCPausesRecv  uint64 `json:"pfc_pauses_received,omitempty"`
	PFCResumesRecv uint64 `json:"pfc_resumes_received,omitempty"`
	PFCPausedNs    uint64 `json:"pfc_paused_ns,omitempty"`
}

// Diff returns what happened between two snapshots of the same switch:
// counters as end minus start, gauges (identity, rate, fault settings,
// depths, peaks, delays) as at end. Ports and queues are matched by
// position, as the switch lists them in a fixed order; a counter that went
// backwards (the switch restarted) is taken from end alone.
func Diff(start, end Stats) Stats {
	out := Stats{DeviceID: end.DeviceID, Ports: make([]Port, len(end.Ports))}
	for i, e := range end.Ports {
		var s Port
		if i < len(start.Ports) {
			s = start.Ports[i]
		}
		p := e // gauges as at end; counters replaced below
		p.RxPkts = sub(s.RxPkts, e.RxPkts)
		p.TxPkts = sub(s.TxPkts, e.TxPkts)
		p.FaultDrops = sub(s.FaultDrops, e.FaultDrops)
		p.RxBytes = sub(s.RxBytes, e.RxBytes)
		p.TxBytes = sub(s.TxBytes, e.TxBytes)
		p.PipelineDrops = sub(s.PipelineDrops, e.PipelineDrops)
		p.BadVerdicts = sub(s.BadVerdicts, e.BadVerdicts)
		p.EgressDrops = sub(s.EgressDrops, e.EgressDrops)
		p.OversizeDrops = sub(s.OversizeDrops, e.OversizeDrops)
		p.TxErrors = sub(s.TxErrors, e.TxErrors)
		p.PcapDrops = sub(s.PcapDrops, e.PcapDrops)
		p.Postcards = sub(s.Postcards, e.Postcards)
		p.PostcardDrops = sub(s.PostcardDrops, e.PostcardDrops)
		p.NoBuffer = sub(s.NoBuffer, e.NoBuffer)
		p.KernelDrops = sub(s.KernelDrops, e.KernelDrops)
		p.RankDrops = sub(s.RankDrops, e.RankDrops)
		p.TrimmedPkts = sub(s.TrimmedPkts, e.TrimmedPkts)
		p.LostLinkNs = sub(s.LostLinkNs, e.LostLinkNs)
		p.RemarkedPkts = sub(s.RemarkedPkts, e.RemarkedPkts)
		p.MeteredPkts = sub(s.MeteredPkts, e.MeteredPkts)
		p.SpoofDrops = sub(s.SpoofDrops, e.SpoofDrops)
		p.Queues = make([]Queue, len(e.Queues))
		for j, eq := range e.Queues {
			var sq Queue
			if j < len(s.Queues) {
				sq = s.Queues[j]
			}
			q := eq
			q.EnqPkts = sub(sq.EnqPkts, eq.EnqPkts)
			q.EnqBytes = sub(sq.EnqBytes, eq.EnqBytes)
			q.SentPkts = sub(sq.SentPkts, eq.SentPkts)
			q.SentBytes = sub(sq.SentBytes, eq.SentBytes)
			q.DropPkts = sub(sq.DropPkts, eq.DropPkts)
			q.DropBytes = sub(sq.DropBytes, eq.DropBytes)
			q.CEMarkedPkts = sub(sq.CEMarkedPkts, eq.CEMarkedPkts)
			q.PFCPausesSent = sub(sq.PFCPausesSent, eq.PFCPausesSent)
			q.PFCResumesSent = sub(sq.PFCResumesSent, eq.PFCResumesSent)
			q.PFCPausesRecv = sub(sq.PFCPausesRecv, eq.PFCPausesRecv)
			q.PFCResumesRecv = sub(sq.PFCResumesRecv, eq.PFCResumesRecv)
			q.PFCPausedNs = sub(sq.PFCPausedNs, eq.PFCPausedNs)
			p.Queues[j] = q
		}
		out.Ports[i] = p
	}
	return out
}

// sub is end - start for a counter, or end when the counter restarted.
func sub(start, end uint64) uint64 {
	if start <= end {
		return end - start
	}
	return end
}

// IsGauge reports whether the statistics field with this JSON name is a
// level or a setting rather than a count, so Diff keeps its end value.
func IsGauge(field string) bool {
	switch field {
	case "device_id", "port", "iface", "queue", "rate_bps", "drop_prob", "drop_every",
		"depth_pkts", "depth_bytes", "peak_pkts", "peak_bytes",
		"delay_p50_us", "delay_p99_us", "delay_max_us":
		return true
	}
	return false
}
