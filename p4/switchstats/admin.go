package switchstats

// FaultSetting is the fault injection of one port as the embedded switch's
// admin endpoint (GET and POST /faults) reads and writes it. In a POST, an
// omitted field keeps its value.
type FaultSetting struct {
	Port      uint16   `json:"port"`
	DropProb  *float64 `json:"drop_prob,omitempty"`
	DropEvery *uint64  `json:"drop_every,omitempty"`
	// Direction is what the loss rules apply to: DirectionEgress (frames
	// the port sends, towards its host), DirectionIngress (frames it
	// receives) or DirectionBoth.
	Direction *string `json:"direction,omitempty"`
	// DownFor takes the link down for that long from now, both ways, as a
	// Go duration ("500ms"); "0s" brings it up. GET shows what is left.
	DownFor *string `json:"down_for,omitempty"`
}

// The names of a fault's directions in FaultSetting.Direction.
const (
	DirectionEgress  = "egress"
	DirectionIngress = "ingress"
	DirectionBoth    = "both"
)

// PostcardSummary is what a recording of postcards wrote (the answer to
// POST /postcards/stop): records in the file, and records lost because a
// ring was full.
type PostcardSummary struct {
	Path    string `json:"path"`
	Records uint64 `json:"records"`
	Dropped uint64 `json:"dropped"`
}
