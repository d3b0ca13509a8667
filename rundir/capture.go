package rundir

// CapturesDir is the run directory's folder of packet captures: one
// folder per captured experiment, one pcapng file per capture point, and
// the Wireshark dissector (DissectorFile) that decodes them.
const CapturesDir = "captures"

// DissectorFile is the dissector's name inside CapturesDir.
const DissectorFile = "homatb.lua"

// Capture is one pcapng file of an experiment (the scenario's capture
// block; docs/dissector.md).
type Capture struct {
	// File is the capture's path relative to the run directory
	// (captures/<experiment>/<point>.pcapng).
	File string `json:"file"`
	// Point says where it was taken: "host h1" (the host's NIC) or
	// "switch s1 port 1 (to h1)" (the ToR's side of h1's link).
	Point     string `json:"point"`
	Interface string `json:"interface"`
	Snaplen   int    `json:"snaplen"`
	MaxBytes  int64  `json:"max_bytes"`
	// Packets were written; Bytes is the file's size.
	Packets uint64 `json:"packets"`
	Bytes   int64  `json:"bytes"`
	// LeftOut counts frames not written because the file reached
	// MaxBytes; KernelDrops those the capture socket dropped because it
	// fell behind.
	LeftOut     uint64 `json:"left_out"`
	KernelDrops uint64 `json:"kernel_drops"`
	// Error says why the capture stopped early or never started.
	Error string `json:"error,omitempty"`
}
