package dataplane

import "github.com/homatb/homatb/p4/switchstats"

// ResetWindow restarts the statistics that cannot be differenced, the
// queues' peaks and delay percentiles, so that they describe what comes
// next (an experiment) rather than everything since the switch started.
// Counters are untouched; it is safe to call while Run is forwarding.
func (d *Dataplane) ResetWindow() {
	for _, ps := range d.ports {
		ps.tm.resetWindow()
	}
}

// Stats returns a snapshot of every counter, in the switch statistics
// format of package switchstats; it is safe to call while Run is forwarding.
func (d *Dataplane) Stats() switchstats.Stats {
	s := switchstats.Stats{DeviceID: d.cfg.DeviceID, Ports: make([]switchstats.Port, 0, len(d.ports))}
	for _, ps := range d.ports {
		f := ps.fault.get()
		p := switchstats.Port{
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
			Postcards:     ps.postcards.Load() + d.recorded(ps),
			PostcardDrops: ps.postcardDrops.Load(),
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
		p.Queues = ps.tm.snapshot(d.now())
		p.RankDrops, p.TrimmedPkts, p.LostLinkNs = ps.tm.portCounters()
		if dc, ok := d.pl.(DefenceCounters); ok {
			p.RemarkedPkts, p.MeteredPkts, p.SpoofDrops = dc.DefenceCounters(ps.num)
		}
		for q := range p.Queues {
			p.Queues[q].CEMarkedPkts = ps.ceMarks[q].Load()
		}
		ps.pfc.Count(p.Queues)
		s.Ports = append(s.Ports, p)
	}
	return s
}

// portCounters reads the port's rank_order drops, trimmed frames and the
// link time its shaper lost to late wake-ups.
func (t *tm) portCounters() (rankDrops, trimmed, lostNs uint64) {
	t.lock()
	defer t.unlock()
	return t.rankDrops, t.trimmed, uint64(t.shaper.lost)
}

// snapshot copies the per-queue counters under the port's lock; now is
// the dataplane's clock, for the time a queue has been paused.
func (t *tm) snapshot(now int64) []switchstats.Queue {
	qs := make([]switchstats.Queue, NumQueues)
	t.lock()
	defer t.unlock()
	for q := range NumQueues {
		st := &t.st[q]
		qs[q] = switchstats.Queue{
			Queue:       q,
			EnqPkts:     st.enqPkts,
			EnqBytes:    st.enqBytes,
			SentPkts:    st.sentPkts,
			SentBytes:   st.sentBytes,
			DropPkts:    st.dropPkts,
			DropBytes:   st.dropBytes,
			DepthPkts:   t.depthPkts(q),
			DepthBytes:  st.depthBytes,
			PeakPkts:    st.peakPkts,
			PeakBytes:   st.peakBytes,
			DelayP50Us:  st.delay.percentile(0.50),
			DelayP99Us:  st.delay.percentile(0.99),
			DelayMaxUs:  st.delay.max,
			PFCPausedNs: t.pausedTotal(q, now),
		}
	}
	return qs
}
