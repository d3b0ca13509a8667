package rundir

import (
	"errors"
	"fmt"
	"io"
	"regexp"
)

// RPC statuses: every issued RPC ends in exactly one.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusInflight  = "inflight"
)

// ShortMaxBytes is the default bound of a short message (homatb report
// --short-max).
const ShortMaxBytes = 1000

// IsShort is the one definition of a short message: an RPC is short when
// both its request and its response are at most max bytes. An RPC whose
// short request fetches a long response is not: what its caller waits
// for is the long message.
func IsShort(reqBytes, respBytes, max int64) bool {
	return reqBytes <= max && respBytes <= max
}

// Phases of an RPC: only measured RPCs enter statistics.
const (
	PhaseCalibrate = "calibrate"
	PhaseWarmup    = "warmup"
	PhaseMeasure   = "measure"
)

// CalibrationExperiment is the experiment name under which the run
// directory keeps a transport's calibration RPCs.
func CalibrationExperiment(transport string) string { return "calibrate-" + transport }

// RPC is one row of rpcs.csv: one issued RPC (docs/formats.md). Times are
// Unix ns on the client's clock.
type RPC struct {
	Experiment, Transport, Phase string
	// Client is the client host's name; Server the server's ip:port and
	// ServerHost its host's name.
	Client, Server      string
	ServerHost          string
	ReqBytes, RespBytes int64
	IntendedNs, SentNs  int64
	DoneNs              int64 // 0 unless completed
	// RTTNs is DoneNs - IntendedNs for a completed RPC, else 0; the
	// writer derives it.
	RTTNs         int64
	Status, Error string
	Retries       int64
	// ReqOutNs and FirstRespNs are the transport's times of the request's
	// last byte leaving and the response's first byte arriving, 0 when it
	// does not say; GrantsIn and GrantsOut its GRANT counts.
	ReqOutNs, FirstRespNs int64
	GrantsIn, GrantsOut   int64
	// RPCID is the transport's id of the RPC (Homa's; 0 for TCP), which
	// the switch's per-packet records carry too.
	RPCID uint64
	// Local is the client's own address of the RPC (ip:port: its TCP
	// connection's, or its Homa endpoint's client port), which the switch's
	// records carry as the request's source.
	Local string
	// ReqOffset and RespOffset place a TCP RPC in its connection: the
	// offset of the request's first byte (its length prefix) in the
	// client-to-server byte stream and of the response's in the reverse
	// one, counted from the connection's first data byte. Zero for Homa.
	ReqOffset, RespOffset int64
	// Reason is a failed RPC's cause in one word from the transport
	// ("timeout", "peer_unknown", "aborted", "refused", ...), which
	// reports count failures by; empty otherwise.
	Reason string
	// RecoveryFromNs is when the client began waiting for a lost packet
	// (Unix ns; Homa's CallInfo.RecoveryFrom), 0 if it never did.
	RecoveryFromNs int64
	// Collective is the phase name of a collective's step message (empty
	// for other RPCs); Iteration and Step place it in the collective.
	// InputNs is when the last input the step depends on arrived at the
	// sender (0 for a step that depends on none), ComputeNs how long the
	// compute before the host's first send of the iteration was (0 on its
	// other sends); IntendedNs is the later of the input's arrival and the
	// compute's end: when the step could go.
	Collective      string
	Iteration, Step int64
	InputNs         int64
	ComputeNs       int64
	// Matrix is the phase name of a connection matrix's message (empty
	// for other RPCs). A flow's row has its Flow id and the Trigger it
	// waited on (0 for a flow with a start time; InputNs is then when the
	// trigger fired at the sender); a trigger notification's row has Flow
	// 0 and the Trigger it activates at its receiver.
	Matrix        string
	Flow, Trigger int64
}

