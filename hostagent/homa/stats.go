package homa

import (
	"fmt"
	"sync/atomic"

	"github.com/homatb/homatb/wire"
)

// counters are written by whichever goroutine runs the protocol and read
// by Stats from any goroutine, hence atomics.
type counters struct {
	txPkts   [wire.NumTypes][wire.MaxPriorities]atomic.Uint64
	rxPkts   [wire.NumTypes][wire.MaxPriorities]atomic.Uint64
	txBytes  atomic.Uint64
	rxBytes  atomic.Uint64
	txBatch  atomic.Uint64
	rxBatch  atomic.Uint64
	grantsBy [wire.MaxPriorities]atomic.Uint64
	fifo     atomic.Uint64

	malformed, unknownRPC, dupData, retransmits           atomic.Uint64
	resendsSent, resendsRecv, busySent, restarts          atomic.Uint64
	timeouts, backlogDrops, writeErrors, acked            atomic.Uint64
	callsDone, callsFailed, served, cutoffVersion         atomic.Uint64
	active, activeMax, incomingBytes, pacerWaits, trimmed atomic.Uint64
	polled, spinRead                                      atomic.Uint64
	pacerLateNs                                           atomic.Uint64
	clientRPCs, serverRPCs                                atomic.Uint64
	// roce: CNPs, NAKs, packets out of sequence, DCQCN rate cuts and
	// go-back-N timeouts.
	cnpSent, cnpRecv, naksSent, naksRecv  atomic.Uint64
	outOfSequence, rateCuts, roceTimeouts atomic.Uint64
	// roce: PFC PAUSE frames and resumes obeyed, and the time data
	// stood paused (ns).
	pausesRecv, resumesRecv, pausedNs atomic.Uint64
	drops                             [NumDropReasons]atomic.Uint64
}

func (c *counters) setActive(n int) {
	c.active.Store(uint64(n))
	if uint64(n) > c.activeMax.Load() {
		c.activeMax.Store(uint64(n))
	}
}

// Stats is a snapshot of an Endpoint's counters.
type Stats struct {
	// TxPackets and RxPackets count packets by type (index Type-TypeData)
	// and priority.
	TxPackets, RxPackets [wire.NumTypes][wire.MaxPriorities]uint64
	TxBytes, RxBytes     uint64
	// TxBatches and RxBatches count syscalls (or in-memory batches);
	// PolledBatches are the receive batches a waiting Call or Receive
	// read itself (homaconf.Config.Poll), SpinBatches those the pacer read while
	// it spun.
	TxBatches, RxBatches, PolledBatches, SpinBatches uint64
	// GrantsByPriority counts GRANTs sent, by priority; FIFOGrants those
	// sent to the oldest message.
	GrantsByPriority [wire.MaxPriorities]uint64
	FIFOGrants       uint64
	// Malformed packets were dropped as malformed (the reasons of Drops
	// that are DropReason.Malformed); UnknownRPC packets named no RPC;
	// DuplicateData carried bytes already received.
	Malformed, UnknownRPC, DuplicateData uint64
	// Drops counts the packets dropped, by DropReason.
	Drops [NumDropReasons]uint64
	// Retransmits counts DATA packets sent again for a RESEND.
	Retransmits                                         uint64
	ResendsSent, ResendsReceived, BusySent, Restarts    uint64
	Timeouts, BacklogDrops, WriteErrors, Acked          uint64
	CallsCompleted, CallsFailed, Served, CutoffsVersion uint64
	// ActiveMessages is the scheduler's active set now; ActiveMax its peak.
	ActiveMessages, ActiveMax uint64
	// IncomingBytes is granted-but-unreceived bytes now.
	IncomingBytes uint64
	// PacerWaits counts times the pacer held a packet for the link.
	PacerWaits uint64
	// PacerLateNs is the link time, in ns, the host's NIC idled with
	// DATA held by the pacer, by the pacer's own estimate of the link
	// (which drains at 99% of the rate, so the real idle time is at
	// least this): its wake-ups that came after the queue ran dry, the
	// machine's scheduling delay, not the protocol's.
	PacerLateNs uint64
	// Trimmed counts DATA packets that arrived trimmed (NDP) and were
	// NACKed.
	Trimmed uint64
	// ClientRPCs and ServerRPCs are the RPCs the Endpoint holds state for,
	// as of its last tick: Calls not yet returned, and requests or
	// responses of its servers not yet forgotten.
	ClientRPCs, ServerRPCs uint64
	// The roce variant's: CNPs sent (for CE-marked packets) and received,
	// NAKs sent and received, SEND packets dropped out of sequence, DCQCN
	// rate cuts, and timeouts that sent a queue pair back to its oldest
	// unacknowledged packet.
	CNPsSent, CNPsReceived, NAKsSent, NAKsReceived uint64
	OutOfSequence, RateCuts, RoCETimeouts          uint64
	// PFC PAUSE frames (and resumes) for the data's priority the
	// Endpoint obeyed, and how long, in ns, its data stood paused.
	PausesReceived, ResumesReceived, PausedNs uint64
}

