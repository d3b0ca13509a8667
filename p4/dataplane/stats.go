package dataplane

// Stats is a snapshot of the dataplane's counters. It marshals to the
// "Switch statistics" JSON of docs/formats.md; fields after RateBps and
// Queues are additions to that format.
type Stats struct {
	DeviceID uint64      `json:"device_id"`
	Ports    []PortStats `json:"ports"`
}

// PortStats are the counters of one port. Drops are split by cause: queue
// tail drops are per queue, the rest are per port.
type PortStats struct {
	Port       uint16       `json:"port"`
	Iface      string       `json:"iface"`
	RxPkts     uint64       `json:"rx_pkts"`
	TxPkts     uint64       `json:"tx_pkts"`
	FaultDrops uint64       `json:"fault_drops"`
	RateBps    uint64       `json:"rate_bps"` // 0: unshaped
	Queues     []QueueStats `json:"queues"`

	RxBytes       uint64  `json:"rx_bytes"`
	TxBytes       uint64  `json:"tx_bytes"`
	PipelineDrops uint64  `json:"pipeline_drops"` // ingress verdict Drop
	BadVerdicts   uint64  `json:"bad_verdicts"`   // unknown egress port or queue > 7
	EgressDrops   uint64  `json:"egress_drops"`   // egress control dropped
	OversizeDrops uint64  `json:"oversize_drops"` // frame longer than MaxFrame
	TxErrors      uint64  `json:"tx_errors"`      // refused by the device
	PcapDrops     uint64  `json:"pcap_drops"`     // left out of the capture
	NoBuffer      uint64  `json:"no_buffer"`      // pool ran dry (should stay 0)
	KernelDrops   uint64  `json:"kernel_drops"`   // lost in the socket before the switch read them
	DropProb      float64 `json:"drop_prob"`
	DropEvery     uint64  `json:"drop_every"`
}

// QueueStats are the counters of one (port, queue). Delays are µs from
// arrival to the start of transmission, from a histogram with 1 µs buckets
// below 64 µs and about 3% resolution above.
type QueueStats struct {
	Queue      int    `json:"queue"`
	EnqPkts    uint64 `json:"enq_pkts"`
	EnqBytes   uint64 `json:"enq_bytes"`
	SentPkts   uint64 `json:"sent_pkts"`
	SentBytes  uint64 `json:"sent_bytes"`
	DropPkts   uint64 `json:"drop_pkts"`
	DropBytes  uint64 `json:"drop_bytes"`
	DepthPkts  int    `json:"depth_pkts"`
	DepthBytes int    `json:"depth_bytes"`
	PeakPkts   int    `json:"peak_pkts"`
	PeakBytes  int    `json:"peak_bytes"`
	DelayP50Us uint32 `json:"delay_p50_us"`
	DelayP99Us uint32 `json:"delay_p99_us"`
	DelayMaxUs uint32 `json:"delay_max_us"`
}

// ResetWindow restarts the statistics that cannot be differenced, the
// queues' peaks and delay percentiles, so that they describe what comes
// next (an experiment) rather than everything since the switch started.
// Counters are untouched; it is safe to call while Run is forwarding.
func (d *Dataplane) ResetWindow() {
	for _, ps := range d.ports {
		ps.tm.resetWindow()
	}
}

// Stats returns a snapshot of every counter; it is safe to call while Run
// is forwarding.
func (d *Dataplane) Stats() Stats {
	s := Stats{DeviceID: d.cfg.DeviceID, Ports: make([]PortStats, 0, len(d.ports))}
	for _, ps := range d.ports {
		f := ps.fault.get()
		p := PortStats{
			Port:          ps.num,
			Iface:         ps.iface,
			RxPkts:        ps.rxPkts.Load(),
			TxPkts:        ps.txPkts.Load(),
			FaultDrops:    ps.fault.drops.Load(),
			RateBps:       ps.tm.shaper.rate,
			RxBytes:       ps.rxBytes.Load(),
			TxBytes:       ps.txBytes.Load(),
			PipelineDrops: ps.pipelineDrops.Load(),
			BadVerdicts:   ps.badVerdict.Load(),
			EgressDrops:   ps.egressDrops.Load(),
			OversizeDrops: ps.oversize.Load(),
			TxErrors:      ps.txErrors.Load(),
			NoBuffer:      ps.noBuffer.Load(),
			DropProb:      f.DropProb,
			DropEvery:     f.EveryN,
		}
		for _, c := range []*capture{ps.capIn, ps.capOut} {
			if c != nil {
				p.PcapDrops += c.dropped.Load()
			}
		}
		if kd, ok := ps.io.(interface{ KernelDrops() uint64 }); ok {
			p.KernelDrops = kd.KernelDrops()
		}
		p.Queues = ps.tm.snapshot()
		s.Ports = append(s.Ports, p)
	}
	return s
}

// snapshot copies the per-queue counters under the port's lock.
func (t *tm) snapshot() []QueueStats {
	qs := make([]QueueStats, NumQueues)
	t.mu.Lock()
	defer t.mu.Unlock()
	for q := range NumQueues {
		st := &t.st[q]
		qs[q] = QueueStats{
			Queue:      q,
			EnqPkts:    st.enqPkts,
			EnqBytes:   st.enqBytes,
			SentPkts:   st.sentPkts,
			SentBytes:  st.sentBytes,
			DropPkts:   st.dropPkts,
			DropBytes:  st.dropBytes,
			DepthPkts:  t.q[q].size,
			DepthBytes: st.depthBytes,
			PeakPkts:   st.peakPkts,
			PeakBytes:  st.peakBytes,
			DelayP50Us: st.delay.percentile(0.50),
			DelayP99Us: st.delay.percentile(0.99),
			DelayMaxUs: st.delay.max,
		}
	}
	return qs
}
