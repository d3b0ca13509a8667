package rundir

import "io"

// TelemetrySample is one row of telemetry.csv without its experiment: the
// state of one (switch, port, queue) at one instant, the cumulative tor.p4
// counters and the depth, peak and delay registers, as the controller's
// poller reads them.
type TelemetrySample struct {
	Switch    string
	UnixNano  int64
	Port      int
	Queue     int
	EnqPkts   int64 // ingress_queue_counter: offered to the traffic manager
	EnqBytes  int64
	SentPkts  int64 // egress_queue_counter: left the queue
	SentBytes int64
	DepthPkts uint64 // queue_depth: enq_qdepth of the last packet
	PeakPkts  uint64 // queue_peak
	DelayUS   uint64 // queue_delay: deq_timedelta of the last packet
}

// TelemetryRow is one row of telemetry.csv.
type TelemetryRow struct {
	Experiment string
	TelemetrySample
}

// Telemetry is the telemetry.csv format: switch queues over time, written
// by the orchestrator (or `homatb controller`), read by reports, which need
// only the key columns, sent_bytes and depth_pkts.
func Telemetry() *CSVFormat[TelemetryRow] {
	return &CSVFormat[TelemetryRow]{
		File: "telemetry.csv",
		columns: []column[TelemetryRow]{
			strCol("experiment", func(r *TelemetryRow) *string { return &r.Experiment }),
			strCol("switch", func(r *TelemetryRow) *string { return &r.Switch }),
			i64Col("unix_ns", func(r *TelemetryRow) *int64 { return &r.UnixNano }),
			intCol("port", func(r *TelemetryRow) *int { return &r.Port }),
			intCol("queue", func(r *TelemetryRow) *int { return &r.Queue }),
			i64Col("enq_pkts", func(r *TelemetryRow) *int64 { return &r.EnqPkts }).opt(),
			i64Col("enq_bytes", func(r *TelemetryRow) *int64 { return &r.EnqBytes }).opt(),
			i64Col("sent_pkts", func(r *TelemetryRow) *int64 { return &r.SentPkts }).opt(),
			i64Col("sent_bytes", func(r *TelemetryRow) *int64 { return &r.SentBytes }),
			u64Col("depth_pkts", func(r *TelemetryRow) *uint64 { return &r.DepthPkts }),
			u64Col("peak_pkts", func(r *TelemetryRow) *uint64 { return &r.PeakPkts }).opt(),
			u64Col("delay_us", func(r *TelemetryRow) *uint64 { return &r.DelayUS }).opt(),
		},
	}
}

// HostSample is one row of hosts.csv: one host's Homa gauges at one time,
// its agent's homa_active_messages and homa_incoming_bytes counters.
type HostSample struct {
	Experiment, Host string
	UnixNs           int64
	// Active is how many inbound messages the grant scheduler keeps
	// active; Incoming the bytes it granted and has not yet received.
	Active, Incoming uint64
}

// Hosts is the hosts.csv format, written by the orchestrator for Homa
// experiments and read by reports.
func Hosts() *CSVFormat[HostSample] {
	return &CSVFormat[HostSample]{
		File: "hosts.csv",
		columns: []column[HostSample]{
			strCol("experiment", func(r *HostSample) *string { return &r.Experiment }),
			strCol("host", func(r *HostSample) *string { return &r.Host }),
			i64Col("unix_ns", func(r *HostSample) *int64 { return &r.UnixNs }),
			u64Col("active_messages", func(r *HostSample) *uint64 { return &r.Active }),
			u64Col("incoming_bytes", func(r *HostSample) *uint64 { return &r.Incoming }),
		},
	}
}

// TCPSample is one row of tcp.csv: what TCP_INFO said of one client
// connection at one time.
type TCPSample struct {
	Experiment, Host string
	// Peer is the server's ip:port, Conn the connection's index to it.
	Peer   string
	Conn   int
	UnixNs int64
	// CwndSegs is the congestion window in segments; SRTTus and RTTVarUs
	// the kernel's smoothed RTT and its variation; Retrans and DeliveredCE
	// the connection's totals so far.
	CwndSegs, SRTTus, RTTVarUs uint64
	Retrans, DeliveredCE       uint64
}

// TCPConns is the tcp.csv format: each TCP client connection's congestion
// window and RTT over time, sampled by the agents, merged by the
// orchestrator, read by reports.
func TCPConns() *CSVFormat[TCPSample] {
	return &CSVFormat[TCPSample]{
		File: "tcp.csv",
		columns: []column[TCPSample]{
			strCol("experiment", func(r *TCPSample) *string { return &r.Experiment }),
			strCol("host", func(r *TCPSample) *string { return &r.Host }),
			strCol("peer", func(r *TCPSample) *string { return &r.Peer }),
			intCol("conn", func(r *TCPSample) *int { return &r.Conn }),
			i64Col("unix_ns", func(r *TCPSample) *int64 { return &r.UnixNs }),
			u64Col("cwnd_segs", func(r *TCPSample) *uint64 { return &r.CwndSegs }),
			u64Col("srtt_us", func(r *TCPSample) *uint64 { return &r.SRTTus }),
			u64Col("rttvar_us", func(r *TCPSample) *uint64 { return &r.RTTVarUs }),
			u64Col("retrans", func(r *TCPSample) *uint64 { return &r.Retrans }),
			u64Col("delivered_ce", func(r *TCPSample) *uint64 { return &r.DeliveredCE }),
		},
	}
}

// The agent transport counters that hosts.csv samples.
const (
	CounterActiveMessages = "homa_active_messages"
	CounterIncomingBytes  = "homa_incoming_bytes"
)

// WriteTelemetry writes samples as telemetry.csv rows of one experiment,
// after the header when header is set. Several experiments share a file:
// the first writes the header, the rest append.
func WriteTelemetry(w io.Writer, experiment string, samples []TelemetrySample, header bool) error {
	tw, err := Telemetry().NewWriter(w, header)
	if err != nil {
		return err
	}
	row := TelemetryRow{Experiment: experiment}
	for _, s := range samples {
		row.TelemetrySample = s
		if err := tw.Write(&row); err != nil {
			return err
		}
	}
	return tw.Flush()
}
