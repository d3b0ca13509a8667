// Package hostqdisc divides an emulated host's link between Homa and TCP
// (host_qdisc: pacer): two classes under the link's htb shaper, each
// guaranteed half the link and allowed to borrow all of it, Homa's served
// first, and u32 filters placing Homa's packets (IP protocol 146) in its
// class and every other packet in TCP's. It is the emulated counterpart of
// the twin's host queue (simnet.Qdisc), built of what this kernel has:
// htb and u32, no BPF qdisc, prio or mqprio.
package hostqdisc

import "fmt"

// HomaProtocol is the IP protocol number of Homa's packets, the engine's
// and HomaModule's.
const HomaProtocol = 146

// Minor numbers of the classes the plan adds under the link's class.
const (
	HomaMinor = 0x10
	TCPMinor  = 0x20
)

// Class is one htb class of the plan.
type Class struct {
	// Minor is the class's minor number; its major is the root's.
	Minor uint16
	// RateBps is what the class is guaranteed, CeilBps what it may take
	// by borrowing, in bits a second.
	RateBps, CeilBps uint64
	// Prio orders the classes that may send: 0 first.
	Prio uint32
	// BurstBytes is the bucket at rate and at ceil (Mininet's 15 kB).
	BurstBytes uint32
	// QuantumBytes is what the class sends a turn among classes of one
	// prio: one frame.
	QuantumBytes uint32
}

// Plan is how one host's link is divided.
type Plan struct {
	Homa, TCP Class
}

// Burst is Mininet's htb burst on a host link (TCIntf: burst 15k), which
// the classes keep.
const Burst = 15000

// NewPlan divides a link of linkBps bits a second with frames of mtu bytes
// of IP (plus 14 of Ethernet header): half guaranteed to each class,
// either may borrow the whole link, and Homa's is served first, so when
// both are backlogged each gets half, as homa_qdisc's homa_share of 50 does.
func NewPlan(linkBps uint64, mtu int) (Plan, error) {
	if linkBps < 2 {
		return Plan{}, fmt.Errorf("hostqdisc: link rate %d bit/s: expected a rate to divide", linkBps)
	}
	if mtu < 68 || mtu > 65535 {
		return Plan{}, fmt.Errorf("hostqdisc: MTU %d: expected 68 to 65535", mtu)
	}
	frame := uint32(mtu + 14)
	half := linkBps / 2
	c := func(minor uint16, prio uint32) Class {
		return Class{Minor: minor, RateBps: half, CeilBps: linkBps, Prio: prio, BurstBytes: max(Burst, frame), QuantumBytes: frame}
	}
	return Plan{Homa: c(HomaMinor, 0), TCP: c(TCPMinor, 1)}, nil
}

// Classes are the plan's classes, Homa's first.
func (p Plan) Classes() []Class { return []Class{p.Homa, p.TCP} }

// Counters are one class's counters since it was made.
type Counters struct {
	Bytes, Packets, Drops uint64
	// Backlog is the packets queued in the class when read.
	Backlog uint32
}

// Stats are the counters of a host's two classes.
type Stats struct {
	Homa, TCP Counters
}

// Map names s's counters as a host's transport counters (those of the
// twin's host queue where they mean the same: qdisc_homa_bytes,
// qdisc_tcp_bytes), differenced against since.
func (s Stats) Map(since Stats) map[string]uint64 {
	return map[string]uint64{
		"qdisc_homa_bytes": s.Homa.Bytes - since.Homa.Bytes, "qdisc_tcp_bytes": s.TCP.Bytes - since.TCP.Bytes,
		"qdisc_homa_packets": s.Homa.Packets - since.Homa.Packets, "qdisc_tcp_packets": s.TCP.Packets - since.TCP.Packets,
		"qdisc_homa_drops": s.Homa.Drops - since.Homa.Drops, "qdisc_tcp_drops": s.TCP.Drops - since.TCP.Drops,
	}
}
