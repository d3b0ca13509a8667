// Package homaconf holds the configuration of a Homa endpoint: its
// fields, their defaults and limits (WithDefaults, the one validation),
// and the keys a scenario names them by (keys.go). Scenarios decode into
// Config and the agent's control API carries it, so the testbed's
// validation and the agent agree by construction. It imports neither the
// protocol engine (package homa) nor the agent's API, so scenario
// validation can check a configuration without linking either.
package homaconf

import (
	"time"

	"github.com/homatb/homatb/wire"
)

// Config holds the parameters of a homa.Endpoint; a zero field means the
// documented default. A new setting is one field here with its doc
// comment and its `homa:"key"` tag: scenarios, the agent's control API
// (agentpb.HomaParams) and validation follow from it.
type Config struct {
	// Variant is the transport the engine runs: Homa (the default), or
	// one of the comparison transports of issue #20 as a policy over the
	// same engine (docs/transports.md): VariantPFabric, VariantPHost,
	// VariantNDP.
	Variant Variant `homa:"variant"`
	// LinkBps is the host link rate in bit/s (default 1 Gbit/s). The pacer
	// runs 1% below it; it also sizes the default UnschedBytes.
	LinkBps uint64
	// UnloadedRTT is the measured unloaded round-trip time (default 100 µs).
	UnloadedRTT time.Duration
	// UnschedBytes a sender sends without grants (default LinkBps x
	// UnloadedRTT plus two MTUs, rounded up to whole packets: what the
	// testbed's calibration computes from its measured 100 B RTT, since a
	// full packet's RTT adds its serialisation on the two links of a
	// rack. Without the two MTUs, a 20 Mbit/s link with the default RTT
	// got one packet, a window of one packet per message, and each lost
	// DATA or GRANT stopped its message for a whole RESEND interval).
	UnschedBytes uint32 `homa:"unsched_bytes"`
	// CreditWindow (pHost and NDP) is the round trip of their credit loop
	// in bytes (default UnschedBytes, the unloaded one): what a message
	// sends blind (NDP's initial window, which its PULLs then keep in
	// flight; on pHost, a message of at most this many bytes, sent whole
	// on free tokens, where a longer one sends none) and, on pHost, its
	// token window (a message with this much of its tokens and blind bytes
	// unused gets no more). A host that sends while it receives (a ring's) queues its
	// tokens and PULLs behind its own DATA, in its NIC (MaxNICBacklog and
	// the packet on its wire) and on the switch port toward the sender
	// (the packet being sent); a window of the unloaded round trip then
	// runs dry and the sender's link idles. Such a scenario sets it to
	// UnschedBytes plus what the link carries in that wait
	// (docs/scenarios.md, "Collectives"). The default stays the unloaded
	// round trip because the window goes blind into incasts, where a wider
	// one overflows or is trimmed (docs/transports.md). Rounded up to
	// whole packets.
	CreditWindow uint32 `homa:"credit_window_bytes"`
	// Overcommit is the number of inbound messages granted at once (1..8,
	// default 8).
	Overcommit int `homa:"overcommit"`
	// Priorities in use: 1, 2, 4 or 8 (default 8).
	Priorities int `homa:"priorities"`
	// Basic disables priorities and overcommitment limits: every message
	// is active and gets a window of WindowBytes (or UnschedBytes).
	Basic bool `homa:"basic"`
	// WindowBytes is a fixed grant window; 0 means MaxIncoming/(N+1) for N
	// active messages.
	WindowBytes uint32 `homa:"window_bytes"`
	// MaxIncoming bounds granted-but-unreceived bytes (default
	// (Overcommit+1) x UnschedBytes: with the dynamic window
	// MaxIncoming/(N+1), each of Overcommit active messages then keeps
	// UnschedBytes, one RTT of bytes, in flight, as the ATC-era design that
	// granted rtt_bytes per active message did; Overcommit x UnschedBytes
	// left each of them K/(K+1) of an RTT and the downlink partly idle).
	MaxIncoming uint32 `homa:"max_incoming"`
	// FIFOGrantPermille is the share of grants given to the oldest message
	// (default 50 = 5%); DisableFIFOGrants turns them off.
	FIFOGrantPermille int  `homa:"fifo_grant_permille"`
	DisableFIFOGrants bool `homa:"fifo_grants,not"`
	// FIFOGrantBytes is the size of one FIFO grant (default MaxIncoming/8,
	// Linux's 50,000 of its 400,000; rounded up to whole packets).
	FIFOGrantBytes uint32 `homa:"fifo_grant_bytes"`
	// GrantIncrement is the smallest step by which a GRANT advances a
	// message's granted offset, except the grant of its last bytes
	// (default one packet, as Linux). Larger steps send fewer GRANTs,
	// each a packet through the emulated switch, when the window holds
	// several packets.
	GrantIncrement uint32 `homa:"grant_increment"`
	// BoostTail: a grant made while fewer than UnschedBytes (one RTT of
	// bytes) of its message remain to be granted carries the unscheduled
	// level of a message that long, where that is above the scheduled
	// level its rank gives, so the last bytes of a long message travel as
	// a short message would (HomaSimulation's boostTailBytesPrio, set to
	// rttBytes in the Homa paper's runs, whose cutoffs also count those
	// bytes; homatb's do not: docs/homa.md). Off by default, as in Linux.
	BoostTail bool `homa:"boost_tail"`
	// Graduated: each unscheduled packet takes the level of the bytes its
	// message has left before it rather than of the message's length, and
	// cutoffs computed here split by those bytes left the bytes the
	// unscheduled levels carry (with BoostTail, a long message's boosted
	// last UnschedBytes too): HomaSimulation's STATIC_CBF_GRADUATED, the
	// Homa paper's runs. Off by default, as in Linux (docs/homa.md).
	Graduated bool `homa:"graduated"`
	// UnschedCutoffs are static cutoffs in Linux order (index = priority,
	// entry = largest length using it); empty means computed from the
	// message sizes this host receives.
	UnschedCutoffs []uint32 `homa:"unsched_cutoffs"`
	// SharedCutoffs says every host has the same UnschedCutoffs, so a
	// sender uses them for a peer before its first CUTOFFS, as the Homa
	// paper's simulator's senders did (one resolver for all); Linux's
	// sender uses its default level until then.
	SharedCutoffs bool `homa:"shared_cutoffs"`
	// CutoffSamples is how many new inbound messages trigger a
	// recomputation of dynamic cutoffs (default 1000).
	CutoffSamples int `homa:"cutoff_samples"`
	// MTU of the link (default 1500): DATA payload = MTU-20-56.
	MTU int
	// FrameOverhead is what the link charges per packet beyond the IP
	// packet, for the pacer's model of it: 42 on an Ethernet wire
	// (header, CRC, preamble, SFD, gap: Linux's HOMA_ETH_OVERHEAD, the
	// default), 14 on a veth shaped by htb or tbf, which charge the
	// Ethernet header only. Too high a value leaves the link idle part of
	// the time (42 on htb: 1.8% of it with full packets), too low a value
	// lets the host queue grow.
	FrameOverhead int `homa:"frame_overhead"`
	// Tick is the timer period; the following are in ticks. The default is
	// Linux's 1 ms at 1 Gbit/s and above, stretched in proportion on slower
	// links (10 ms at 100 Mbit/s, at most 20 ms): the same silence then
	// covers the same number of packet times, and an emulation's CPU is
	// not spent on ticks and RESENDs that Linux's timers would make ten
	// times as often, relative to the traffic, as they do on real links.
	// A 5 ms cap was tried for issue #29 (faster loss recovery at 20 Mbit/s:
	// short-message P99 under 10% loss 54 ms instead of 280 ms) and not
	// kept: in the lossless default incast at 50 Mbit/s it sent 4.5 times
	// the RESENDs and 6 times the retransmissions (5,200 and 700 per
	// experiment, against 1,150 and 120), since there a silence of 25 ms
	// is mostly a busy host, not a loss.
	Tick time.Duration `homa:"tick_us"`
	// ResendTicks of silence before the first RESEND (default 5).
	ResendTicks int `homa:"resend_ticks"`
	// ResendInterval between RESENDs (default ResendTicks).
	ResendInterval int `homa:"resend_interval"`
	// TimeoutTicks of silence before an RPC is aborted (default 100).
	TimeoutTicks int `homa:"timeout_ticks"`
	// RequestAckTicks after a response is sent before NEED_ACK (default 2).
	RequestAckTicks int `homa:"request_ack_ticks"`
	// IncastControl marks requests of a client with more than
	// IncastThreshold outstanding RPCs (default MaxIncoming/UnschedBytes)
	// so servers send at most IncastUnschedBytes (default one packet) of
	// the response unscheduled.
	IncastControl      bool   `homa:"incast_control"`
	IncastThreshold    int    `homa:"incast_threshold"`
	IncastUnschedBytes uint32 `homa:"incast_unsched_bytes"`
	// StartMsg: a message too long to go out unscheduled sends no
	// unscheduled bytes but a START_MSG (homatb's type 0x19) announcing
	// it, and the receiver grants it from byte 0, as HomaModule does
	// since September 2026 (docs/homa.md). Every Endpoint understands
	// START_MSG; this only decides whether it sends them.
	StartMsg bool `homa:"start_msg"`
	// AtLeastOnce selects the 2018 semantics: no ACKs; a server forgets an
	// RPC TimeoutTicks after its response was sent.
	AtLeastOnce bool `homa:"at_least_once"`
	// MaxMessageBytes bounds messages (default 1,000,000).
	MaxMessageBytes uint32 `homa:"max_message_bytes"`
	// MaxNICBacklog is how far ahead of the link the pacer lets the host
	// queue run (default the larger of 10 µs and four full packets); it
	// sleeps until half of it has drained.
	MaxNICBacklog time.Duration `homa:"max_nic_backlog_us"`
	// PacerSpin: pacer waits shorter than this poll instead of sleeping
	// (default 50 µs, negative: never poll). On raw sockets the pacer
	// sleeps on a timerfd, but a wake-up still comes tens of µs late on a
	// busy VM, longer than a 1 Gbit/s backlog lasts (goodput of one 1 MB
	// message: 0.65 of the link sleeping, 0.84 polling the short waits).
	// At 100 Mbit/s and below the waits are hundreds of µs and sleep, so
	// the polling costs no CPU there.
	PacerSpin time.Duration `homa:"pacer_spin_us,off"`
	// Poll is how long a homa Call or Server.Receive about to wait reads
	// the Conn itself first (Linux Homa's poll_usecs, 50 µs there), so the
	// packet it waits for is handled by the goroutine that needs it and
	// no other thread has to be woken: the 100 B RTT falls by 3-4 µs here,
	// to about 13 µs (docs/homa.md). One goroutine per
	// Endpoint polls at a time, and only Conns that are TryReaders can be
	// polled. Default 0, off: the testbed runs many hosts on few cores,
	// where a spinning waiter takes a core from the switch and the other
	// hosts.
	Poll time.Duration `homa:"poll_us"`
	// BypassBytes: messages with at most this many bytes left skip the
	// pacer (default 1000).
	BypassBytes uint32 `homa:"bypass_bytes"`
	// ClientPort is the source port of Calls (default 0x8000).
	ClientPort uint16 `homa:"client_port"`
	// TraceGrants records every GRANT of each Call in homa.CallInfo.Grants
	// (time, offset, priority, direction): an allocation per Call and a
	// few per message of many grants, so off by default. The agent's
	// records keep counts and first/last times only, so scenarios have no
	// key for it; programs using the package do.
	TraceGrants bool
	// ServerBacklog is the number of complete requests waiting for
	// Server.Receive before new ones are dropped (default 4096).
	ServerBacklog int `homa:"server_backlog"`
	// The roce variant's settings (docs/transports.md, "RoCE"): its queue
	// pairs, loss recovery, priorities and DCQCN. Zero means the default
	// WithDefaults fills in for the variant; the other variants ignore
	// them.
	//
	// RoCEQPsPerPeer is the number of reliable connections (queue pairs) to
	// each peer (default 1); an RPC uses the one its id selects, and
	// messages on one queue pair are delivered in order.
	RoCEQPsPerPeer int `homa:"roce_qps_per_peer"`
	// RoCEPriority is the level of data packets (default 3, the usual
	// lossless class: DSCP CS3); ACKs, NAKs and CNPs go at RoCECtrlPriority
	// (default 6: DSCP CS6, NVIDIA's CNP DSCP 48).
	RoCEPriority     int `homa:"roce_priority"`
	RoCECtrlPriority int `homa:"roce_ctrl_priority"`
	// RoCEGoBack0: a receiver that sees a packet out of sequence drops the
	// message it was assembling and the sender starts that message again
	// from its first packet, instead of go-back-N from the first missing
	// packet.
	RoCEGoBack0 bool `homa:"roce_go_back_0"`
	// RoCEAckEvery: the sender asks for an acknowledgement on every
	// RoCEAckEvery-th packet and on the last of each message (default 4).
	RoCEAckEvery int `homa:"roce_ack_every"`
	// RoCETimeoutTicks of no acknowledged progress with packets outstanding
	// before the sender goes back to the first unacknowledged one
	// (default TimeoutTicks/5).
	RoCETimeoutTicks int `homa:"roce_timeout_ticks"`
	// RoCENoDCQCN sends at line rate always (roce_dcqcn: false); by default
	// DCQCN sets each queue pair's rate.
	RoCENoDCQCN bool `homa:"roce_dcqcn,not"`
	// DCQCN's parameters (docs/transports.md lists each default, its
	// source and how it scales with LinkBps): the receiver's shortest
	// gap between CNPs for one queue pair; the sender's alpha update
	// interval, rate-increase timer and byte counter, gain g as 1/G,
	// fast-recovery steps F, additive and hyper increase steps and
	// lowest rate.
	DCQCNCNPInterval   time.Duration `homa:"roce_cnp_interval_us"`
	DCQCNAlphaInterval time.Duration `homa:"roce_alpha_interval_us"`
	DCQCNRateTimer     time.Duration `homa:"roce_rate_timer_us"`
	DCQCNByteCounter   uint32        `homa:"roce_byte_counter"`
	DCQCNGainInverse   int           `homa:"roce_g_inverse"`
	DCQCNFastRecovery  int           `homa:"roce_fast_recovery"`
	DCQCNAdditiveBps   uint64        `homa:"roce_ai_bps"`
	DCQCNHyperBps      uint64        `homa:"roce_hai_bps"`
	DCQCNMinRateBps    uint64        `homa:"roce_min_rate_bps"`
	// The uet variant's settings (docs/transports.md, "Ultra Ethernet
	// Transport"): priorities, acknowledgements, spraying, loss recovery
	// and NSCC. Zero means the default WithDefaults fills in for the
	// variant; the other variants refuse them.
	//
	// UETPriority is the level of data packets (default 3); ACKs, NACKs
	// and control packets go at UETCtrlPriority (default 6).
	UETPriority     int `homa:"uet_priority"`
	UETCtrlPriority int `homa:"uet_ctrl_priority"`
	// UETAckEvery: the sender asks for an ACK on every UETAckEvery-th
	// packet and on each message's last (default 1: every packet, which
	// gives NSCC a delay sample per packet).
	UETAckEvery int `homa:"uet_ack_every"`
	// UETEntropies is how many entropy values (UDP source ports) a
	// packet delivery context cycles through, one per packet (default
	// 64; 1: every packet of a PDC takes one path).
	UETEntropies int `homa:"uet_entropies"`
	// UETREPS recycles entropies as REPS does (Bonato et al., 2025): the
	// entropy of a packet whose ACK came back without an ECN mark is used
	// again for a later packet, before a new one; without it the entropies
	// go round in turn.
	UETREPS bool `homa:"uet_reps"`
	// UETBitmap has the rotation of entropies pass over those recently
	// penalised, as htsim's UEC sender does (UecMpBitmap; its default
	// load balancing, MIXED, is this beside uet_reps): an ECN-marked ACK
	// costs the packet's entropy 1, a trimmed packet's NACK 4, at most
	// 15, and the rotation skips an entropy while it has a penalty,
	// taking one off the first it passes.
	UETBitmap bool `homa:"uet_bitmap"`
	// UETReorderPkts: a packet not yet acknowledged is declared lost when
	// a packet sent this many PSNs after it has been (default 8).
	UETReorderPkts int `homa:"uet_reorder_pkts"`
	// UETSleek replaces UETReorderPkts' fixed count by the threshold of
	// SLEEK, the loss detection of htsim's UEC sender for fabrics that do
	// not trim: a packet is declared lost once packets 1.5 windows after
	// it (at most the window cap, at least 5 packets) were acknowledged,
	// so reordering within a window of spraying is not taken for loss.
	UETSleek bool `homa:"uet_sleek"`
	// UETNackQA answers a NACKed trim as htsim's NSCC does: a quick
	// adapt (the window becomes what the last period, a base round trip
	// and the target delay, delivered) when that was under an eighth of
	// the cap, the trims of the bytes then in flight ignored; otherwise
	// the packet's bytes off the window, as without it.
	UETNackQA bool `homa:"uet_nack_qa"`
	// UETRCCC turns on receiver credits (RCCC) beside NSCC: a sender
	// sends its first window of new bytes on speculation and the rest as
	// its receiver's CREDIT packets allow, which the receiver paces at
	// its link rate over the senders that have bytes left.
	UETRCCC bool `homa:"uet_rccc"`
	// UETRTO is the retransmission timeout of a packet with no ACK
	// (default max(4 x UnloadedRTT, 2 ticks); checked each tick).
	UETRTO time.Duration `homa:"uet_rto_us"`
	// UETNoNSCC sends with a fixed window of UETMaxWindow (uet_nscc:
	// false); by default NSCC sets each PDC's window.
	UETNoNSCC bool `homa:"uet_nscc,not"`
	// UETTargetDelay is NSCC's target queueing delay (default
	// UnloadedRTT/2: htsim's 6 us of its 12 us reference round trip);
	// UETMaxWindow its window cap (0, the default: 1.5 BDP of each PDC,
	// its smallest full-packet round trip times LinkBps, as htsim's
	// initNscc sets it from the peer's round trip; UnloadedRTT until a
	// round trip is measured).
	UETTargetDelay time.Duration `homa:"uet_target_qdelay_us"`
	UETMaxWindow   uint32        `homa:"uet_max_window_bytes"`
	// UETPort is the UDP port UET's packets go to (default 4793, the
	// port IANA assigned to UET, wire.UETPort; tor.p4 trims UET only
	// there).
	UETPort uint16 `homa:"uet_udp_port"`
	// ResendLimit is how many RESENDs from one source address the
	// Endpoint answers per tick (a retransmission, BUSY or RPC_UNKNOWN);
	// the rest are dropped and counted (Stats.Drops, resend_limited), and
	// their senders ask again. A receiver sends one RESEND per stalled
	// message per resend interval, so the default 64 leaves room for
	// hundreds of stalled messages per peer while a forged or runaway
	// RESEND stream cannot turn the host into a retransmission amplifier.
	ResendLimit int `homa:"resend_limit"`
	// DisableDefences (scenario: defences: false) turns off the checks
	// that refuse well-formed packets: the peer check, GRANT and RESEND
	// ranges, the RESEND limit. Malformed packets are dropped whatever it
	// says. Only for measuring what the defences buy (docs/homa.md).
	DisableDefences bool `homa:"defences,not"`
	// MaxIncompleteBytes bounds the memory the Endpoint commits to inbound
	// messages not yet complete, in all (default 64 x MaxMessageBytes),
	// and MaxIncompletePeerBytes the part of it one source address may
	// hold (default 16 x MaxMessageBytes). A message's buffer grows with
	// the bytes that arrive, not with the length its first packet claims;
	// each is charged its buffer plus its RPC's own state. A packet that
	// would go beyond either bound is dropped and counted (Stats.Drops,
	// in_memory); its sender retransmits it on the receiver's RESENDs or
	// restarts the RPC (docs/homa.md, defences on the receive path).
	MaxIncompleteBytes     uint64 `homa:"max_incomplete_bytes"`
	MaxIncompletePeerBytes uint64 `homa:"max_incomplete_peer_bytes"`
	// SequentialIDs numbers an Endpoint's RPCs 2, 4, 6, ... from its
	// start, as Linux's HomaModule numbers them (from a counter that
	// starts at 2), instead of from a random 62-bit base: ids an off-path
	// forger can guess. Off by default; an adversaries scenario turns it
	// on to measure forged control packets that name live RPCs.
	SequentialIDs bool `homa:"sequential_ids"`
}

