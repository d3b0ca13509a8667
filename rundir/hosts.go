package rundir

// HostMachine is one host of a run on real machines (an external
// topology) as manifest.json records it: the machine its agent runs on and
// how far that machine's clock is from the orchestrator's.
type HostMachine struct {
	// Agent is the agent's control address.
	Agent        string `json:"agent"`
	Hostname     string `json:"hostname"`
	Kernel       string `json:"kernel"`
	CPUModel     string `json:"cpu_model"`
	CPUs         int    `json:"cpus"`
	NIC          string `json:"nic"`
	NICDriver    string `json:"nic_driver"`
	NICSpeedMbps int64  `json:"nic_speed_mbps"`
	AgentVersion string `json:"agent_version"`
	// ClockOffsetUs is the agent's clock less the orchestrator's, from the
	// Status exchange with the shortest round trip; the true offset is
	// within ClockBoundUs (half that round trip) of it.
	ClockOffsetUs float64 `json:"clock_offset_us"`
	ClockBoundUs  float64 `json:"clock_bound_us"`
}
