package rundir

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/homatb/homatb/internal/fabric"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ManifestFile is the manifest's name in the run directory.
const ManifestFile = "manifest.json"

// Manifest is manifest.json (docs/formats.md): what ran, on what, and how
// far it got. The orchestrator rewrites it after every experiment, so an
// interrupted run keeps what it measured; reports read it.
type Manifest struct {
	Run          string `json:"run"`
	Tag          string `json:"tag"`
	ScenarioFile string `json:"scenario_file"`
	// Scenario is the resolved scenario as the orchestrator marshalled it;
	// readers get it as generic JSON.
	Scenario   any   `json:"scenario"`
	Started    int64 `json:"started_unix_ns"`
	Ended      int64 `json:"ended_unix_ns"`
	Incomplete bool  `json:"incomplete"`
	// Error says why the run stopped early, when it did.
	Error     string            `json:"error,omitempty"`
	Versions  map[string]string `json:"versions"`
	GitCommit string            `json:"git_commit"`
	Machine   Machine           `json:"machine"`
	// Mode is how the run ran: "emulated" (real packets on this machine's
	// network, or real machines) or "simulated" (homatb run --simulate:
	// the same engine and switch code in virtual time); empty in runs
	// written before it existed, which were emulated.
	Mode string `json:"mode,omitempty"`
	// Simulation describes a simulated run's simulator; nil otherwise.
	Simulation *Simulation `json:"simulation,omitempty"`
	// Scheduling is how switches and agents were scheduled: "realtime"
	// (SCHED_FIFO, their defaults), "nice" (homatb run --realtime=false),
	// or "nice, slice D" (homatb run --slice D).
	Scheduling string `json:"scheduling,omitempty"`
	// LinkBps is the link rate as runs before the fabric description
	// wrote it; new runs leave it out and write Fabric.LinkBps only.
	// Read RateBps, which takes either.
	LinkBps uint64 `json:"link_bps,omitempty"`
	// Fabric describes the emulated network for the ideal RTT slowdown
	// divides by; nil in runs written before it existed.
	Fabric *FabricRecord `json:"fabric,omitempty"`
	Seeds  []uint64      `json:"seeds"`
	// Calibration maps a transport to the outcome of its calibration.
	Calibration map[string]Calibration `json:"calibration,omitempty"`
	Fidelity    []string               `json:"fidelity"`
	// Baseline is the configuration (Experiment.Config) the report
	// compares every other one with; empty in runs written before it
	// existed, where readers pick Homa.
	Baseline string `json:"baseline,omitempty"`
	// Order is every planned experiment's name in the order the run runs
	// them: repetitions outermost, so each repetition runs every
	// configuration once (ABAB). Experiments lists those that ran, in the
	// same order.
	Order       []string     `json:"order,omitempty"`
	Experiments []Experiment `json:"experiments"`
	// Congestion lists the BPF TCP congestion controls the run registered
	// (kernel names, e.g. homatb_dctcp; docs/tcp.md).
	Congestion []string `json:"bpf_congestion,omitempty"`
	// Machines describes each host's machine in a run on real machines
	// (topology kind external); emulated hosts share Machine.
	Machines map[string]HostMachine `json:"machines,omitempty"`
}

// RateBps is the run's link rate: the fabric's, or in runs written before
// it, the manifest's own link_bps; 0 when neither is known.
func (m *Manifest) RateBps() uint64 {
	if m.Fabric != nil && m.Fabric.LinkBps > 0 {
		return m.Fabric.LinkBps
	}
	return m.LinkBps
}

// NewFabricRecord is the fabric description f as manifest.json holds it.
func NewFabricRecord(f *fabric.Fabric) *FabricRecord {
	r := &FabricRecord{LinkBps: f.RateBps, MTU: f.MTU, FrameOverhead: f.Framing, InterSwitchLinks: f.InterSwitchLinks, PodLinks: f.PodLinks}
	if f.UplinkBps != 0 && f.UplinkBps != f.RateBps {
		r.UplinkBps = f.UplinkBps
	}
	if f.CoreBps != 0 && f.CoreBps != f.Uplink() {
		r.CoreBps = f.CoreBps
	}
	r.EdgeUplinks, r.PodUplinks = f.EdgeUplinks, f.PodUplinks
	for _, h := range f.Hosts {
		r.Hosts = append(r.Hosts, FabricHost{Name: h.Name, IP: h.IP, Switch: h.Switch})
		if f.PodLinks > 0 {
			if r.SwitchPods == nil {
				r.SwitchPods = map[string]int{}
			}
			r.SwitchPods[h.Switch] = h.Pod
		}
	}
	return r
}

