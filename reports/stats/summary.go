package stats

import (
	"fmt"
	"math"

	"github.com/homatb/homatb/anatomy"
)

// Summary is the content of summary.json: what scripts read. The field names
// of the contract in DESIGN.md ("summary.json") are kept as they are; the
// rest are additions.
type Summary struct {
	Run string `json:"run"`
	// Records is the per-RPC file read (rpcs.csv), without the extension
	// of its compression.
	Records string `json:"records"`
	// PercentileDefinition states how every percentile here is computed.
	PercentileDefinition string `json:"percentile_definition"`
	// Confidence is the coverage of every interval (0.95).
	Confidence float64 `json:"confidence"`
	// SweptParams are the params whose values differ between experiments.
	SweptParams []string     `json:"swept_params"`
	Fidelity    []string     `json:"fidelity"`
	Experiments []Experiment `json:"experiments"`
	// Baseline is the configuration the headline compares every other one
	// with (manifest.json's baseline, else Homa's).
	Baseline string `json:"baseline"`
	// Headline has, per group of params and configuration, the
	// short-message P50 and P99 over the repetitions; Ratios each other
	// configuration's over the baseline's, repetition by repetition.
	Headline []HeadlineRow `json:"headline"`
	Ratios   []RatioRow    `json:"ratios"`

	Manifest *Manifest `json:"-"`
}

// Interval is a confidence interval [lo, hi]; a nil end is open (too few
// samples to bound the percentile on that side).
type Interval [2]*float64

// Experiment is the statistics of one experiment's measure phase.
type Experiment struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	// Label tells apart two configurations of one transport.
	Label string `json:"label,omitempty"`
	// Config is the configuration's label, unique in the run ("homa",
	// "tcp-cubic", "homa-basic"): the key of the headline and ratios.
	Config string         `json:"config"`
	Params map[string]any `json:"params"`
	RPCs   RPCCounts      `json:"rpcs"`
	Short  Short          `json:"short"`
	// ShortestHalf is the slowdown of the shortest 50% of the messages
	// (every RPC whose request is no longer than the median request), the
	// Homa papers' headline metric; null without an ideal RTT.
	ShortestHalf *ShortestHalf `json:"shortest_half"`
	// Phases are the percentiles of each scenario phase's RPCs (by the
	// phase its client ran), in the order of the scenario; empty for runs
	// that did not record the clients' phases.
	Phases []PhaseStats `json:"phases"`
	// Collectives summarise the collective phases; their step messages
	// enter no other statistic of the experiment but its RPC counts, send
	// lag and goodput.
	Collectives []CollectiveStats `json:"collectives,omitempty"`
	// Flows summarise the connection-matrix phases; their flows and
	// trigger notifications, like step messages, enter no other latency
	// statistic.
	Flows []MatrixStats `json:"flows,omitempty"`
	// Binning is "exact" (one row per request length) or "log" (log-spaced
	// bins of at least MinBinSamples samples each).
	Binning string    `json:"binning"`
	BySize  []SizeRow `json:"by_size"`
	// RTT and Slowdown are over all completed RPCs of the experiment.
	RTT         Percentiles  `json:"rtt_us"`
	Slowdown    *Percentiles `json:"slowdown"`
	GoodputGbps float64      `json:"goodput_gbps"`
	// Receivers are each server's offered and delivered load; Overload is
	// set when the backlog of unfinished RPCs grew through the measurement
	// (OverloadSentence says it in words).
	Receivers   []ReceiverLoad `json:"receivers,omitempty"`
	Overload    *Overload      `json:"overload,omitempty"`
	OfferedGbps float64        `json:"offered_gbps"`
	// ConfiguredGbps is the request load the scenario asked the clients
	// for (request bytes only), null when some client's load no rate fixes
	// (a closed loop); ConfiguredOpenGbps is the part of the open-loop
	// clients with a rate. OfferedRequestGbps is the request bytes actually
	// issued, to compare.
	ConfiguredGbps     *float64 `json:"configured_gbps"`
	ConfiguredOpenGbps *float64 `json:"configured_open_loop_gbps"`
	OfferedRequestGbps float64  `json:"offered_request_gbps"`
	DurationS          float64  `json:"duration_s"`
	// SendLag is sent_ns - intended_ns of the RPCs that were sent.
	SendLag     Percentiles  `json:"send_lag_us"`
	Calibration *Calibration `json:"calibration"`
	// Ideal is the baseline of every slowdown but own_s50/own_s99.
	Ideal  *Ideal      `json:"ideal"`
	Switch SwitchStats `json:"switch"`
	Links  []LinkStats `json:"links"`
	// MeanLinkUtil is the mean of links[].mean_util over the ports with a
	// known rate: on a star, the hosts' downlinks. Null without telemetry.
	MeanLinkUtil *float64 `json:"mean_link_util"`
	// BusiestLinkUtil is the largest links[].mean_util: in an incast the
	// bottleneck, which idle ports would average away.
	BusiestLinkUtil *float64 `json:"busiest_link_util"`
	// HostGauges are the Homa receivers' active messages and granted
	// bytes over the experiment, from hosts.csv (empty without it).
	HostGauges []HostGauges `json:"host_gauges"`
	// TCPConns are the TCP client connections' windows and RTTs, from
	// tcp.csv (empty without it).
	TCPConns []TCPConn `json:"tcp_conns"`
	// Anatomy is where the short RPCs' time went (package anatomy), null
	// without the switches' per-packet records.
	Anatomy  *anatomy.Summary `json:"anatomy"`
	Homa     *TransportStats  `json:"transport_internals"`
	Fidelity []string         `json:"fidelity"`

	CCDF []Point `json:"-"`
	// Backlog is the unfinished RPCs through the measurement (seconds since
	// it began).
	Backlog []Point        `json:"-"`
	Series  []SwitchSeries `json:"-"`
	// Active is each host's active messages over time.
	Active map[string][]Point `json:"-"`
	// Bands are warm-up, measurement and drain in seconds since the
	// experiment's start, for shading time series; nil without a manifest.
	Bands []Band `json:"-"`
	// digest is the cperf-style digest (<experiment>.data); samples and
	// clients the completed RPCs for the cperf .rtts files.
	digest  []cperfRow
	samples []sample
	clients []string
}