// Variant names a transport built on the engine.
type Variant string

// The variants. Homa is also the empty string.
const (
	VariantHoma Variant = "homa"
	// VariantPFabric sends every message at line rate from its first
	// byte with pFabric's rank in each DATA packet; no grants; recovery
	// on a short timeout (ResendTicks default 2).
	VariantPFabric Variant = "pfabric"
	// VariantPHost sends a message of at most CreditWindow bytes whole
	// and blind (free tokens); a longer one sends an RTS (START_MSG) and
	// then one packet per token; receivers hand out tokens (one-packet
	// GRANTs) in SRPT order paced at LinkBps and stop giving them to a
	// message with CreditWindow of tokens unused. Every DATA packet goes
	// at level 0, control packets at the top.
	VariantPHost Variant = "phost"
	// VariantNDP sends CreditWindow at line rate, then one packet per
	// PULL; receivers pace PULLs at LinkBps, one per packet that
	// arrived, and NACK packets a switch trimmed, which the sender
	// retransmits at once.
	VariantNDP Variant = "ndp"
	// VariantRoCE runs RoCEv2 reliable connections: SENDs of MTU packets
	// with PSNs over UDP port 4791, ACK/NAK, go-back-N, DCQCN
	// (docs/transports.md). Its Conn is a UDP socket (homa.ListenRoCE).
	VariantRoCE Variant = "roce"
	// VariantUET runs the Ultra Ethernet Transport's reliable unordered
	// delivery over UDP port 4793: packet delivery contexts created on
	// demand, 32-bit PSNs, ACKs with SACK bitmaps, NSCC, per-packet
	// entropy (docs/transports.md). Its Conn is a UDP socket.
	VariantUET Variant = "uet"
)

