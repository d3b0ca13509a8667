// Package scenario reads homatb scenario files: strict YAML decoding into a raw
// Scenario, named validation checks whose errors carry file, line and field,
// and expansion of sweeps into a plan of experiments.
package scenario

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/homatb/homatb/internal/units"
	"github.com/homatb/homatb/workloads"
)

// Scenario is one scenario file as written by its author, with defaults
// filled in. Field paths in error messages follow the yaml tags.
type Scenario struct {
	Name        string      `yaml:"name"`
	Description string      `yaml:"description"`
	Topology    Topology    `yaml:"topology"`
	Link        Link        `yaml:"link"`
	Switch      Switch      `yaml:"switch"`
	DSCP        DSCPPolicy  `yaml:"dscp"`
	Transports  []Transport `yaml:"transports"`
	Phases      []Phase     `yaml:"phases"`
	// Warmup runs before Duration; RPCs issued in it are recorded with phase
	// "warmup" and left out of statistics.
	Warmup   Duration `yaml:"warmup"`
	Duration Duration `yaml:"duration"`
	// Drain is how long outstanding RPCs get after the clients stop before
	// they are recorded as in flight; absent means 1s, and 0s is honoured.
	Drain       *Duration `yaml:"drain"`
	Repetitions int       `yaml:"repetitions"`
	// Seed seeds every random choice of the run; absent means 1, and 0 is
	// a seed like any other.
	Seed *uint64 `yaml:"seed"`
	// AllowOverload accepts open-loop phases and bursts that offer a link
	// more than its rate: such a run measures the backlog, which is an
	// error unless asked for.
	AllowOverload bool `yaml:"allow_overload"`
	// Simulated marks a scenario for homatb run --simulate only: its
	// rates or scale are beyond what this machine emulates, so it is
	// checked against the simulator's limits and an emulated run refuses it.
	Simulated bool `yaml:"simulated"`
	// Simulation is the simulator's latency model (simulation.go).
	Simulation  *Simulation `yaml:"simulation"`
	Calibration Calibration `yaml:"calibration"`
	Telemetry   Telemetry   `yaml:"telemetry"`
	Sweep       []Sweep     `yaml:"sweep"`
	// Faults are injected into every experiment (faults.go).
	Faults []Fault `yaml:"faults"`
	// Adversaries attack victims in every experiment (adversaries.go).
	Adversaries []Adversary `yaml:"adversaries"`
	// Report tunes how the report compares the configurations.
	Report Report `yaml:"report"`
	// Capture writes pcapng files of chosen experiments (capture.go).
	Capture *Capture `yaml:"capture"`
	// HostQdisc is the queue in front of each host's NIC when phases name
	// their transports and several share the hosts (cotenancy.go):
	// HostQdiscNone or HostQdiscPacer.
	HostQdisc string `yaml:"host_qdisc"`
}

// Report tunes the comparisons of the report and the terminal's headline.
type Report struct {
	// Baseline is the reference configuration every other one is compared
	// with, by its label (Transport.Config: "homa", "tcp-cubic",
	// "homa-basic"); empty means the first Homa entry, or the first
	// transport when there is no Homa.
	Baseline string `yaml:"baseline"`
	// HeadlinePhase names the phase the headline is about: its RPCs,
	// whatever their size, instead of the short messages (requests and
	// responses of at most 1000 bytes).
	HeadlinePhase string `yaml:"headline_phase"`
}

// BaselineConfig is the label of the configuration the report compares
// every other one with: report.baseline when given, else the first Homa
// entry's, else the first transport's; "" without transports.
func (s *Scenario) BaselineConfig() string {
	if s.Report.Baseline != "" {
		for _, t := range s.Transports {
			if t.ID() == s.Report.Baseline {
				return t.Config()
			}
		}
		return s.Report.Baseline
	}
	for _, t := range s.Transports {
		if t.Name == TransportHoma {
			return t.Config()
		}
	}
	if len(s.Transports) > 0 {
		return s.Transports[0].Config()
	}
	return ""
}

// Topology kinds.
const (
	KindStar      = "star"
	KindLeafSpine = "leaf-spine"
	// KindFatTree is a three-tier k-ary fat tree and KindRail a
	// rail-optimised fabric (clos.go).
	KindFatTree = "fat-tree"
	KindRail    = "rail"
)