// RPCs is the rpcs.csv format: written by each agent per experiment,
// merged by the orchestrator, read by reports. A reader needs only the
// columns statistics cannot do without (experiment, transport, phase,
// req_bytes, rtt_ns, status); files written before the transport times
// existed lack the last four.
func RPCs() *CSVFormat[RPC] {
	return &CSVFormat[RPC]{
		File: "rpcs.csv",
		columns: []column[RPC]{
			strCol("experiment", func(r *RPC) *string { return &r.Experiment }),
			strCol("transport", func(r *RPC) *string { return &r.Transport }),
			strCol("phase", func(r *RPC) *string { return &r.Phase }),
			strCol("client", func(r *RPC) *string { return &r.Client }).opt(),
			strCol("server", func(r *RPC) *string { return &r.Server }).opt(),
			i64Col("req_bytes", func(r *RPC) *int64 { return &r.ReqBytes }),
			i64Col("resp_bytes", func(r *RPC) *int64 { return &r.RespBytes }).opt(),
			i64Col("intended_ns", func(r *RPC) *int64 { return &r.IntendedNs }).opt(),
			i64Col("sent_ns", func(r *RPC) *int64 { return &r.SentNs }).opt(),
			i64Col("done_ns", func(r *RPC) *int64 { return &r.DoneNs }).opt(),
			i64Col("rtt_ns", func(r *RPC) *int64 { return &r.RTTNs }),
			strCol("status", func(r *RPC) *string { return &r.Status }),
			strCol("error", func(r *RPC) *string { return &r.Error }).opt(),
			i64Col("retries", func(r *RPC) *int64 { return &r.Retries }).opt(),
			i64Col("req_out_ns", func(r *RPC) *int64 { return &r.ReqOutNs }).opt(),
			i64Col("first_resp_ns", func(r *RPC) *int64 { return &r.FirstRespNs }).opt(),
			i64Col("grants_in", func(r *RPC) *int64 { return &r.GrantsIn }).opt(),
			i64Col("grants_out", func(r *RPC) *int64 { return &r.GrantsOut }).opt(),
			strCol("server_host", func(r *RPC) *string { return &r.ServerHost }).opt(),
			u64Col("rpc_id", func(r *RPC) *uint64 { return &r.RPCID }).opt(),
			strCol("local", func(r *RPC) *string { return &r.Local }).opt(),
			i64Col("req_offset", func(r *RPC) *int64 { return &r.ReqOffset }).opt(),
			i64Col("resp_offset", func(r *RPC) *int64 { return &r.RespOffset }).opt(),
			strCol("reason", func(r *RPC) *string { return &r.Reason }).opt(),
			i64Col("recovery_from_ns", func(r *RPC) *int64 { return &r.RecoveryFromNs }).opt(),
			strCol("collective", func(r *RPC) *string { return &r.Collective }).opt(),
			i64Col("iteration", func(r *RPC) *int64 { return &r.Iteration }).opt(),
			i64Col("step", func(r *RPC) *int64 { return &r.Step }).opt(),
			i64Col("input_ns", func(r *RPC) *int64 { return &r.InputNs }).opt(),
			i64Col("compute_ns", func(r *RPC) *int64 { return &r.ComputeNs }).opt(),
			strCol("matrix", func(r *RPC) *string { return &r.Matrix }).opt(),
			i64Col("flow", func(r *RPC) *int64 { return &r.Flow }).opt(),
			i64Col("trigger", func(r *RPC) *int64 { return &r.Trigger }).opt(),
		},
		prepare: func(r *RPC) {
			r.RTTNs = 0
			if r.Status == StatusCompleted {
				r.RTTNs = r.DoneNs - r.IntendedNs
			}
		},
	}
}

// Served is a server's record of one request it answered: a row of
// served.csv. Servers write one per request of an experiment; the latency
// anatomy joins them to the clients' rows of rpcs.csv, by RPC id for Homa
// and by connection and byte offset for TCP.
type Served struct {
	Experiment, Transport string
	// ServerHost is the server's host name, Server its ip:port, Client the
	// client's ip:port (RPC.Local of the matching row).
	ServerHost, Server, Client string
	// RPCID is Homa's id of the RPC as the client chose it (even); 0 for TCP.
	RPCID uint64
	// ReqOffset and RespOffset are the TCP stream offsets, as in RPC.
	ReqOffset, RespOffset int64
	ReqBytes, RespBytes   int64
	// ReqNs is when the whole request had reached the server application
	// (Unix ns), ReplyNs when the application handed the response to the
	// transport.
	ReqNs, ReplyNs int64
	// RecoveryFromNs is when the server began waiting for a lost packet
	// of the request (Unix ns), 0 if it never did.
	RecoveryFromNs int64
}