// HostRole names a host's role in an experiment from whether it ran a
// client workload and whether it served.
func HostRole(client, server bool) string {
	switch {
	case client && server:
		return RoleBoth
	case client:
		return RoleClient
	}
	return RoleServer
}

// FabricRecord is the manifest's record of the fabric (internal/fabric's
// Fabric, which a run lays out): the network as an ideal transport would
// see it, link rate, packet sizes and who is behind which switch. Its JSON
// keys are those of every run directory written so far.
type FabricRecord struct {
	LinkBps uint64 `json:"link_bps"`
	MTU     int    `json:"mtu"`
	// FrameOverhead is what a packet takes on a link beyond its IP packet
	// (Ethernet header, FCS, preamble and gap: what the switch's shaper
	// charges).
	FrameOverhead int `json:"frame_overhead_bytes"`
	// Hosts lists every host with its address and its top-of-rack switch.
	Hosts []FabricHost `json:"hosts"`
	// InterSwitchLinks is how many links a packet crosses between two
	// top-of-rack switches (2 in a leaf-spine: leaf, spine, leaf).
	InterSwitchLinks int `json:"inter_switch_links"`
	// PodLinks is how many links a packet crosses between two edge
	// switches of one pod (a fat tree's 2), and SwitchPods each edge
	// switch's pod; both empty for fabrics without pods.
	PodLinks   int            `json:"pod_links,omitempty"`
	SwitchPods map[string]int `json:"switch_pods,omitempty"`
	// UplinkBps is the rate of the links between switches when it is not
	// LinkBps (topology.uplink_rate); 0 otherwise.
	UplinkBps uint64 `json:"uplink_bps,omitempty"`
	// CoreBps is the rate of a fat tree's aggregation-to-core links when
	// it is not the uplinks' (topology.core_rate); 0 otherwise.
	CoreBps uint64 `json:"core_bps,omitempty"`
	// EdgeUplinks is how many links join each top-of-rack switch to the
	// tier above and PodUplinks each fat tree pod to the cores
	// (internal/fabric's Fabric); 0 where there are none, and in runs
	// written before they were recorded.
	EdgeUplinks int `json:"edge_uplinks,omitempty"`
	PodUplinks  int `json:"pod_uplinks,omitempty"`
}

// Uplink is the rate of the links between switches (bits/s), and Core a
// fat tree's aggregation-to-core rate: the recorded values, or the rate
// they default to.
func (f *FabricRecord) Uplink() uint64 { return cmp.Or(f.UplinkBps, f.LinkBps) }

// Core: see Uplink.
func (f *FabricRecord) Core() uint64 { return cmp.Or(f.CoreBps, f.Uplink()) }

// FabricHost is one host of the fabric.
type FabricHost struct {
	Name   string `json:"name"`
	IP     string `json:"ip"`
	Switch string `json:"switch"`
}

// SwitchOf maps each host's name and its address to its switch.
func (f *FabricRecord) SwitchOf() map[string]string {
	m := make(map[string]string, 2*len(f.Hosts))
	for _, h := range f.Hosts {
		m[h.Name], m[h.IP] = h.Switch, h.Switch
	}
	return m
}

// LinksBetween returns how many links a packet crosses from a host behind
// switch sa to one behind sb, or 0 when either is unknown.
func (f *FabricRecord) LinksBetween(sa, sb string) int {
	switch {
	case sa == "" || sb == "":
		return 0
	case sa == sb:
		return 2
	case f.PodLinks > 0 && f.SwitchPods[sa] != 0 && f.SwitchPods[sa] == f.SwitchPods[sb]:
		return 2 + f.PodLinks
	}
	return 2 + f.InterSwitchLinks
}

// Machine describes the host the run used.
type Machine struct {
	CPUs     int    `json:"cpus"`
	MemBytes uint64 `json:"mem_bytes"`
	Hostname string `json:"hostname"`
}

// Calibration is the outcome of one transport's calibration.
type Calibration struct {
	// RTTus maps request length to the median unloaded RTT in µs.
	RTTus map[uint32]float64 `json:"rtt_us"`
	// UnschedBytes is link rate x the smallest size's unloaded RTT (Homa).
	UnschedBytes uint32 `json:"unsched_bytes,omitempty"`
	// ResponseBytes is the calibration RPCs' response length; 0 echoed
	// the request.
	ResponseBytes uint32 `json:"response_bytes"`
	// OneWayUs maps message length to the median unloaded one-way time in
	// µs, for runs of one-way messages (simulated): the calibration rows
	// in rpcs.csv are then these messages, and RTTus holds the round trip
	// of the smallest size only, which the transports' parameters derive
	// from.
	OneWayUs map[uint32]float64 `json:"one_way_us,omitempty"`
}