// Values of topology.load_balancing.
const (
	LoadBalanceSpray = "spray"
	LoadBalanceECMP  = "ecmp"
)

// Topology describes the emulated rack: a star (one ToR, Hosts hosts), a
// leaf-spine fabric (Leaves ToRs with HostsPerLeaf hosts each, Spines
// spines), a fat tree (K) or a rail-optimised fabric (Rails, Servers,
// Groups, Spines); or, of kind external, machines that already exist.
type Topology struct {
	Kind         string `yaml:"kind"`
	Hosts        int    `yaml:"hosts"`
	Leaves       int    `yaml:"leaves"`
	Spines       int    `yaml:"spines"`
	HostsPerLeaf int    `yaml:"hosts_per_leaf"`
	// K is a fat tree's arity: k pods of k/2 edge and k/2 aggregation
	// switches, (k/2)² cores.
	K int `yaml:"k,omitempty"`
	// HostsPerEdge is a fat tree's hosts per edge switch; zero means k/2
	// (no oversubscription), more oversubscribes the edge.
	HostsPerEdge int `yaml:"hosts_per_edge,omitempty"`
	// CoreRate is the rate of a fat tree's aggregation-to-core links;
	// zero means UplinkRate (or link.rate).
	CoreRate Rate `yaml:"core_rate,omitempty"`
	// Rails, Servers and Groups shape a rail-optimised fabric: Groups of
	// Servers servers with Rails NICs each (one host per NIC).
	Rails   int `yaml:"rails,omitempty"`
	Servers int `yaml:"servers,omitempty"`
	Groups  int `yaml:"groups,omitempty"`
	// UplinkRate is the rate of the links between leaves and spines
	// (leaf-spine, rail) or edges and aggregation switches (fat tree);
	// zero means link.rate.
	UplinkRate Rate `yaml:"uplink_rate,omitempty"`
	// LoadBalancing spreads traffic over equal-cost paths at every tier
	// (leaf-spine, fat tree, rail):
	// LoadBalanceSpray per packet (the default, as the Homa paper's
	// simulator does) or LoadBalanceECMP per flow.
	LoadBalancing string `yaml:"load_balancing,omitempty"`
	// External lists the machines of kind external (external.go).
	External *External `yaml:"external,omitempty"`
}

// Link holds the properties every link of the topology shares.
type Link struct {
	Rate Rate `yaml:"rate"`
	MTU  int  `yaml:"mtu"`
	// Shaper is the host-side kernel shaper: "htb" (Mininet's default) or "tbf".
	Shaper string `yaml:"shaper"`
}

// Switch targets.
const (
	TargetEmbedded = "embedded"
	TargetBMv2     = "bmv2"
)

// Switch configures every P4 switch of the topology.
type Switch struct {
	Target string `yaml:"target"`
	// QueueDepthPkts is the depth of each of the eight egress queues.
	QueueDepthPkts int `yaml:"queue_depth_pkts"`
	// QueueDepthBytes also limits each queue by bytes (0: packets only).
	QueueDepthBytes ByteSize `yaml:"queue_depth_bytes"`
	// Buffer is the packet memory the queues share (embedded target only).
	Buffer Buffer `yaml:"buffer"`
	// ECNThresholdPkts marks CE on ECT packets at this queue depth (0: off).
	ECNThresholdPkts int `yaml:"ecn_threshold_pkts"`
	// ECN marks CE by a RED profile instead (nil: ECNThresholdPkts).
	ECN *ECN `yaml:"ecn,omitempty"`
	// PFC makes priorities lossless with 802.1Qbb PAUSE frames (embedded
	// target and the simulator).
	PFC  *PFC `yaml:"pfc,omitempty"`
	Pcap bool `yaml:"pcap"`
	// Postcards records every forwarded frame's times and transport key
	// (switch/<experiment>/<sw>.postcards) for the latency anatomy: on by
	// default on the embedded target, where a record costs 12-15 ns and
	// the file about 0.5 MB a second at the testbed's rates
	// (docs/bench-switch.md); BMv2 has no such records.
	Postcards *bool `yaml:"postcards"`
	// Records says which postcards the run keeps, compressed, once an
	// experiment's RPCs are known: "all", "sampled" (what the latency
	// anatomy reads of every short RPC, of the long ones' tail and of one
	// in 16 others; the default) or "none" (no postcards at all).
	Records string `yaml:"records"`
	// AntiSpoofing, Meters and Defences are tor.p4's defences on host
	// ports (defences.go).
	AntiSpoofing bool          `yaml:"anti_spoofing"`
	Meters       []SwitchMeter `yaml:"meters"`
	Defences     *bool         `yaml:"defences"`
}