// ServedRPCs is the served.csv format: written by each server agent per
// experiment, merged by the orchestrator, read by the latency anatomy.
func ServedRPCs() *CSVFormat[Served] {
	return &CSVFormat[Served]{
		File: "served.csv",
		columns: []column[Served]{
			strCol("experiment", func(r *Served) *string { return &r.Experiment }),
			strCol("transport", func(r *Served) *string { return &r.Transport }),
			strCol("server_host", func(r *Served) *string { return &r.ServerHost }),
			strCol("server", func(r *Served) *string { return &r.Server }),
			strCol("client", func(r *Served) *string { return &r.Client }),
			u64Col("rpc_id", func(r *Served) *uint64 { return &r.RPCID }),
			i64Col("req_offset", func(r *Served) *int64 { return &r.ReqOffset }),
			i64Col("resp_offset", func(r *Served) *int64 { return &r.RespOffset }),
			i64Col("req_bytes", func(r *Served) *int64 { return &r.ReqBytes }),
			i64Col("resp_bytes", func(r *Served) *int64 { return &r.RespBytes }),
			i64Col("req_ns", func(r *Served) *int64 { return &r.ReqNs }),
			i64Col("reply_ns", func(r *Served) *int64 { return &r.ReplyNs }),
			i64Col("recovery_from_ns", func(r *Served) *int64 { return &r.RecoveryFromNs }).opt(),
		},
	}
}

// Anatomy is where one RPC's time went: a row of anatomy.csv, written by
// the report from rpcs.csv, served.csv and the switches' per-packet
// records (package anatomy; docs/reports.md, "Latency anatomy").
type Anatomy struct {
	Experiment, Transport, Client, Server string
	RPCID                                 uint64
	ReqBytes, RespBytes, RTTNs            int64
	// The decomposition: RTTNs = SendLagNs + HostNs + RecoveryNs + WireNs +
	// QueueNs + SwitchNs + UnattributedNs. RecoveryNs is loss recovery: the
	// host time within a wait for a lost packet, from the first copy of a
	// critical packet reaching its first switch to the retransmitted copy
	// that got through, or from a transport's recovery_from_ns to the end
	// of the message it waited for.
	SendLagNs, HostNs, RecoveryNs, WireNs, QueueNs, SwitchNs, UnattributedNs int64
	// Joined says which records were found: "full" (both critical packets
	// and the server's row), or the missing parts ("no-request",
	// "no-response", "no-server", joined by "+").
	Joined string
	// HostNs in parts: the client until its request reached the first
	// switch, the server from the request leaving the last switch until
	// its application had it, the application, the server until its
	// response reached the first switch, the client from the response
	// leaving the last switch until the call returned.
	ClientTxNs, ServerRxNs, ServerAppNs, ServerTxNs, ClientRxNs int64
	// HOLNs is the part of ClientTxNs and ServerTxNs during which earlier
	// bytes of the message's TCP connection sat in a switch queue: the
	// message waited in its sender's byte stream (head-of-line, for
	// instance a congestion window full of them) behind bytes the switch
	// held. Zero for Homa and its variants, whose messages do not share
	// a stream.
	HOLNs int64
	// QueueNs in parts: the request's and the response's critical packet.
	ReqQueueNs, RespQueueNs int64
	// PreemptNs is the part of QueueNs spent waiting for a frame of a
	// lower-priority queue already on the link when the critical packet
	// was enqueued (link-level preemption lag); zero when the switches'
	// records are sampled, which may lack that frame.
	PreemptNs int64
	// LastHopQueueNs is the part of QueueNs at each critical packet's last
	// switch, whose egress port is the receiver's downlink.
	LastHopQueueNs int64
	// Hops is how many switches each critical packet crossed.
	Hops int
}