// Experiment is one experiment's entry in the manifest.
// ConfiguredLoad is the load one transport's clients of a shared
// experiment were configured to offer (Experiment's fields of the same
// names).
type ConfiguredLoad struct {
	ConfiguredBps  float64 `json:"configured_bps"`
	ConfiguredRPS  float64 `json:"configured_rps"`
	UnratedClients int     `json:"unrated_clients"`
}

type Experiment struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	// Label tells apart two configurations of one transport (the
	// scenario's transports[].label).
	Label string `json:"label,omitempty"`
	// Config is the label reports name this configuration by, unique in
	// the run ("homa", "tcp-cubic", "homa-basic"); empty in runs written
	// before it existed, where readers use transport-label.
	Config string `json:"config,omitempty"`
	// Transports are the transports of a shared experiment, which runs
	// them at once (each phase on its own): the names its records carry.
	// Transport is then the first. Absent for one transport.
	Transports []string `json:"transports,omitempty"`
	// Configs are the same transports' configuration labels, and
	// PartLoads the load each one's clients were configured to offer
	// (the fields below are their sum).
	Configs   []string          `json:"configs,omitempty"`
	PartLoads []ConfiguredLoad  `json:"part_loads,omitempty"`
	Params    map[string]string `json:"params"`
	// LinkBps repeats the run's link rate in runs written before the
	// fabric description; new runs leave it out (Manifest.RateBps).
	LinkBps    uint64   `json:"link_bps,omitempty"`
	Started    int64    `json:"started_unix_ns"`
	Ended      int64    `json:"ended_unix_ns"`
	WarmupMs   int64    `json:"warmup_ms"`
	DurationMs int64    `json:"duration_ms"`
	Seed       uint64   `json:"seed"`
	Receivers  []string `json:"receivers"`
	// ConfiguredBps is the request load the open-loop clients were
	// configured to offer (bits/s, message bytes only); 0 for closed loops.
	ConfiguredBps float64 `json:"configured_bps"`
	// ConfiguredRPS is the sum of those clients' rates (RPCs/s).
	ConfiguredRPS float64 `json:"configured_rps"`
	// UnratedClients counts the clients whose load no rate fixes (closed
	// loops, bursts, bounded counts): with any, the configured load of the
	// experiment as a whole is unknown.
	UnratedClients int      `json:"unrated_clients"`
	Fidelity       []string `json:"fidelity"`
	Incomplete     bool     `json:"incomplete"`
	// RPCs are the agents' books summed over hosts, warm-up included.
	RPCs Books `json:"rpcs"`
	// ClientPhases names the scenario phase each client host ran (its
	// workload), so reports can split an experiment's RPCs by phase;
	// absent in runs written before it existed.
	ClientPhases map[string]string `json:"client_phases,omitempty"`
	// TransportCounters are the transport counters of every host that took
	// part, clients and servers, merged by MergeCounters; Hosts has each
	// host's own, with its role.
	TransportCounters map[string]uint64 `json:"transport_counters,omitempty"`
	Hosts             []HostCounters    `json:"hosts,omitempty"`
	// CPUBusy is the machine's busy fraction over the experiment;
	// AgentCPUMs the CPU time the agents that took part used.
	CPUBusy    float64 `json:"cpu_busy"`
	AgentCPUMs uint64  `json:"agent_cpu_ms"`
	// LoadAvg1 is the machine's 1-minute load average as the experiment
	// started; CPUSteal the fraction of CPU time the hypervisor took during
	// it; OtherCPUs how many CPUs processes outside the run kept busy on
	// average.
	LoadAvg1  float64 `json:"load_avg_1m"`
	CPUSteal  float64 `json:"cpu_steal"`
	OtherCPUs float64 `json:"other_cpus"`
	// Captures are the experiment's packet captures (capture.go).
	Captures []Capture `json:"captures,omitempty"`
	// Adversaries are what the scenario's adversaries sent, kept apart
	// from the books: their packets are no RPCs of the run.
	Adversaries []Adversary `json:"adversaries,omitempty"`
}

