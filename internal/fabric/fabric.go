// Package fabric is the one description of the emulated network that every
// part of a run reads: the rate of each link, the MTU, the framing a link
// charges per packet, the switches' queue depth and each host's switch and
// port. A run builds it once, after the topology is laid out; nothing else
// converts a link rate or adds framing bytes.
package fabric

import (
	"time"

	"github.com/homatb/homatb/runfmt"
)

// Framing is what a packet takes on a link beyond its IP packet, as the
// embedded switch's shaper charges it (p4/dataplane/shaper.go): Ethernet
// header 14, FCS 4, preamble 8 and inter-frame gap 12.
const Framing = 38

// FrameBytes is what a packet of ipBytes takes on a link, framing included.
func FrameBytes(ipBytes int) int { return ipBytes + Framing }

// Host is one host of the fabric and where it attaches.
type Host struct {
	Name, IP string
	// Switch is the host's top-of-rack switch, Port its port there.
	Switch string
	Port   int
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
	// top-of-rack switches (2 in a leaf-spine).
	InterSwitchLinks int
	Hosts            []Host
}

// New returns a fabric of links at rateBps carrying packets of at most
// mtu bytes, framed as Framing says.
func New(rateBps uint64, mtu, queueDepthPkts int) *Fabric {
	return &Fabric{RateBps: rateBps, MTU: mtu, Framing: Framing, QueueDepthPkts: queueDepthPkts}
}

// BytesPerSecond is a link's rate in bytes per second.
func (f *Fabric) BytesPerSecond() float64 { return float64(f.RateBps) / 8 }

// Mbit is a link's rate in Mbit/s, as Mininet's TCLink takes it.
func (f *Fabric) Mbit() float64 { return float64(f.RateBps) / 1e6 }

// FramesPerSecond is a link's rate in MTU-sized frames per second.
func (f *Fabric) FramesPerSecond() int {
	return int(f.BytesPerSecond() / float64(f.MTU+f.Framing))
}

// WireTime is how long bytes of payload take to cross one link at its
// rate, framing not counted.
func (f *Fabric) WireTime(bytes int) time.Duration {
	return time.Duration(float64(bytes) * 8 / float64(f.RateBps) * float64(time.Second))
}

// RateFor is the rate in messages per second that offers load (a fraction
// of a link) with messages of meanBytes.
func (f *Fabric) RateFor(load, meanBytes float64) float64 {
	return load * f.BytesPerSecond() / meanBytes
}

// Record is the fabric as manifest.json holds it.
func (f *Fabric) Record() *runfmt.Fabric {
	r := &runfmt.Fabric{LinkBps: f.RateBps, MTU: f.MTU, FrameOverhead: f.Framing, InterSwitchLinks: f.InterSwitchLinks}
	for _, h := range f.Hosts {
		r.Hosts = append(r.Hosts, runfmt.FabricHost{Name: h.Name, IP: h.IP, Switch: h.Switch})
	}
	return r
}
