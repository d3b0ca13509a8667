// Package tcpmodel is a model of the kernel's TCP for the simulator (homatb
// run --simulate), not TCP itself: RPCs over persistent byte-stream
// connections framed as hostagent/tcprpc frames them, segmented at the MSS,
// acknowledged per segment or with delayed ACKs, with slow start and
// congestion avoidance, and loss recovery as Linux does it by default
// (tcp_sack=1, tcp_recovery=1): receivers report what they hold beyond a
// hole in SACK blocks (RFC 2018), the sender keeps a scoreboard and sends
// while its estimate of the bytes in the network (pipe) is below the window
// (RFC 6675), RACK marks a segment lost once a segment sent after it has
// been delivered and a round trip (and a reordering window) has passed,
// a lost retransmission too, a tail loss probe two round trips after the
// last send exposes losses at a window's end (RFC 8985), and a
// retransmission timeout with Linux's 200 ms floor remains the last
// resort. One of four window laws: Reno (which stands in for Linux's
// default, cubic), DCTCP (ECN-capable data, the receiver echoing the CE
// state of what it acknowledges, alpha with g = 1/16), BIC or TCP-NV
// (laws.go). PIAS tags each data
// segment's DSCP by the bytes its direction has sent, with
// hostagent/pias's thresholds and idle restart.
//
// The model is a state machine on its caller's clock: every entry point
// takes the virtual time now (ns), it starts no goroutine, reads no wall
// clock and takes no lock, and it hands segments to its caller
// synchronously, allocating nothing per segment once its buffers have
// grown. docs/simulation.md lists where it departs from the kernel.
package tcpmodel

import (
	"fmt"
	"time"
)

// Law is a congestion window law.
type Law uint8

const (
	// Reno is RFC 5681's window law: slow start, one segment per window in
	// congestion avoidance, halving on loss.
	Reno Law = iota
	// DCTCP is RFC 8257's: Reno's growth and loss response, and once per
	// window of ECN echoes cwnd <- cwnd (1 - alpha/2).
	DCTCP
	// BIC is binary increase congestion control (Xu, Harfoush and Rhee,
	// INFOCOM 2004) with Linux tcp_bic's defaults: after a loss the window
	// goes to 0.8 of itself and grows back by a binary search toward the
	// window of the loss, then probes beyond it; Reno at or below 14
	// segments.
	BIC
	// NV is TCP-NV (Brakmo) with Linux tcp_nv's defaults: Reno's growth
	// while the window is within 10 segments of what the best rate of a
	// round needs at the smallest RTT, a cut of 30% of the excess beyond
	// that, and 0.8 of the window on a loss.
	NV
)

func (l Law) String() string {
	switch l {
	case DCTCP:
		return "dctcp"
	case BIC:
		return "bic"
	case NV:
		return "nv"
	}
	return "reno"
}

// LawOf is the model's law for a scenario's tcp.congestion: "dctcp",
// "bic" and "nv" are their laws; "reno", "cubic" and "" (the kernel's
// default, cubic) are Reno. bbr the model does not have.
func LawOf(congestion string) (Law, error) {
	switch congestion {
	case "dctcp":
		return DCTCP, nil
	case "bic":
		return BIC, nil
	case "nv":
		return NV, nil
	case "reno", "cubic", "":
		return Reno, nil
	}
	return Reno, fmt.Errorf("tcp congestion %q: the simulator's TCP model has reno (also standing in for cubic), dctcp, bic and nv", congestion)
}

// PIAS is the tagging by bytes sent (hostagent/pias.Config's meaning).
type PIAS struct {
	// Thresholds are the demotion thresholds in bytes, ascending: a segment
	// that leaves after its direction has sent fewer than Thresholds[0]
	// bytes is at level 0, after at least Thresholds[i-1] at level i.
	Thresholds []uint64
	// DSCP is each level's DSCP, len(Thresholds)+1 values.
	DSCP []uint8
	// IdleReset restarts a direction's count when it sends data after
	// sending none for longer than this (0: never).
	IdleReset time.Duration
	// PerMessage levels a segment by the offset of its first byte in its
	// message instead of by the bytes its direction has sent: each
	// message is a flow, as in the PIAS paper's ns-2 agents (and the Homa
	// paper's runs of them), which restart the count at every message
	// they are handed on a pooled connection. The tc program cannot see
	// where a message begins on a stream and restarts after IdleReset of
	// silence instead; with PerMessage, IdleReset is unused and a
	// retransmission keeps its original level.
	PerMessage bool
}

