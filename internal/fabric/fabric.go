// Package fabric is the one description of the emulated network that every
// part of a run reads: the rate of each link, the MTU, the framing a link
// charges per packet, the switches' queue depth and each host's switch and
// port. A run builds it once, after the topology is laid out; nothing else
// converts a link rate or adds framing bytes.
package fabric

import "time"

const (
	// EthernetHeader is the Ethernet header's length: what a frame holds
	// beyond its IP packet.
	EthernetHeader = 14
	// WireOverhead is what a frame costs on the wire beyond its bytes:
	// preamble and start delimiter 8, inter-frame gap 12, FCS 4.
	WireOverhead = 8 + 12 + 4
	// Framing is what a packet takes on a link beyond its IP packet, as
	// the embedded switch's shaper charges it (p4/dataplane/shaper.go).
	Framing = EthernetHeader + WireOverhead
)

// FrameBytes is what a packet of ipBytes takes on a link, framing included.
func FrameBytes(ipBytes int) int { return ipBytes + Framing }

// Host is one host of the fabric and where it attaches.
type Host struct {
	Name, IP string
	// Switch is the host's top-of-rack switch, Port its port there.
	Switch string
	Port   int
	// Pod is the host's pod in a fat tree (from 1; 0 elsewhere).
	Pod int
}

// Fabric describes the laid-out network. Every link runs at RateBps.
type Fabric struct {
	RateBps uint64
	MTU     int
	// Framing is the bytes a link charges per packet beyond the IP packet.
	Framing int
	// QueueDepthPkts is each switch egress queue's depth in packets.
	QueueDepthPkts int
	// InterSwitchLinks is how many links a packet crosses between two
	// top-of-rack switches (2 in a leaf-spine; 4 between a fat tree's
	// pods).
	InterSwitchLinks int
	// PodLinks is how many links a packet crosses between two edge
	// switches of one pod (2 in a fat tree; 0: no pods).
	PodLinks int
	// UplinkBps is the rate of the links between switches; zero means
	// RateBps (Uplink).
	UplinkBps uint64
	// CoreBps is the rate of a fat tree's aggregation-to-core links; zero
	// means Uplink (Core).
	CoreBps uint64
	// EdgeUplinks is how many links join each top-of-rack switch to the
	// tier above (a leaf's spines, a fat tree edge's aggregation
	// switches; 0 on a star), PodUplinks how many join each fat tree pod
	// to the cores (0: no pods). With the hosts' switches and pods they
	// say what a collective's own traffic puts on the fabric.
	EdgeUplinks, PodUplinks int
	Hosts                   []Host
}

// Core is the rate of a fat tree's aggregation-to-core links.
func (f *Fabric) Core() uint64 {
	if f.CoreBps != 0 {
		return f.CoreBps
	}
	return f.Uplink()
}

// PathRates are the rates of the links between switches on the longest
// path between two hosts, in order: none on a star, two uplinks on a
// leaf-spine, uplink, core, core, uplink on a fat tree.
func (f *Fabric) PathRates() []uint64 {
	out := make([]uint64, f.InterSwitchLinks)
	for i := range out {
		out[i] = f.Uplink()
		if f.PodLinks > 0 && i > 0 && i < len(out)-1 {
			out[i] = f.Core()
		}
	}
	return out
}

// Uplink is the rate of the links between switches.
func (f *Fabric) Uplink() uint64 {
	if f.UplinkBps != 0 {
		return f.UplinkBps
	}
	return f.RateBps
}

// New returns a fabric of links at rateBps carrying packets of at most
// mtu bytes, framed as Framing says.
func New(rateBps uint64, mtu, queueDepthPkts int) *Fabric {
	return &Fabric{RateBps: rateBps, MTU: mtu, Framing: Framing, QueueDepthPkts: queueDepthPkts}
}

// BytesPerSecond is a link's rate in bytes per second.
func (f *Fabric) BytesPerSecond() float64 { return BytesPerSecond(f.RateBps) }

// BytesPerSecond converts a rate in bits per second to bytes per second,
// for the scenario's checks, which run before any fabric is laid out.
func BytesPerSecond(rateBps uint64) float64 { return float64(rateBps) / 8 }

// WireTime is how long bytes take at rateBps, framing not counted.
func WireTime(rateBps uint64, bytes int) time.Duration {
	return time.Duration(float64(bytes) * 8 / float64(rateBps) * float64(time.Second))
}

// RateFor is the rate in messages per second that offers load (a fraction
// of a link at rateBps) with messages of meanBytes.
func RateFor(rateBps uint64, load, meanBytes float64) float64 {
	return load * BytesPerSecond(rateBps) / meanBytes
}

// Mbit is a link's rate in Mbit/s, as Mininet's TCLink takes it.
func (f *Fabric) Mbit() float64 { return float64(f.RateBps) / 1e6 }

// FramesPerSecond is a link's rate in MTU-sized frames per second.
func (f *Fabric) FramesPerSecond() int {
	return int(f.BytesPerSecond() / float64(f.MTU+f.Framing))
}

// WireTime is how long bytes of payload take to cross one link at its
// rate, framing not counted.
func (f *Fabric) WireTime(bytes int) time.Duration { return WireTime(f.RateBps, bytes) }

// RateFor is the rate in messages per second that offers load (a fraction
// of a link) with messages of meanBytes.
func (f *Fabric) RateFor(load, meanBytes float64) float64 {
	return RateFor(f.RateBps, load, meanBytes)
}