// ECN is a RED marking profile, as RoCE switches are configured: an
// ECN-capable packet that finds fewer than KminPkts packets in its queue
// is never marked, one that finds KmaxPkts or more always, and in between
// with a probability rising linearly from 0 at Kmin to Pmax at Kmax.
type ECN struct {
	KminPkts int     `yaml:"kmin_pkts"`
	KmaxPkts int     `yaml:"kmax_pkts"`
	Pmax     float64 `yaml:"pmax"`
}

// PFC is priority flow control on every switch port: for each priority
// (egress queue) in Priorities, when the frames one port received and the
// switch still buffers reach XoffPkts, the switch sends a PAUSE for it out
// of that port, and a resume when they fall to XonPkts; a PAUSE received
// stops that priority on the port. Hosts obey it for RoCE's data. A
// lossless queue holds HeadroomPkts beyond queue_depth_pkts: the frames
// still arriving after a PAUSE went out.
type PFC struct {
	Priorities   []int `yaml:"priorities"`
	XoffPkts     int   `yaml:"xoff_pkts"`
	XonPkts      int   `yaml:"xon_pkts"`
	HeadroomPkts int   `yaml:"headroom_pkts"`
}

// Marks reports whether the switches mark ECN at all.
func (s Switch) Marks() bool { return s.ECN != nil || s.ECNThresholdPkts > 0 }

// PostcardsOn reports whether the switches record per-packet postcards.
func (s Switch) PostcardsOn() bool { return s.Postcards != nil && *s.Postcards }

// Buffer is a switch's packet memory beyond the per-queue depths, as
// commodity switches have it: one buffer shared by every queue of the
// switch with dynamic thresholds, and/or a limit per port over its eight
// queues. Zero values mean no such limit.
type Buffer struct {
	// SharedBytes puts every queue of the switch in one shared buffer of
	// this size; a queue may grow while its bytes stay below Alpha times
	// the free buffer (dynamic thresholds, Choudhury-Hahne).
	SharedBytes ByteSize `yaml:"shared_bytes"`
	Alpha       float64  `yaml:"alpha"`
	// PortBytes and PortPkts limit the sum over one port's queues.
	PortBytes ByteSize `yaml:"port_bytes"`
	PortPkts  int      `yaml:"port_pkts"`
}

// ByteSize is a size in bytes, written 1500, "64KB", "2MB" or "1MiB" (KB,
// MB and GB are powers of ten, KiB, MiB and GiB powers of two).
type ByteSize int64

// UnmarshalYAML reads a size with an optional unit.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return typeError(n, err.Error())
	}
	*b = v
	return nil
}

// ParseByteSize parses "1500", "64KB", "2MB", "1MiB" or "512k"
// (units.ParseSize).
func ParseByteSize(s string) (ByteSize, error) {
	v, err := units.ParseSize(s)
	return ByteSize(v), err
}

// DSCP policies.
const (
	DSCPClassSelector = "class-selector" // CSp (DSCP p<<3) to queue p
	DSCPSingleQueue   = "single-queue"   // everything to queue 0
	DSCPMap           = "map"            // explicit DSCP -> queue entries
)

// DSCPPolicy says how the switch maps DSCP to its eight queues.
type DSCPPolicy struct {
	Policy string      `yaml:"policy"`
	Map    map[int]int `yaml:"map"`
	// Trust lists the hosts whose DSCP the switch believes; when set, the
	// others' packets are re-marked as Untrusted says (defences.go).
	Trust     []string   `yaml:"trust"`
	Untrusted *Untrusted `yaml:"untrusted"`
}

