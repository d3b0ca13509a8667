package dataplane

// Verdict is what ingress decided for one packet.
type Verdict struct {
	EgressPort uint16 // valid when !Drop
	Queue      uint8  // 0..7, 7 served first
	Drop       bool
	// Mode is how the egress port queues the frame (tor.p4's port_mode);
	// the zero value is strict priority.
	Mode Mode
	// Trim says what ModeTrimAbove may cut the frame to: an untrimmed
	// Homa DATA frame longer than its header, or a UET data packet longer
	// than its trimmed size; TrimNone for every other frame.
	Trim Trim
	// ModeArg is the mode's argument: ModeRankOrder's buffer in bytes,
	// ModeTrimAbove's threshold in packets.
	ModeArg uint32
	// Rank orders the frame on a ModeRankOrder port, smallest first.
	Rank uint32
}

// EgressMeta is the v1model queueing metadata of a packet leaving the traffic manager.
type EgressMeta struct {
	IngressPort, EgressPort uint16
	Queue                   uint8
	EnqDepthPkts            uint32 // depth of this (port, queue) when the packet arrived, before it
	DeqDepthPkts            uint32 // depth after it left
	DeqTimedeltaUs          uint32 // time spent queued, µs
	Length                  int    // frame length in bytes
}

// Pipeline is the packet-processing program the dataplane runs around its
// traffic manager. Implementations are called concurrently from several
// goroutines: Ingress for different ingress ports, Egress for different
// egress ports (one frame of a port at a time).
type Pipeline interface {
	// Ingress parses frame, runs the ingress control and may rewrite frame in place
	// (MACs, TTL, checksum, ARP reply). It must not retain frame or allocate.
	Ingress(frame []byte, inPort uint16, v *Verdict)
	// Egress runs the egress control (counters, registers, ECN marking) on a frame
	// about to be transmitted; it may rewrite frame in place; false drops it.
	Egress(frame []byte, md *EgressMeta) bool
}

// TimedPipeline is a Pipeline whose meters take a frame's arrival time
// (tor.p4's, like v1model's ingress_global_timestamp): the dataplane hands
// it the time it read once for a batch and sets the pipeline's clock to its
// own, instead of the pipeline reading a clock per packet.
type TimedPipeline interface {
	Pipeline
	// IngressAt is Ingress for a frame that arrived at now (ns).
	IngressAt(frame []byte, inPort uint16, now int64, v *Verdict)
	// SetClock makes now the pipeline's clock (ns, never decreasing).
	SetClock(now func() int64)
}

// DefenceCounters is what a pipeline with defences against lying hosts
// (tor.p4's) tells the switch statistics about the packets that arrived
// on a port: DSCP re-marked, over a meter, dropped for a spoofed source.
type DefenceCounters interface {
	DefenceCounters(inPort uint16) (remarked, metered, spoofed uint64)
}