// Adversary is what one adversary (scenario adversaries[i], homatb
// adversary) sent in an experiment.
type Adversary struct {
	// Host is the adversary, TargetHost its victim (scenario names; the
	// orchestrator fills them in), Target the victim's address.
	Host       string `json:"host,omitempty"`
	TargetHost string `json:"target_host,omitempty"`
	Kind       string `json:"kind"`
	Target     string `json:"target"`
	// RateBps is the configured rate; Packets, Bytes (IP payload) and
	// Batches (sendmmsg calls) what went out in Seconds; WriteErrors the
	// batches the kernel refused (a full socket buffer).
	RateBps     float64 `json:"rate_bps"`
	Packets     uint64  `json:"packets"`
	Bytes       uint64  `json:"bytes"`
	Batches     uint64  `json:"batches"`
	WriteErrors uint64  `json:"write_errors"`
	Seconds     float64 `json:"seconds"`
}

// Books count an experiment's RPCs: Issued = Completed + Failed + InFlight.
type Books struct {
	Issued    uint64 `json:"issued"`
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	InFlight  uint64 `json:"in_flight"`
}

// Host roles in an experiment.
const (
	RoleClient = "client"
	RoleServer = "server"
	// RoleBoth is a host that sends RPCs and serves them (all-to-all
	// traffic): one transport instance carries both, so its counters cannot
	// be split between the two.
	RoleBoth = "client+server"
)

// HostCounters is one host's share of an experiment: its role and its
// agent's counters at the end of the measurement.
type HostCounters struct {
	Host string `json:"host"`
	Role string `json:"role"`
	// Served counts RPCs this host's servers answered.
	Served uint64 `json:"served"`
	// Transport is the host's transport counters over the experiment (the
	// agent builds a fresh transport per experiment).
	Transport map[string]uint64 `json:"transport"`
}

// IsGaugeCounter reports whether a transport counter (named with its
// transport prefix, such as homa_active_max) holds a level, not a count.
// Over hosts a gauge takes the maximum, since a sum of peaks means nothing.
func IsGaugeCounter(name string) bool {
	_, base, _ := strings.Cut(name, "_")
	switch base {
	case "active_messages", "active_max", "incoming_bytes", "cutoffs_version":
		return true
	}
	return false
}

// MergeCounters adds the transport counters src into dst: counts are
// summed, gauges keep the larger value.
func MergeCounters(dst, src map[string]uint64) {
	for k, v := range src {
		if IsGaugeCounter(k) {
			dst[k] = max(dst[k], v)
		} else {
			dst[k] += v
		}
	}
}

// WriteManifest writes dir/manifest.json atomically (write, then rename),
// so a reader never sees half a file even when the run is killed mid-write.
func WriteManifest(dir string, m *Manifest) error {
	return WriteJSON(filepath.Join(dir, ManifestFile), m)
}

// ReadManifest loads dir/manifest.json and also returns its bytes. A
// missing manifest returns an error that matches fs.ErrNotExist.
func ReadManifest(dir string) (*Manifest, []byte, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &m, b, nil
}

// isNotExist reports whether err means a file is absent.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Run modes (Manifest.Mode).
const (
	ModeEmulated  = "emulated"
	ModeSimulated = "simulated"
)

// Simulation is what a simulated run's simulator did and what it stood
// on.
type Simulation struct {
	// Events counts the discrete events run; SimulatedSeconds the virtual
	// time they covered; WallSeconds the time the simulator took.
	Events           uint64  `json:"events"`
	SimulatedSeconds float64 `json:"simulated_seconds"`
	WallSeconds      float64 `json:"wall_seconds"`
	// EventsPerSecond and SimPerWall are the simulator's speed: events per
	// wall second, and simulated seconds per wall second.
	EventsPerSecond float64 `json:"events_per_second"`
	SimPerWall      float64 `json:"simulated_per_wall_second"`
	// Model says what the simulation models and what it leaves out.
	Model []string `json:"model"`
	// ClockDefaults are the settings the scenario left out that the
	// simulated run took from the modelled hardware rather than the
	// emulation's defaults (testbed/scenario, clock.go).
	ClockDefaults []ClockDefault `json:"clock_defaults,omitempty"`
}

// ClockDefault is one setting a scenario left out that a simulated run
// filled with the modelled hardware's value.
type ClockDefault struct {
	// Key is the setting's path in the scenario
	// ("simulation.switch_delay", "transports[0].homa.max_nic_backlog_us").
	Key string `json:"key"`
	// Value is the value the simulated run took, Emulated the one an
	// emulated run takes.
	Value    string `json:"value"`
	Emulated string `json:"emulated"`
	// Source names the hardware or paper the value is from.
	Source string `json:"source"`
}