// Transport names. pFabric, pHost, NDP, RoCE and UET run on the Homa engine as
// policies (their parameters are the homa block's); PIAS is kernel TCP
// with its packets tagged by bytes sent (the tcp block's, DCTCP by
// default). docs/transports.md describes each.
const (
	TransportHoma    = "homa"
	TransportTCP     = "tcp"
	TransportPFabric = "pfabric"
	TransportPHost   = "phost"
	TransportNDP     = "ndp"
	TransportPIAS    = "pias"
	TransportRoCE    = "roce"
	TransportUET     = "uet"
)

// TransportNames lists every transport a scenario may name.
var TransportNames = []string{TransportHoma, TransportTCP, TransportPFabric, TransportPHost, TransportNDP, TransportPIAS, TransportRoCE, TransportUET}

// Transport is one transport to compare, with its parameters.
type Transport struct {
	Name string `yaml:"name"`
	// Label tells apart two entries of the same transport (e.g. "basic").
	Label   string        `yaml:"label"`
	Homa    HomaParams    `yaml:"homa"`
	TCP     TCPParams     `yaml:"tcp"`
	PFabric PFabricParams `yaml:"pfabric"`
	NDP     NDPParams     `yaml:"ndp"`
	UET     UETParams     `yaml:"uet"`
	PIAS    PIASParams    `yaml:"pias"`
	// CutoffsFrom, set only by a simulated run's clock defaults, is the
	// size spec from whose distribution the run fixes Homa's unscheduled
	// cutoffs before the start (clock.go, workloadCutoffs).
	CutoffsFrom string `yaml:"-"`
	// CutoffLevels, set with CutoffsFrom, is how many levels those cutoffs
	// give unscheduled bytes; 0: the engine's rule (their share of bytes).
	CutoffLevels int `yaml:"-"`
}

// Engine reports whether the transport runs on the Homa engine (Homa,
// pFabric, pHost, NDP, RoCE, UET); the others are kernel TCP.
func (t Transport) Engine() bool {
	switch t.Name {
	case TransportHoma, TransportPFabric, TransportPHost, TransportNDP, TransportRoCE, TransportUET:
		return true
	}
	return false
}

// PFabricParams are pFabric's switch settings: every host-facing port
// becomes one rank-ordered queue of BufferBytes that drops the largest
// rank when full.
type PFabricParams struct {
	// BufferBytes is each port's buffer (default 36 KB, the paper's: about
	// two bandwidth-delay products of its 10 Gbit/s fabric).
	BufferBytes ByteSize `yaml:"buffer_bytes"`
}

// NDPParams are NDP's switch settings: a DATA packet arriving at a
// host-facing queue holding TrimThresholdPkts frames is cut to its
// header and sent at the highest priority.
type NDPParams struct {
	// TrimThresholdPkts defaults to 8, the paper's data queue.
	TrimThresholdPkts int `yaml:"trim_threshold_pkts"`
}

// UETParams are UET's switch settings: with TrimThresholdPkts, a UET data
// packet arriving at a queue holding that many frames is cut to its
// headers (64 bytes of UDP payload), marked by its DSCP and sent at the
// highest priority, and the receiver answers it with a TRIM NACK.
type UETParams struct {
	// TrimThresholdPkts is 0 (the default) for no trimming: full queues
	// drop, as UEC's fabrics without trimming do.
	TrimThresholdPkts int `yaml:"trim_threshold_pkts"`
}

// PIASParams are PIAS's demotion thresholds; empty means
// hostagent/pias's defaults for the link rate and calibrated RTT.
type PIASParams struct {
	// Thresholds are the bytes a connection's direction has sent at which
	// its packets drop one priority level, ascending (at most 7).
	Thresholds []ByteSize `yaml:"thresholds"`
	// IdleReset restarts the count after this long without data (default:
	// 4 base round trips).
	IdleReset Duration `yaml:"idle_reset"`
}

// ID is the transport's name in experiment names: name, or name-label.
func (t Transport) ID() string {
	if t.Label == "" {
		return t.Name
	}
	return t.Name + "-" + t.Label
}

// Config is the label that names this configuration in reports, unique
// within a scenario: name-label when the entry has a label; for kernel TCP
// without one, tcp and its congestion control ("tcp-cubic", "tcp-dctcp");
// otherwise the transport's name ("homa", "pfabric").
func (t Transport) Config() string {
	if t.Label == "" && t.Name == TransportTCP && t.TCP.Congestion != "" {
		return t.Name + "-" + t.TCP.Congestion
	}
	return t.ID()
}