// Variants lists the known variants.
var Variants = []Variant{VariantHoma, VariantPFabric, VariantPHost, VariantNDP, VariantRoCE, VariantUET}

// Defaults of Config, as documented on its fields.
const (
	DefaultLinkBps         = 1_000_000_000
	DefaultUnloadedRTT     = 100 * time.Microsecond
	DefaultMTU             = 1500
	DefaultMaxMessageBytes = 1_000_000
	DefaultFrameOverhead   = 42 // Ethernet header, CRC, preamble, SFD, gap (HOMA_ETH_OVERHEAD)
	DefaultResendLimit     = 64
)

// IPHeaderLen is the IPv4 header in front of every Homa packet (no
// options).
const IPHeaderLen = 20

// DataHeaderLen is what each DATA packet carries beyond its payload: the
// IPv4 header and the DATA header.
const DataHeaderLen = IPHeaderLen + wire.DataLen

// MaxDefaultTick caps the default Tick on slow links.
const MaxDefaultTick = 20 * time.Millisecond

// PayloadPerPacket is the DATA payload of one MTU-sized packet.
func (c *Config) PayloadPerPacket() uint32 { return uint32(c.MTU - IPHeaderLen - wire.DataLen) }

// WithDefaults returns a copy of c with defaults filled in, or an error for
// values out of range.
func (c Config) WithDefaults() (Config, error) {
	if c.LinkBps == 0 {
		c.LinkBps = DefaultLinkBps
	}
	if c.UnloadedRTT == 0 {
		c.UnloadedRTT = DefaultUnloadedRTT
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.MTU < IPHeaderLen+wire.DataLen+64 || c.MTU > 65535 {
		return c, keyErr("mtu", "%d out of range %d..65535", c.MTU, IPHeaderLen+wire.DataLen+64)
	}
	if c.FrameOverhead == 0 {
		c.FrameOverhead = DefaultFrameOverhead
	}
	if c.FrameOverhead < 0 || c.FrameOverhead > 1000 {
		return c, keyErr("frame_overhead", "%d bytes not in 1..1000 (0: the default %d)", c.FrameOverhead, DefaultFrameOverhead)
	}
	switch c.Variant {
	case "":
		c.Variant = VariantHoma
	case VariantHoma, VariantPHost, VariantNDP, VariantRoCE, VariantUET:
	case VariantPFabric:
		if c.ResendTicks == 0 {
			c.ResendTicks = 2 // pFabric's small RTO, at tick granularity
		}
	default:
		return c, keyErr("variant", "%q not one of %v", c.Variant, Variants)
	}
	if c.Variant != VariantHoma && c.StartMsg {
		return c, keyErr("start_msg", "start_msg is Homa's; variant %q announces messages its own way (pHost: an RTS for every message too long for free tokens; the others: their first DATA)", c.Variant)
	}
	pkt := c.PayloadPerPacket()
	if c.UnschedBytes == 0 {
		c.UnschedBytes = uint32(c.LinkBps*uint64(c.UnloadedRTT)/8/uint64(time.Second)) + 2*uint32(c.MTU)
	}
	c.UnschedBytes = max(pkt, roundUp(c.UnschedBytes, pkt))
	if c.Overcommit == 0 {
		c.Overcommit = 8
	}
	if c.Overcommit < 1 || c.Overcommit > 8 {
		return c, keyErr("overcommit", "%d not in 1..8", c.Overcommit)
	}
	if c.Priorities == 0 {
		c.Priorities = 8
	}
	switch c.Priorities {
	case 1, 2, 4, 8:
	default:
		return c, keyErr("priorities", "%d not 1, 2, 4 or 8", c.Priorities)
	}
	if c.Basic {
		c.Priorities = 1
	}
	if c.MaxIncoming == 0 {
		c.MaxIncoming = uint32(c.Overcommit+1) * c.UnschedBytes
	}
	if c.FIFOGrantPermille == 0 {
		c.FIFOGrantPermille = 50
	}
	if c.FIFOGrantPermille < 0 || c.FIFOGrantPermille >= 1000 {
		return c, keyErr("fifo_grant_permille", "%d not in 0..999", c.FIFOGrantPermille)
	}
	if c.DisableFIFOGrants {
		c.FIFOGrantPermille = 0
	}
	if c.FIFOGrantBytes == 0 {
		c.FIFOGrantBytes = max(1, c.MaxIncoming/8)
	}
	if len(c.UnschedCutoffs) > wire.MaxPriorities {
		return c, keyErr("unsched_cutoffs", "%d cutoffs, at most %d (one per priority)", len(c.UnschedCutoffs), wire.MaxPriorities)
	}
	// Linux's order (index = priority, entry = the largest length using
	// it): entries do not grow with the index.
	for i := 1; i < len(c.UnschedCutoffs); i++ {
		if c.UnschedCutoffs[i] > c.UnschedCutoffs[i-1] {
			return c, keyErr("unsched_cutoffs", "entry %d is %d after %d: expected Linux's order, index = priority, each at most the one before (the shortest messages on the highest level)", i, c.UnschedCutoffs[i], c.UnschedCutoffs[i-1])
		}
	}
	if c.SharedCutoffs && len(c.UnschedCutoffs) == 0 {
		return c, keyErr("shared_cutoffs", "set without unsched_cutoffs: expected the cutoffs every host shares")
	}
	if c.CutoffSamples == 0 {
		c.CutoffSamples = 1000
	}
	if c.Tick == 0 {
		c.Tick = min(MaxDefaultTick, max(time.Millisecond, time.Duration(uint64(time.Millisecond)*1e9/c.LinkBps)))
	}
	if c.ResendTicks == 0 {
		c.ResendTicks = 5
	}
	if c.ResendInterval == 0 {
		c.ResendInterval = c.ResendTicks
	}
	if c.TimeoutTicks == 0 {
		c.TimeoutTicks = 100
	}
	if c.TimeoutTicks <= c.ResendTicks {
		return c, keyErr("timeout_ticks", "%d must exceed resend ticks %d", c.TimeoutTicks, c.ResendTicks)
	}
	if c.RequestAckTicks == 0 {
		c.RequestAckTicks = 2
	}
	if c.IncastThreshold == 0 {
		c.IncastThreshold = max(1, int(c.MaxIncoming/c.UnschedBytes))
	}
	if c.IncastUnschedBytes == 0 {
		c.IncastUnschedBytes = pkt
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if err := c.incompleteDefaults(); err != nil {
		return c, err
	}
	if c.Variant == VariantPFabric {
		c.UnschedBytes = c.MaxMessageBytes // every byte blind: no grants
		c.IncastControl = false            // a smaller blind response would wait for grants forever
	}
	if c.MaxNICBacklog == 0 {
		c.MaxNICBacklog = max(10*time.Microsecond, 4*wireTime(c.MTU+c.FrameOverhead, c.LinkBps))
	}
	switch {
	case c.Variant != VariantPHost && c.Variant != VariantNDP:
		if c.CreditWindow != 0 {
			return c, keyErr("credit_window_bytes", "%d: the phost and ndp transports' setting; variant %q has no credit window", c.CreditWindow, c.Variant)
		}
	case c.CreditWindow == 0:
		c.CreditWindow = c.UnschedBytes
	default:
		c.CreditWindow = roundUp(c.CreditWindow, pkt)
	}
	switch {
	case c.PacerSpin == 0:
		c.PacerSpin = 50 * time.Microsecond
	case c.PacerSpin < 0:
		c.PacerSpin = 0
	}
	if c.Poll < 0 || c.Poll > 10*time.Millisecond {
		return c, keyErr("poll_us", "%v not in 0..10ms", c.Poll)
	}
	if c.BypassBytes == 0 {
		c.BypassBytes = 1000
	}
	if c.ClientPort == 0 {
		c.ClientPort = 0x8000
	}
	if c.ServerBacklog == 0 {
		c.ServerBacklog = 4096
	}
	if c.Variant == VariantRoCE {
		if err := c.roceDefaults(); err != nil {
			return c, err
		}
	}
	if err := c.uetDefaults(); err != nil {
		return c, err
	}
	if c.ResendLimit == 0 {
		c.ResendLimit = DefaultResendLimit
	}
	if c.ResendLimit < 0 || c.ResendLimit > 1<<20 {
		return c, keyErr("resend_limit", "%d RESENDs per peer per tick not in 1..%d (0: the default %d)", c.ResendLimit, 1<<20, DefaultResendLimit)
	}
	return c, nil
}

// incompleteDefaults fills in and checks the bounds on incomplete inbound
// messages: one peer must be able to send at least one message of
// MaxMessageBytes, and the total must admit at least one peer's worth.
func (c *Config) incompleteDefaults() error {
	mm := uint64(c.MaxMessageBytes)
	if c.MaxIncompletePeerBytes == 0 {
		c.MaxIncompletePeerBytes = 16 * mm
	}
	if c.MaxIncompleteBytes == 0 {
		c.MaxIncompleteBytes = max(64*mm, c.MaxIncompletePeerBytes)
	}
	if min := 2 * mm; c.MaxIncompletePeerBytes < min {
		return keyErr("max_incomplete_peer_bytes", "%d below %d, twice max_message_bytes (0: the default %d)", c.MaxIncompletePeerBytes, min, 16*mm)
	}
	if c.MaxIncompleteBytes < c.MaxIncompletePeerBytes {
		return keyErr("max_incomplete_bytes", "%d below max_incomplete_peer_bytes %d (0: the default %d)", c.MaxIncompleteBytes, c.MaxIncompletePeerBytes, 64*mm)
	}
	return nil
}

// wireTime is how long n bytes occupy a link of bps.
func wireTime(n int, bps uint64) time.Duration {
	return time.Duration(uint64(n) * 8 * uint64(time.Second) / bps)
}

func roundUp(n, unit uint32) uint32 { return (n + unit - 1) / unit * unit }
