package workloads

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Schedule yields the intended send times of an open-loop client as offsets
// from the client's start. The schedule never looks at completions, so a
// slow server cannot slow the offered load down (no coordinated omission).
type Schedule interface {
	// Next returns the offset of the next intended send.
	Next(r *rand.Rand) time.Duration
}

// Poisson is an open-loop Poisson arrival process.
type Poisson struct {
	rate float64 // RPCs per second
	at   float64 // seconds since start of the last arrival
}

// NewPoisson returns Poisson arrivals at rateRPS requests per second.
func NewPoisson(rateRPS float64) (*Poisson, error) {
	if !(rateRPS > 0) || math.IsInf(rateRPS, 0) {
		return nil, fmt.Errorf("poisson rate %v RPC/s: expected a positive finite rate", rateRPS)
	}
	return &Poisson{rate: rateRPS}, nil
}

// Next advances by an exponential inter-arrival time. Offsets accumulate in
// float seconds so that rounding to nanoseconds does not bias the rate.
func (p *Poisson) Next(r *rand.Rand) time.Duration {
	p.at += r.ExpFloat64() / p.rate
	return time.Duration(p.at * 1e9)
}

// Bursts sends at fixed instants k*interval (plus a uniform jitter in
// [0, jitter)), the same for every client that shares the start time, so N
// clients form an incast burst.
type Bursts struct {
	interval, jitter time.Duration
	k                int64
}

// NewBursts returns a burst schedule; jitter must be below the interval.
func NewBursts(interval, jitter time.Duration) (*Bursts, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("burst interval %v: expected a positive interval", interval)
	}
	if jitter < 0 || jitter >= interval {
		return nil, fmt.Errorf("burst jitter %v: expected 0 <= jitter < interval %v", jitter, interval)
	}
	return &Bursts{interval: interval, jitter: jitter}, nil
}

// Next returns the next burst instant.
func (b *Bursts) Next(r *rand.Rand) time.Duration {
	t := time.Duration(b.k) * b.interval
	b.k++
	if b.jitter > 0 {
		t += time.Duration(r.Int64N(int64(b.jitter)))
	}
	return t
}

// Overhead describes the bytes a transport adds on the wire, used to turn
// a load fraction into a request rate.
type Overhead struct {
	// PerPacket is the header bytes per packet (Ethernet framing, IP and
	// transport headers).
	PerPacket int
	// Payload is the message bytes carried per packet.
	Payload int
}

// EthernetFraming is the bytes Ethernet adds per frame on the wire:
// header 14, FCS 4, preamble and start delimiter 8, inter-frame gap 12.
const EthernetFraming = 38

// TCPOverhead is the per-packet overhead of TCP over IPv4 on Ethernet with
// a 1500-byte MTU (20 IP + 20 TCP + 12 timestamp option).
func TCPOverhead() Overhead {
	return Overhead{PerPacket: EthernetFraming + 52, Payload: 1500 - 52}
}

// HomaOverhead is the per-packet overhead of Homa DATA packets over IPv4
// on Ethernet with a 1500-byte MTU (20 IP + 60 Homa data header).
func HomaOverhead() Overhead {
	return Overhead{PerPacket: EthernetFraming + 80, Payload: 1500 - 80}
}

// WireBytes is the expected bytes on the wire of one message drawn from d.
func (o Overhead) WireBytes(d SizeDist) float64 {
	return d.Mean() + PacketsMean(d, o.Payload)*float64(o.PerPacket)
}

// RateForLoad returns the request rate (RPC/s) at which one client offers
// load (a fraction of linkBps, counting protocol overhead on the wire as
// cperf counts Gbps of traffic) with requests drawn from d. Both directions
// carry the same bytes when servers echo, so the fraction applies to the
// client's uplink.
func RateForLoad(load, linkBps float64, d SizeDist, o Overhead) (float64, error) {
	if !(load > 0) || load > 1 {
		return 0, fmt.Errorf("load %v: expected a fraction of the link rate in (0, 1]", load)
	}
	if !(linkBps > 0) || math.IsInf(linkBps, 0) {
		return 0, fmt.Errorf("link rate %v bit/s: expected a positive rate", linkBps)
	}
	return load * linkBps / 8 / o.WireBytes(d), nil
}

// ClosedLoop is a closed-loop client: Outstanding RPCs are always in
// flight, a new one is issued as soon as one completes.
type ClosedLoop struct {
	Outstanding int
}

// NewClosedLoop validates the outstanding-RPC limit.
func NewClosedLoop(outstanding int) (ClosedLoop, error) {
	if outstanding <= 0 {
		return ClosedLoop{}, fmt.Errorf("closed loop with %d outstanding RPCs: expected at least 1", outstanding)
	}
	return ClosedLoop{Outstanding: outstanding}, nil
}
