package runfmt

// RPC statuses: every issued RPC ends in exactly one.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusInflight  = "inflight"
)

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
		},
	}
}