// TCPParams mirrors agentpb.TcpParams, but for the simulator's
// OpenWhenBusy, NICPriorities and MinRTO.
type TCPParams struct {
	Congestion         string `yaml:"congestion"`
	ConnectionsPerPeer uint32 `yaml:"connections_per_peer"`
	// OpenWhenBusy (simulator only: the TCP model's Config.OpenWhenBusy)
	// sends each message on an idle connection of its client-server pair
	// and opens another when all are busy, as the PIAS and pFabric papers'
	// simulations did; connections_per_peer are opened first.
	OpenWhenBusy bool `yaml:"open_when_busy"`
	// NICPriorities (simulator only: simnet.Node.PrioritizeNIC) has each
	// host's NIC queue segments by their DSCP's class and serve them in
	// strict priority, as the switches do, as the PIAS and pFabric papers'
	// simulated hosts did; without it the NIC is one FIFO.
	NICPriorities bool `yaml:"nic_priorities"`
	// MinRTO (simulator only: the TCP model's Config.MinRTO and InitRTO)
	// is the retransmission timeout's floor and its value before a
	// connection's first RTT sample, as ns-2's minrto_ and rtxcur_init_,
	// which the PIAS simulations set alike; 0 keeps the kernel's 200 ms
	// and 1 s.
	MinRTO Duration `yaml:"min_rto"`
}

// Arrival processes.
const (
	ArrivalsPoisson = "poisson"
	ArrivalsClosed  = "closed"
)

// Phase is one traffic class of the workload: a set of clients sending RPCs
// to a set of servers. All phases of an experiment run at the same time.
type Phase struct {
	Name string `yaml:"name"`
	// Transport is the label of the transports entry this phase's RPCs
	// use (cotenancy.go); empty means every transport, one experiment each.
	Transport string `yaml:"transport,omitempty"`
	// Clients and Servers are host names or ranges ("h2-h9"), or "all".
	Clients []string `yaml:"clients"`
	Servers []string `yaml:"servers"`
	// Sizes is a size spec in the syntax of workloads.ParseSizeSpec.
	Sizes    string `yaml:"sizes"`
	Arrivals string `yaml:"arrivals"`
	// Load is the offered load of each client as a fraction of its link rate
	// (Poisson arrivals); RateRPS sets the rate directly instead.
	Load           float64 `yaml:"load"`
	RateRPS        float64 `yaml:"rate_rps"`
	MaxOutstanding uint32  `yaml:"max_outstanding"`
	// LoadOf says what Load is a fraction of the link for: LoadOfMessages
	// (the default) or LoadOfWire.
	LoadOf string `yaml:"load_of"`
	// ResponseBytes 0 echoes the request's length.
	ResponseBytes uint32 `yaml:"response_bytes"`
	// OneWay makes each request a one-way message: the server answers
	// nothing, and the message's latency ends when its last byte reaches
	// the server (the Homa paper's simulations time one-way messages).
	// Simulated runs only: the instant a peer has a message is known on
	// the simulator's one clock, not on two hosts'.
	OneWay  bool    `yaml:"one_way"`
	MaxRPCs uint64  `yaml:"max_rpcs"`
	Incast  *Incast `yaml:"incast"`
	// Hosts and Collective make the phase a collective among Hosts (in
	// ring order) instead of clients sending to servers (collective.go).
	Hosts      []string    `yaml:"hosts,omitempty"`
	Collective *Collective `yaml:"collective,omitempty"`
	// ConnectionMatrix makes the phase an htsim connection matrix (a file,
	// relative to the scenario's) run among Hosts, node i on the i-th
	// (all the topology's hosts when Hosts is empty; matrix.go). Matrix is
	// the file parsed by validation.
	ConnectionMatrix string            `yaml:"connection_matrix,omitempty"`
	Matrix           *workloads.Matrix `yaml:"-" json:"-"`
}

// What a phase's load counts (Phase.LoadOf).
const (
	// LoadOfMessages counts message bytes only, as cp_node does.
	LoadOfMessages = "messages"
	// LoadOfWire counts the messages' DATA frames as the link carries
	// them: payload, the engine's IPv4 and DATA headers, and the link's
	// framing, per packet. HomaSimulation's load factor counts the wire
	// the same way (its realLoadFactor; grants aside, docs/scenarios.md).
	LoadOfWire = "wire"
)