// Config configures every connection of a host.
type Config struct {
	// MSS is a segment's payload bytes at most (the MTU less the IPv4 and
	// TCP headers).
	MSS int
	// Law is the congestion window law.
	Law Law
	// InitCwnd is the initial window in segments (default 10, Linux's).
	InitCwnd int
	// MinRTO is the retransmission timeout's floor (default 200 ms,
	// Linux's TCP_RTO_MIN); InitRTO the timeout before the first RTT
	// sample (default 1 s, TCP_TIMEOUT_INIT).
	MinRTO, InitRTO time.Duration
	// DelayedAck has receivers ACK every second full segment (and at once
	// out of order, on a CE change, or with data going back) instead of
	// every segment, the rest after DelAckTimeout (default 40 ms, Linux's
	// TCP_DELACK_MIN) if no data carries the ACK sooner.
	DelayedAck    bool
	DelAckTimeout time.Duration
	// ConnsPerPeer is how many connections a client opens to each server
	// (default 1, tcprpc's), used in turn.
	ConnsPerPeer int
	// OpenWhenBusy has a call take an idle connection to its server (one
	// with no call outstanding), the first opened first, and open another
	// when every one is busy, up to MaxConnsPerPeer: the pool per pair of
	// hosts of pFabric's and PIAS's ns-2 simulations, where a message
	// never waits behind another on its connection. ConnsPerPeer are
	// opened at the first call.
	OpenWhenBusy bool
	// DSCP is the DSCP of every segment without PIAS (the kernel's 0).
	DSCP uint8
	// PIAS, when set, tags data segments by bytes sent instead.
	PIAS *PIAS
}

// MaxConnsPerPeer bounds a client's connections to one server with
// Config.OpenWhenBusy (tcprpc's bound on connections per peer); past it,
// calls take the connections in turn.
const MaxConnsPerPeer = 1024

// withDefaults fills the zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.MSS <= 0 {
		return c, fmt.Errorf("tcpmodel: MSS %d: expected > 0", c.MSS)
	}
	if c.InitCwnd == 0 {
		c.InitCwnd = 10
	}
	if c.MinRTO == 0 {
		c.MinRTO = 200 * time.Millisecond
	}
	if c.InitRTO == 0 {
		c.InitRTO = time.Second
	}
	if c.ConnsPerPeer == 0 {
		c.ConnsPerPeer = 1
	}
	if c.DelAckTimeout == 0 {
		c.DelAckTimeout = 40 * time.Millisecond
	}
	if p := c.PIAS; p != nil && len(p.DSCP) != len(p.Thresholds)+1 {
		return c, fmt.Errorf("tcpmodel: PIAS has %d DSCPs for %d thresholds, want one per level", len(p.DSCP), len(p.Thresholds))
	}
	return c, nil
}

// Segment is one TCP segment as the model sends and receives it: what its
// header carries (ports, sequence and acknowledgement numbers, the ACK,
// ECE and CWR flags, the IP header's TOS byte) and its payload's length.
// The payload's bytes are not modelled.
type Segment struct {
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            uint8
	TOS              uint8
	Len              int
	// SACK holds the segment's SACK blocks, NSACK of them (the SACK
	// option, OptionsLen bytes after the fixed header).
	SACK  [MaxSACKBlocks]SACKBlock
	NSACK uint8
}

// TCP header flags the model uses.
const (
	FlagSYN = 0x02
	FlagACK = 0x10
	FlagECE = 0x40
	FlagCWR = 0x80
)

// ECN codepoints in the TOS byte's low two bits.
const (
	ecnMask = 3
	ect0    = 2
	ecnCE   = 3
)

// HeaderLen is a segment's fixed TCP header, before its options.
const HeaderLen = 20

// framing is tcprpc's length prefix on every message.
const framing = 4