func (c *counters) snapshot() Stats {
	var s Stats
	for t := range wire.NumTypes {
		for p := range wire.MaxPriorities {
			s.TxPackets[t][p] = c.txPkts[t][p].Load()
			s.RxPackets[t][p] = c.rxPkts[t][p].Load()
		}
	}
	for p := range wire.MaxPriorities {
		s.GrantsByPriority[p] = c.grantsBy[p].Load()
	}
	s.TxBytes, s.RxBytes = c.txBytes.Load(), c.rxBytes.Load()
	s.TxBatches, s.RxBatches, s.PolledBatches, s.SpinBatches = c.txBatch.Load(), c.rxBatch.Load(), c.polled.Load(), c.spinRead.Load()
	s.FIFOGrants = c.fifo.Load()
	s.Malformed, s.UnknownRPC, s.DuplicateData = c.malformed.Load(), c.unknownRPC.Load(), c.dupData.Load()
	s.Retransmits = c.retransmits.Load()
	s.ResendsSent, s.ResendsReceived, s.BusySent, s.Restarts = c.resendsSent.Load(), c.resendsRecv.Load(), c.busySent.Load(), c.restarts.Load()
	s.Timeouts, s.BacklogDrops, s.WriteErrors, s.Acked = c.timeouts.Load(), c.backlogDrops.Load(), c.writeErrors.Load(), c.acked.Load()
	s.CallsCompleted, s.CallsFailed, s.Served, s.CutoffsVersion = c.callsDone.Load(), c.callsFailed.Load(), c.served.Load(), c.cutoffVersion.Load()
	s.ActiveMessages, s.ActiveMax, s.IncomingBytes = c.active.Load(), c.activeMax.Load(), c.incomingBytes.Load()
	s.PacerWaits, s.PacerLateNs = c.pacerWaits.Load(), c.pacerLateNs.Load()
	s.Trimmed = c.trimmed.Load()
	s.ClientRPCs, s.ServerRPCs = c.clientRPCs.Load(), c.serverRPCs.Load()
	s.CNPsSent, s.CNPsReceived, s.NAKsSent, s.NAKsReceived = c.cnpSent.Load(), c.cnpRecv.Load(), c.naksSent.Load(), c.naksRecv.Load()
	s.OutOfSequence, s.RateCuts, s.RoCETimeouts = c.outOfSequence.Load(), c.rateCuts.Load(), c.roceTimeouts.Load()
	s.PausesReceived, s.ResumesReceived, s.PausedNs = c.pausesRecv.Load(), c.resumesRecv.Load(), c.pausedNs.Load()
	for r := range s.Drops {
		s.Drops[r] = c.drops[r].Load()
	}
	return s
}

// Map flattens s into named counters for reports, e.g. "tx_data_p3",
// "rx_grant_p7", "resends_sent", "drop_wrong_peer". Zero per-priority
// counters are left out; every drop reason is present.
func (s Stats) Map() map[string]uint64 {
	m := map[string]uint64{
		"tx_bytes": s.TxBytes, "rx_bytes": s.RxBytes, "tx_batches": s.TxBatches, "rx_batches": s.RxBatches, "polled_batches": s.PolledBatches,
		"spin_batches": s.SpinBatches,
		"fifo_grants":  s.FIFOGrants, "malformed": s.Malformed, "unknown_rpc": s.UnknownRPC,
		"duplicate_data": s.DuplicateData, "retransmits": s.Retransmits, "resends_sent": s.ResendsSent,
		"resends_received": s.ResendsReceived, "busy_sent": s.BusySent, "restarts": s.Restarts,
		"timeouts": s.Timeouts, "backlog_drops": s.BacklogDrops, "write_errors": s.WriteErrors,
		"acked": s.Acked, "calls_completed": s.CallsCompleted, "calls_failed": s.CallsFailed,
		"served": s.Served, "cutoffs_version": s.CutoffsVersion, "active_messages": s.ActiveMessages,
		"active_max": s.ActiveMax, "incoming_bytes": s.IncomingBytes, "pacer_waits": s.PacerWaits, "pacer_late_ns": s.PacerLateNs,
	}
	for r, v := range s.Drops {
		m["drop_"+DropReason(r).String()] = v
	}
	if s.Trimmed != 0 { // NDP only: Homa's counters stay as they were
		m["trimmed"] = s.Trimmed
	}
	for k, v := range map[string]uint64{"cnps_sent": s.CNPsSent, "cnps_received": s.CNPsReceived, "naks_sent": s.NAKsSent,
		"naks_received": s.NAKsReceived, "out_of_sequence": s.OutOfSequence, "rate_cuts": s.RateCuts, "roce_timeouts": s.RoCETimeouts,
		"pfc_pauses_received": s.PausesReceived, "pfc_resumes_received": s.ResumesReceived, "pfc_paused_us": s.PausedNs / 1e3} {
		if v != 0 { // RoCE only
			m[k] = v
		}
	}
	for t := range wire.NumTypes {
		name := (wire.TypeData + wire.Type(t)).String()
		for p := range wire.MaxPriorities {
			if v := s.TxPackets[t][p]; v != 0 {
				m[fmt.Sprintf("tx_%s_p%d", name, p)] = v
			}
			if v := s.RxPackets[t][p]; v != 0 {
				m[fmt.Sprintf("rx_%s_p%d", name, p)] = v
			}
		}
	}
	for p, v := range s.GrantsByPriority {
		if v != 0 {
			m[fmt.Sprintf("grants_p%d", p)] = v
		}
	}
	return m
}