// Incast makes every client of a phase send at the same instants.
type Incast struct {
	Interval Duration `yaml:"interval"`
	Jitter   Duration `yaml:"jitter"`
}

// Calibration sets the unloaded-RTT measurement done before the experiments.
type Calibration struct {
	Sizes   []uint32 `yaml:"sizes"`
	Samples uint32   `yaml:"samples"`
	// Skip leaves out calibration (slowdown is then unavailable).
	Skip bool `yaml:"skip"`
}

// Telemetry sets the switch sampling during experiments.
type Telemetry struct {
	Interval Duration `yaml:"interval"`
}

// Sweep lists values for one parameter, addressed by a dotted path such as
// "phases.bulk.load" or "transports.homa.homa.overcommit" (a list element is
// picked by its name or by its index), or for several parameters in
// lockstep: with Params, each value is a list of one value per parameter,
// and the parameters change together rather than over their cartesian
// product (a workload and the measured time that suits it).
type Sweep struct {
	Param  string      `yaml:"param"`
	Params []string    `yaml:"params"`
	Values []yaml.Node `yaml:"values"`
}

// Paths are the parameters the sweep sets: Params, or Param alone.
func (s Sweep) Paths() []string {
	if len(s.Params) > 0 {
		return s.Params
	}
	return []string{s.Param}
}

// tuple is what value i sets, one node per path (nil where a lockstep
// value is not a list of len(Paths) items; checkSweeps reports it).
func (s Sweep) tuple(i int) []*yaml.Node {
	v := &s.Values[i]
	if len(s.Params) == 0 {
		return []*yaml.Node{v}
	}
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	if v.Kind != yaml.SequenceNode || len(v.Content) != len(s.Params) {
		return nil
	}
	return v.Content
}

// Rate is a link rate in bits per second, written "100Mbit", "1Gbit",
// "250mbps" or a plain number of bits per second.
type Rate uint64

// UnmarshalYAML reads a rate with a unit.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseRate(n.Value)
	if err != nil {
		return typeError(n, err.Error())
	}
	*r = v
	return nil
}

// MarshalYAML writes the rate back in the unit it reads best in.
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// String formats the rate as "100Mbit" or "1Gbit".
func (r Rate) String() string {
	switch {
	case r >= 1e9 && uint64(r)%1e9 == 0:
		return fmt.Sprintf("%dGbit", uint64(r)/1e9)
	case r >= 1e6 && uint64(r)%1e6 == 0:
		return fmt.Sprintf("%dMbit", uint64(r)/1e6)
	case r >= 1e3 && uint64(r)%1e3 == 0:
		return fmt.Sprintf("%dKbit", uint64(r)/1e3)
	}
	return fmt.Sprintf("%dbit", uint64(r))
}

// ParseRate parses "100Mbit", "1gbps", "2.5Gbit/s", "1000000" (bits per
// second) or "12.5MB/s" (bytes per second): units.ParseRate.
func ParseRate(s string) (Rate, error) {
	v, err := units.ParseRate(s)
	return Rate(v), err
}

// Duration is a time.Duration written as "10s" or "500ms".
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return typeError(n, fmt.Sprintf("expected a duration such as 10s or 500ms, got %q", n.Value))
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// typeError reports a bad scalar the way yaml.v3 reports its own type
// errors, so the line survives decoding.
func typeError(n *yaml.Node, msg string) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, msg)}}
}

// MarshalJSON writes a sweep with its values as text, for manifest.json: a
// lockstep sweep's values as one list of texts per value.
func (s Sweep) MarshalJSON() ([]byte, error) {
	if len(s.Params) > 0 {
		vals := make([][]string, len(s.Values))
		for i := range s.Values {
			for _, n := range s.tuple(i) {
				vals[i] = append(vals[i], scalarText(n))
			}
		}
		return json.Marshal(struct {
			Params []string   `json:"params"`
			Values [][]string `json:"values"`
		}{s.Params, vals})
	}
	vals := make([]string, len(s.Values))
	for i := range s.Values {
		vals[i] = scalarText(&s.Values[i])
	}
	return json.Marshal(struct {
		Param  string   `json:"param"`
		Values []string `json:"values"`
	}{s.Param, vals})
}