// RPCCounts counts measure-phase RPCs by final status. The books balance
// as the contract has them: issued = completed + failed, an RPC still in
// flight when the experiment ended (after its drain) counting as failed;
// InFlight says how many of the failed ones those were.
type RPCCounts struct {
	Issued    int64 `json:"issued"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	InFlight  int64 `json:"in_flight"`
	// Warmup counts warm-up RPCs, which enter no statistic.
	Warmup   int64            `json:"warmup"`
	Failures map[string]int64 `json:"failures,omitempty"`
}

// Short is RTT statistics of RPCs whose request is at most MaxLength bytes.
type Short struct {
	// MaxLength bounds both the request and the response of a short RPC
	// (rundir.IsShort); runs summarised before it bounded requests only.
	MaxLength int64 `json:"max_length"`
	// Phase, when the scenario names a headline phase
	// (report.headline_phase), is that phase: the set is then its RPCs,
	// whatever their size.
	Phase  string   `json:"phase,omitempty"`
	Count  int64    `json:"count"`
	P50us  *float64 `json:"p50_us"`
	P99us  *float64 `json:"p99_us"`
	P999us *float64 `json:"p999_us"`
	P50CI  Interval `json:"p50_ci_us"`
	P99CI  Interval `json:"p99_ci_us"`
	P999CI Interval `json:"p999_ci_us"`
	S50    *float64 `json:"s50"`
	S99    *float64 `json:"s99"`
}

// SizeRow is one message-size bucket, in cperf's columns plus intervals.
// Length is the largest request length in the bucket, MinLength the smallest.
type SizeRow struct {
	Length    int64    `json:"length"`
	MinLength int64    `json:"min_length"`
	CumFrac   float64  `json:"cum_frac"`
	Samples   int      `json:"samples"`
	P50us     float64  `json:"p50_us"`
	P99us     float64  `json:"p99_us"`
	P999us    float64  `json:"p999_us"`
	S50       *float64 `json:"s50"`
	S99       *float64 `json:"s99"`
	S999      *float64 `json:"s999"`
	P50CI     Interval `json:"p50_ci_us"`
	P99CI     Interval `json:"p99_ci_us"`
	P999CI    Interval `json:"p999_ci_us"`
	S50CI     Interval `json:"s50_ci"`
	S99CI     Interval `json:"s99_ci"`
	S999CI    Interval `json:"s999_ci"`
	// OwnS50 and OwnS99 are slowdown against the transport's own unloaded
	// RTT (its calibration), where S50 and S99 use the ideal RTT.
	OwnS50 *float64 `json:"own_s50"`
	OwnS99 *float64 `json:"own_s99"`
	// ReqOut is the time from the intended send to the request's last
	// byte leaving (Homa: after its grants), FirstResp to the response's
	// first byte arriving, in µs, over the bucket's RPCs whose transport
	// reported them (null when none did). RTT minus FirstResp is the
	// response's transfer.
	ReqOutP50us    *float64 `json:"req_out_p50_us"`
	ReqOutP99us    *float64 `json:"req_out_p99_us"`
	FirstRespP50us *float64 `json:"first_resp_p50_us"`
	FirstRespP99us *float64 `json:"first_resp_p99_us"`
}

// Percentiles is P50/P99/P99.9 of a sample with intervals; Count is n.
type Percentiles struct {
	Count  int      `json:"count"`
	P50    *float64 `json:"p50"`
	P99    *float64 `json:"p99"`
	P999   *float64 `json:"p999"`
	Max    *float64 `json:"max"`
	P50CI  Interval `json:"p50_ci"`
	P99CI  Interval `json:"p99_ci"`
	P999CI Interval `json:"p999_ci"`
}

// Ideal describes the ideal RTT that slowdown divides by: BaseRTTus, the
// unloaded RTT of a BaseRequest-byte request with a BaseResponse-byte
// response over BaseLinks links each way, plus each message's time on the
// wire beyond the base's at LinkBps (UplinkBps between switches, when
// set), with HeaderBytes of headers and FrameOverhead of framing per packet
// of at most MTU bytes, and HopNs for each link beyond the base's (each
// way, or one way with OneWay).
type Ideal struct {
	BaseRTTus     float64 `json:"base_rtt_us"`
	BaseRequest   int64   `json:"base_request_bytes"`
	BaseResponse  int64   `json:"base_response_bytes"`
	BaseLinks     int     `json:"base_links"`
	Source        string  `json:"source"`
	LinkBps       float64 `json:"link_bps"`
	UplinkBps     float64 `json:"uplink_bps,omitempty"`
	MTU           int     `json:"mtu"`
	FrameOverhead int     `json:"frame_overhead_bytes"`
	HeaderBytes   int     `json:"header_bytes"`
	// HopNs and OneWay are nil and false in a summary written before
	// they were.
	HopNs  *float64 `json:"hop_ns"`
	OneWay bool     `json:"one_way"`
}

// Us is the ideal time, in µs, of a req-byte request with a resp-byte
// response (a req-byte message, one way) over links links each way: the
// slowdowns' denominator for such an RPC. NaN for a summary written before
// Ideal had all it needs (no hop_ns).
func (i *Ideal) Us(req, resp int64, links int) float64 {
	if i == nil || i.HopNs == nil || i.HeaderBytes != headerBytes || i.LinkBps <= 0 {
		return math.NaN()
	}
	id := idealRTT{baseNs: i.BaseRTTus * 1e3, baseReq: i.BaseRequest, baseResp: i.BaseResponse, baseLinks: i.BaseLinks,
		rateBps: i.LinkBps, uplinkBps: i.UplinkBps, mtu: i.MTU, overhead: i.FrameOverhead, hopNs: *i.HopNs, oneWay: i.OneWay}
	return id.at(req, resp, links) / 1e3
}

// Calibration describes the transport's own unloaded RTTs (the second
// baseline, own_s50 and own_s99).
type Calibration struct {
	Experiment string `json:"experiment"`
	Lengths    int    `json:"lengths"`
	Samples    int    `json:"samples"`
	MinLength  int64  `json:"min_length"`
	MaxLength  int64  `json:"max_length"`
}

// SwitchStats sums the experiment's switch statistics files. Slices are
// indexed by queue number (priority).
type SwitchStats struct {
	Present    bool     `json:"present"`
	Switches   []string `json:"switches"`
	Drops      int64    `json:"drops"`
	FaultDrops int64    `json:"fault_drops"`
	// FaultDropsByPort splits FaultDrops by "switch/port", the ports a
	// scenario's faults were on (those with none are left out).
	FaultDropsByPort map[string]int64 `json:"fault_drops_by_port"`
	DropsByQueue     []int64          `json:"drops_by_queue"`
	// DropsTowardHosts and DropsTowardSwitches split the queues' drops by
	// what the dropping port faces (its peer in the statistics): a host's
	// downlink, or a link to another switch. Drops at ports whose peer the
	// run did not record are in neither. WorstDropPort is the port that
	// dropped the most ("l3/12 toward p4"), WorstDropPkts its drops.
	DropsTowardHosts    int64     `json:"drops_toward_hosts"`
	DropsTowardSwitches int64     `json:"drops_toward_switches"`
	WorstDropPort       string    `json:"worst_drop_port,omitempty"`
	WorstDropPkts       int64     `json:"worst_drop_pkts,omitempty"`
	MaxQueueBytes       []int64   `json:"max_queue_bytes"`
	MaxQueuePkts        []int64   `json:"max_queue_pkts"`
	MaxDelayUs          []float64 `json:"max_queue_delay_us"`
	// CEMarks and CEMarksByQueue count the packets the switch marked CE
	// (ECN) over the experiment.
	CEMarks int64 `json:"ce_marks"`
	// RankDrops counts the frames pFabric's rank-ordered ports dropped
	// (the largest rank; also in Drops), TrimmedPkts the DATA frames NDP's
	// ports cut to their header (docs/transports.md, "Switch modes").
	RankDrops      int64   `json:"rank_drops"`
	TrimmedPkts    int64   `json:"trimmed_pkts"`
	CEMarksByQueue []int64 `json:"ce_marks_by_queue"`
	// LostLinkMs is the link time the switches' ports lost to late
	// scheduling while frames waited (the machine's CPU, not the
	// network), in all; LostLinkMsByPort splits it by "switch/port"
	// (ports that lost none are left out).
	LostLinkMs       float64            `json:"lost_link_ms"`
	LostLinkMsByPort map[string]float64 `json:"lost_link_ms_by_port"`
	// RemarkedPkts, MeteredPkts and SpoofDrops are what tor.p4's defences
	// did (switch.meters, dscp.trust, switch.anti_spoofing), in all and by
	// the "switch/port" the packets arrived on (ports where they did
	// nothing are left out).
	RemarkedPkts   int64                    `json:"remarked_pkts"`
	MeteredPkts    int64                    `json:"metered_pkts"`
	SpoofDrops     int64                    `json:"spoof_drops"`
	DefencesByPort map[string]DefenceCounts `json:"defences_by_port"`
	// Target is the run's switch target; Unavailable lists the statistics
	// (switch statistics field names) it cannot give, which the report
	// shows as unavailable rather than as zeros.
	Target      string   `json:"target,omitempty"`
	Unavailable []string `json:"unavailable,omitempty"`
	// PFC lists, per switch port and priority that sent or received any,
	// the PAUSE frames (802.1Qbb) of the experiment and how long the
	// port's egress queue was paused (switch.pfc).
	PFC []PFCPort `json:"pfc,omitempty"`

	// queueDrops are the drops of each port and queue that dropped any,
	// for the lossless priorities' warning.
	queueDrops []queueDrop
}

// queueDrop is one egress queue's drops over an experiment.
type queueDrop struct {
	port        string // "s1/1 (h1)"
	queue       int
	drops, peak int64
}

// PFCPort is one switch port's priority flow control of one priority over
// an experiment: PAUSE frames and resumes it sent upstream (its ingress
// reached XOFF, then XON), those it received, and the time its own egress
// queue of that priority stood paused.
type PFCPort struct {
	Switch         string  `json:"switch"`
	Port           int     `json:"port"`
	Iface          string  `json:"iface"`
	Priority       int     `json:"priority"`
	PausesSent     int64   `json:"pauses_sent"`
	ResumesSent    int64   `json:"resumes_sent"`
	PausesReceived int64   `json:"pauses_received"`
	ResumesRecv    int64   `json:"resumes_received"`
	PausedMs       float64 `json:"paused_ms"`
}

// DefenceCounts are what the switch's defences did to the packets that
// arrived on one port.
type DefenceCounts struct {
	Remarked int64 `json:"remarked"`
	Metered  int64 `json:"metered"`
	Spoofed  int64 `json:"spoofed"`
}

// LinkStats is the utilisation of one switch egress port from telemetry.
type LinkStats struct {
	Switch   string  `json:"switch"`
	Port     int     `json:"port"`
	RateBps  float64 `json:"rate_bps"`
	MeanUtil float64 `json:"mean_util"`
	MaxUtil  float64 `json:"max_util"`
	// MaxDepthPkts is the largest queue depth sampled on the port, any queue.
	MaxDepthPkts int64 `json:"max_depth_pkts"`
}

// TransportStats is what is known of the transport's internals: retries
// from the records and, when the run recorded them, agent counters.
type TransportStats struct {
	Retries  int64             `json:"retries"`
	Counters map[string]uint64 `json:"counters,omitempty"`
	// ByPriority gathers the per-priority counters ("<name>_p<N>", such as
	// tx_data_p3 or grants_p7) as name -> count indexed by priority.
	ByPriority map[string][]uint64 `json:"by_priority,omitempty"`
	// ByRole merges the counters of the hosts of each role ("client",
	// "server", "client+server"), so a receiver's grants and resends are
	// told apart from its senders'. Hosts counts the hosts of each role.
	ByRole map[string]map[string]uint64 `json:"by_role,omitempty"`
	Hosts  map[string]int               `json:"hosts_by_role,omitempty"`
}

// PhaseStats are one phase's RPCs in an experiment: how many were
// measured and their RTT percentiles (µs), with the median and P99
// slowdown when the ideal RTT is known.
type PhaseStats struct {
	Name     string   `json:"name"`
	Count    int64    `json:"count"`
	MinBytes int64    `json:"min_request_bytes"`
	MaxBytes int64    `json:"max_request_bytes"`
	P50us    *float64 `json:"p50_us"`
	P99us    *float64 `json:"p99_us"`
	P999us   *float64 `json:"p999_us"`
	S50      *float64 `json:"s50"`
	S99      *float64 `json:"s99"`
}

// ShortestHalf is the slowdown of an experiment's shortest half of
// messages: MaxLength is the median request length, Count the RPCs at or
// below it.
type ShortestHalf struct {
	MaxLength int64    `json:"max_length"`
	Count     int64    `json:"count"`
	S50       *float64 `json:"s50"`
	S99       *float64 `json:"s99"`
	// S99CI is S99's confidence interval (an open end: too few messages
	// to bound it).
	S99CI Interval `json:"s99_ci"`
}

// ShortLabel names the RPCs the headline is about: "short-message"
// (request and response both within ShortMax), or the phase the
// scenario's report.headline_phase names.
func (s *Summary) ShortLabel() string {
	for _, e := range s.Experiments {
		if e.Short.Phase != "" {
			return e.Short.Phase
		}
	}
	return "short-message"
}

// ShortSet says in words which RPCs the headline's percentiles are over.
func (s *Summary) ShortSet() string {
	if l := s.ShortLabel(); l != "short-message" {
		return fmt.Sprintf("the RPCs of phase %s (the scenario's report.headline_phase), whatever their size", l)
	}
	return fmt.Sprintf("short messages, RPCs whose request and response are both at most %d bytes", s.ShortMax())
}

// ShortMax is the short-message bound the summary was computed with.
func (s *Summary) ShortMax() int64 {
	if len(s.Experiments) > 0 {
		return s.Experiments[0].Short.MaxLength
	}
	return 1000
}