// Anatomies is the anatomy.csv format.
func Anatomies() *CSVFormat[Anatomy] {
	return &CSVFormat[Anatomy]{
		File: "anatomy.csv",
		columns: []column[Anatomy]{
			strCol("experiment", func(r *Anatomy) *string { return &r.Experiment }),
			strCol("transport", func(r *Anatomy) *string { return &r.Transport }),
			strCol("client", func(r *Anatomy) *string { return &r.Client }),
			strCol("server", func(r *Anatomy) *string { return &r.Server }),
			u64Col("rpc_id", func(r *Anatomy) *uint64 { return &r.RPCID }),
			i64Col("req_bytes", func(r *Anatomy) *int64 { return &r.ReqBytes }),
			i64Col("resp_bytes", func(r *Anatomy) *int64 { return &r.RespBytes }),
			i64Col("rtt_ns", func(r *Anatomy) *int64 { return &r.RTTNs }),
			i64Col("send_lag_ns", func(r *Anatomy) *int64 { return &r.SendLagNs }),
			i64Col("host_ns", func(r *Anatomy) *int64 { return &r.HostNs }),
			i64Col("recovery_ns", func(r *Anatomy) *int64 { return &r.RecoveryNs }),
			i64Col("wire_ns", func(r *Anatomy) *int64 { return &r.WireNs }),
			i64Col("queue_ns", func(r *Anatomy) *int64 { return &r.QueueNs }),
			i64Col("switch_ns", func(r *Anatomy) *int64 { return &r.SwitchNs }),
			i64Col("unattributed_ns", func(r *Anatomy) *int64 { return &r.UnattributedNs }),
			strCol("joined", func(r *Anatomy) *string { return &r.Joined }),
			i64Col("client_tx_ns", func(r *Anatomy) *int64 { return &r.ClientTxNs }),
			i64Col("server_rx_ns", func(r *Anatomy) *int64 { return &r.ServerRxNs }),
			i64Col("server_app_ns", func(r *Anatomy) *int64 { return &r.ServerAppNs }),
			i64Col("server_tx_ns", func(r *Anatomy) *int64 { return &r.ServerTxNs }),
			i64Col("client_rx_ns", func(r *Anatomy) *int64 { return &r.ClientRxNs }),
			i64Col("req_queue_ns", func(r *Anatomy) *int64 { return &r.ReqQueueNs }),
			i64Col("resp_queue_ns", func(r *Anatomy) *int64 { return &r.RespQueueNs }),
			i64Col("host_hol_ns", func(r *Anatomy) *int64 { return &r.HOLNs }),
			intCol("hops", func(r *Anatomy) *int { return &r.Hops }),
			i64Col("preempt_lag_ns", func(r *Anatomy) *int64 { return &r.PreemptNs }).opt(),
			i64Col("last_hop_queue_ns", func(r *Anatomy) *int64 { return &r.LastHopQueueNs }).opt(),
		},
	}
}

// ErrNotGrouped says a file's rows of one experiment are not all together,
// in the order the run wrote them (calibration first, then each
// experiment's rows in one block, as runs write rpcs.csv and served.csv): a
// reader that takes one experiment at a time cannot serve it.
var ErrNotGrouped = errors.New("the rows of each experiment are not together")

// OpenRPCs opens a run directory's rpcs.csv, compressed or not
// (OpenRunFile), and returns it with its path.
func OpenRPCs(dir string) (io.ReadCloser, string, error) {
	rc, path, err := OpenRunFile(dir, RPCs().File)
	if err != nil {
		return nil, "", fmt.Errorf("open records: %w", err)
	}
	return rc, path, nil
}

// unsafeAgentName are the characters an agent's file names replace.
var unsafeAgentName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// AgentFile is the name of the file an agent writes one experiment's rows
// of format to as the experiment runs ("<exp>-<host>.rpcs.csv"), which
// the orchestrator reads back when the agent is killed.
func AgentFile[T any](exp, host string, format *CSVFormat[T]) string {
	return unsafeAgentName.ReplaceAllString(exp+"-"+host, "_") + "." + format.File
}
