package agentpb

// Values of FetchRecordsRequest.File.
const (
	// FileRecords is the experiment's records (rpcs.csv rows); "" too.
	FileRecords = "rpcs"
	// FileTCPSamples is its TCP client connections' samples (tcp.csv rows).
	FileTCPSamples = "tcp"
	// FileServed is what its servers answered (served.csv rows).
	FileServed = "served"
)
