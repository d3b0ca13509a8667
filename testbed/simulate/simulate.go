// Package simulate is what a run in virtual time (homatb run --simulate,
// testbed.Options.Simulate) has of its own: simnet's discrete-event
// network of homatb's own engine hosts and tor.p4 switches built from the
// plan, and the simulated hosts running the shared drivers on its clock.
// testbed's run drives it through the same lifecycle as an emulated run
// (plan, calibration, experiments, records, report), so the same reports
// read it; calibration is measured in the simulator, so the slowdowns
// divide by the simulator's own unloaded RTTs.
package simulate

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/homatb/homatb/controller"
	"github.com/homatb/homatb/driver"
	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/simnet"
	"github.com/homatb/homatb/simnet/tcpmodel"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
	"github.com/homatb/homatb/testbed/topo"
	"github.com/homatb/homatb/workloads"
)

// Epoch is the wall time a simulated run's first experiment starts at:
// fixed, so that the same scenario and seed write the same rpcs.csv.
// Each later experiment starts an hour of virtual time after the last.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// model says what the simulator models and leaves out, in the manifest.
var model = []string{
	"hosts: homatb's Homa engine (homa.Driven) with the scenario's configuration; servers reply at once (no application or host software time)",
	"switches: tor.p4's pipeline (p4/pipeline) programmed by the controller over P4Runtime, then the switch's traffic manager and shaper (p4/dataplane.PortModel)",
	"links: the fabric's rate and framing, store and forward",
	"not modelled: the kernel's TCP itself, host CPU and wake-up noise, telemetry series, hosts.csv, agent kills",
}

// tcpModel says what stands for the kernel's TCP when a scenario has tcp
// or pias transports.
const tcpModel = "tcp, pias: a model of TCP (simnet/tcpmodel), not the kernel's: tcprpc's framing on connections_per_peer connections per client-server pair used in turn (with tcp.open_when_busy: an idle one, another opened when all are busy; tcp.nic_priorities: NICs queue by DSCP class in strict priority), " +
	"MSS segments, delayed ACKs (every second segment, else 40 ms), slow start, congestion avoidance, SACK recovery (RFC 6675) with RACK marking losses, a tail loss probe and D-SACK, RTO floor 200 ms (tcp.min_rto), no wait for the handshake, no TSO; " +
	"window laws reno (also standing in for cubic) and dctcp (alpha with g = 1/16, the CE state echoed as RFC 8257's receiver does); PIAS tags by bytes sent with the agents' thresholds"

// latencyModel says which fixed latencies the run charged (scenario
// simulation:).
func latencyModel(m *scenario.Simulation) string {
	if m == nil || *m == (scenario.Simulation{}) {
		return "latencies: none beyond each frame's serialisation on each link (store and forward)"
	}
	s := fmt.Sprintf("latencies beyond serialisation: link %v, switch %v, host send %v, host receive %v (scenario simulation:)",
		m.LinkDelay.D(), m.SwitchDelay.D(), m.HostTxDelay.D(), m.HostRxDelay.D())
	if m.WireOverhead != 0 && m.WireOverhead != fabric.WireOverhead {
		s += fmt.Sprintf("; each frame costs %d B on a link beyond its bytes, not Ethernet's 24 (simulation.wire_overhead)", m.WireOverhead)
	}
	return s
}

// Host NIC models (Options.HostNIC).
const (
	// NICFIFO is a real NIC: a FIFO serialising each frame at the link
	// rate. The report's ideal RTT assumes it.
	NICFIFO = "fifo"
	// NICShaper is the emulated hosts' shaper (Mininet's TCIntf: htb or
	// tbf with burst 15k): a token bucket at the link rate that hands up to
	// a burst of frames to the switch at once. With it short messages
	// overtake their sender's long ones in the switch's priority queues,
	// as in the emulation, where a FIFO NIC holds them in the host.
	NICShaper = "shaper"
)

// hostBurstBytes is Mininet's htb and tbf burst.
const hostBurstBytes = 15000

// Tag is the layout tag of every simulated run: fixed, like its id
// (RunID), so that the same scenario and seed make the same run.
const Tag = "hb51a00"

// RunID is a simulated run's name: its content's, so that its summary
// repeats byte for byte.
func RunID(plan *scenario.Plan) string {
	return fmt.Sprintf("%s-simulated-seed%d", plan.Base.Name, *plan.Base.Seed)
}

// Config is what a Network is built from: the run's plan, laid out.
type Config struct {
	Plan   *scenario.Plan
	Layout *topo.Network
	Fabric *fabric.Fabric
	// Calibration is the run's, by transport, filled as it calibrates.
	Calibration map[string]rundir.Calibration
	// Dir is the run directory, for switch statistics and postcards.
	Dir string
	Log *slog.Logger
	// HostNIC is NICFIFO (the default) or NICShaper.
	HostNIC string
	// Records receives the experiments' records (not calibration's).
	Records Records
}

// Network is a run's simulated fabric: its programmed switches, from which
// each calibration and experiment builds a fresh network of simulated
// hosts.
type Network struct {
	plan   *scenario.Plan
	dir    string
	log    *slog.Logger
	layout *topo.Network
	fab    *fabric.Fabric
	hosts  []simnet.Host
	sws    *simnet.Switches
	calib  map[string]rundir.Calibration
	events uint64
	simNs  int64
	exps   int // experiments simulated, calibration included: each gets its own hour
	nic    string
	out    Records
	// cur is the experiment under way (Begin to End).
	cur *job
	// cutoffs are workloadCutoffs' answers by their question: every
	// calibration size and every experiment of a transport asks the same
	// one, and a graduated rule's answer costs a second or more.
	cutoffs map[string][]uint32
	// live is the experiment under way, for Progress.
	live atomic.Pointer[liveExperiment]
}

// Start programs the simulated switches of cfg's layout.
func Start(ctx context.Context, cfg Config) (*Network, error) {
	if err := Check(cfg.Plan); err != nil {
		return nil, err
	}
	r := &Network{plan: cfg.Plan, dir: cfg.Dir, log: cfg.Log, layout: cfg.Layout, fab: cfg.Fabric, calib: cfg.Calibration, nic: cfg.HostNIC, out: cfg.Records}
	switch r.nic {
	case "":
		r.nic = NICFIFO
	case NICFIFO, NICShaper:
	default:
		return nil, fmt.Errorf("--host-nic %q: expected %q or %q", r.nic, NICFIFO, NICShaper)
	}
	s := r.plan.Base
	var err error
	if r.hosts, err = simHosts(r.layout); err != nil {
		return nil, err
	}
	ct, err := switches.ControllerTopology(r.layout, r.fab, s, "")
	if err != nil {
		return nil, err
	}
	pol, err := switches.Policy(s)
	if err != nil {
		return nil, err
	}
	// The simulated hosts never ARP (simnet hands frames over by address):
	// an ARP entry per host on every switch would only take memory and
	// programming time (and past 1,024 hosts would not fit tor.p4's table).
	pol.NoARPProxy = true
	pctx, cancel := context.WithTimeout(ctx, programTimeout(len(ct.Switches)))
	r.sws, err = simnet.StartSwitches(pctx, ct, pol, r.log)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("program the simulated switches: %w", err)
	}
	return r, nil
}

// programTimeout bounds programming n simulated switches: 30 s, and a
// second more per switch (a fat tree of k=32 has 1,280, each with a route
// and a next-hop group per edge switch: about 0.2 s of CPU each, and 350 s
// of a busy machine's time were not enough for 600 of them).
func programTimeout(n int) time.Duration {
	return 30*time.Second + time.Duration(n)*time.Second
}

// Close stops the simulated switches.
func (r *Network) Close() error { return r.sws.Close() }

// PortModes puts the simulated switches' ports in the modes a transport
// needs, as the controller does the emulated switches'.
func (r *Network) PortModes(ctx context.Context, modes []controller.PortMode) error {
	return r.sws.SetPortModes(ctx, modes)
}

// SetLinkDown has the controller move the paths off the link between
// switches a and b, or back onto it.
func (r *Network) SetLinkDown(ctx context.Context, a, b string, down bool) error {
	return r.sws.SetLinkDown(ctx, a, b, down)
}

// Defences installs the scenario's switch defences or removes them.
func (r *Network) Defences(ctx context.Context, on bool) error {
	var d controller.Defences
	if on {
		d = switches.Defences(r.plan.Base)
	}
	return r.sws.SetDefences(ctx, d)
}

// ResetQueuePeaks has nothing to reset: each experiment runs on a fresh
// network, whose statistics start at zero.
func (r *Network) ResetQueuePeaks(context.Context) error { return nil }

// Telemetry has no series to write: the simulator does not sample the
// switches over time (the model says so).
func (r *Network) Telemetry(context.Context, string, time.Duration, io.Writer) error { return nil }

// Summary is what the run simulated, for the manifest, after wall.
func (r *Network) Summary(wall time.Duration) *rundir.Simulation {
	nicModel := "host NIC: a FIFO at the link rate (a real NIC; Linux txqueuelen 1000)"
	if r.nic == NICShaper {
		nicModel = "host NIC: the emulated hosts' shaper, a token bucket at the link rate with Mininet's 15 kB burst handing frames to the switch at once (--host-nic shaper)"
	}
	w := wall.Seconds()
	sum := &rundir.Simulation{Events: r.events, SimulatedSeconds: float64(r.simNs) / 1e9, WallSeconds: w,
		EventsPerSecond: float64(r.events) / w, SimPerWall: float64(r.simNs) / 1e9 / w,
		Model: append([]string{model[0], nicModel, latencyModel(r.plan.Base.Simulation)}, model[1:]...), ClockDefaults: r.plan.ClockDefaults}
	if note := scenario.ClockNote(r.plan.ClockDefaults); note != "" {
		sum.Model = append(sum.Model, note)
	}
	for _, t := range r.plan.Base.Transports {
		if !t.Engine() {
			sum.Model = append(sum.Model, tcpModel)
			break
		}
	}
	return sum
}

// headBytes is what the twin's hosts carry of each message: the most of a
// message anything here reads (a collective's or a matrix's step header,
// which holds the application header the servers read), so the rest of a
// message's bytes are never allocated, copied or cleared.
const headBytes = driver.StepHeaderLen

// network is a fresh simulated network on the switches as the run's
// controller (PortModes, Defences) left them.
func (r *Network) network(seed uint64) (*simnet.Network, error) {
	burst := 0
	if r.nic == NICShaper {
		burst = hostBurstBytes
	}
	pipes := r.sws.Pipelines()
	// Each network starts the switches' spray sequence at 0, as a fresh
	// switch has it: an experiment's packets take the paths they take
	// whatever ran before it in this process, so that a task running it
	// alone (homatb run --jobs, --executor slurm) gets its records.
	for name, p := range pipes {
		if err := p.SetRegister(p4.RegisterSpraySeq, 0, 0); err != nil {
			return nil, fmt.Errorf("switch %s: %w", name, err)
		}
	}
	cfg := simnet.Config{RateBps: r.fab.RateBps, UplinkBps: r.fab.UplinkBps, WireOverhead: r.fab.Framing - fabric.EthernetHeader,
		QueueDepthPkts: r.fab.QueueDepthPkts, Hosts: r.hosts, Links: simLinks(r.layout, r.fab),
		Switches: pipes, Seed: seed, HostBurstBytes: burst, PFC: pfcOf(r.plan.Base.Switch.PFC),
		HeadBytes: headBytes}
	// The switch's own limits, as the embedded switch takes them
	// (switches.BufferArgs).
	sw := r.plan.Base.Switch
	cfg.QueueDepthBytes, cfg.PortBufferBytes, cfg.PortBufferPkts = int(sw.QueueDepthBytes), int(sw.Buffer.PortBytes), sw.Buffer.PortPkts
	cfg.SharedBufferBytes, cfg.SharedAlpha = int(sw.Buffer.SharedBytes), sw.Buffer.Alpha
	if m := r.plan.Base.Simulation; m != nil {
		cfg.Delay, cfg.SwitchDelay = m.LinkDelay.D(), m.SwitchDelay.D()
		cfg.HostTxDelay, cfg.HostRxDelay = m.HostTxDelay.D(), m.HostRxDelay.D()
	}
	return simnet.New(cfg)
}

// NextEpoch is the wall time the next calibration's or experiment's
// virtual time 0 stands for.
func (r *Network) NextEpoch() time.Time {
	r.exps++
	return epoch.Add(time.Duration(r.exps) * time.Hour)
}

// Skip passes over one experiment of the plan that another process runs,
// so that the next one starts at the virtual epoch it has in the whole run.
func (r *Network) Skip() { r.exps++ }

// finishJob books a job's events.
func (r *Network) finishJob(j *job) {
	r.events += j.net.Clock().Events()
	r.simNs += j.net.Clock().Now()
}

// Records receives an experiment's records as each becomes final: its
// RPCs in the order issued, its servers' answers in the order served;
// Close, when every row is in. Served does not keep its row (the job
// books every answer in one).
type Records interface {
	RPC(*rundir.RPC) error
	Served(*rundir.Served) error
	Close() error
}

// collected keeps a calibration's records (a few at a time).
type collected struct{ rows []rundir.RPC }

func (c *collected) RPC(row *rundir.RPC) error {
	c.rows = append(c.rows, *row)
	return nil
}

func (c *collected) Served(*rundir.Served) error { return nil }
func (c *collected) Close() error                { return nil }

// BeginCalibration prepares one calibration size of transport t on a
// fresh network, the first host serving the second (one-way messages
// when oneWay): the agents' Configure adds their parts, the client's
// Status runs it whole and its Fetch hands over its records.
func (r *Network) BeginCalibration(_ context.Context, t scenario.Transport, oneWay bool) error {
	server, cl := r.layout.Hosts[0].Name, r.layout.Hosts[1].Name
	net, err := r.network(*r.plan.Base.Seed)
	if err != nil {
		return err
	}
	tcp, err := r.tcpConfig(t)
	if err != nil {
		return err
	}
	r.cur = &job{name: rundir.CalibrationExperiment(t.Name), transport: t.Name, net: net, cfg: r.homaConfig(t), tcp: tcp,
		nicPrio: t.TCP.NICPriorities, servers: map[string]bool{server: true}, length: time.Hour, epoch: r.NextEpoch(), log: r.log,
		oneWay: oneWay, byIP: byIP(net), out: &collected{}, configured: map[string]driver.Config{},
		order: []string{server + " " + t.Name, cl + " " + t.Name}}
	return nil
}

// homaConfig is engine transport t's configuration as an emulated run's
// agents get it (the calibration so far included), framed as the fabric
// frames packets.
func (r *Network) homaConfig(t scenario.Transport) homaconf.Config {
	c := agents.Requests{Fabric: r.fab, Calibration: r.calib}.HomaConfig(t)
	c.FrameOverhead = r.fab.Framing
	if t.CutoffsFrom != "" && len(c.UnschedCutoffs) == 0 {
		key := fmt.Sprintf("%s|%d|%+v", t.CutoffsFrom, t.CutoffLevels, c)
		cut, ok := r.cutoffs[key]
		if !ok {
			cut = workloadCutoffs(t.CutoffsFrom, t.CutoffLevels, c)
			if r.cutoffs == nil {
				r.cutoffs = map[string][]uint32{}
			}
			r.cutoffs[key] = cut
		}
		c.UnschedCutoffs = slices.Clone(cut)
		c.SharedCutoffs = c.UnschedCutoffs != nil
	}
	return c
}

// cutoffSamples is how many lengths workloadCutoffs draws: enough that
// every level's boundary sits within a fraction of a percent of the
// distribution's bytes.
const cutoffSamples = 200_000

// workloadCutoffs are the unscheduled cutoffs a receiver of engine
// configuration c would settle on after receiving messages of size spec
// spec (scenario's clock defaults, Transport.CutoffsFrom): computed from
// a fixed draw of the distribution by the engine's own rule, over levels
// unscheduled levels when above 0 (Transport.CutoffLevels), so every host
// has them from the start. nil (the engine computes its own) if the spec
// or the configuration does not parse, which validation has ruled out.
func workloadCutoffs(spec string, levels int, c homaconf.Config) []uint32 {
	d, err := workloads.ParseSizeSpec(spec)
	if err != nil {
		return nil
	}
	full, err := c.WithDefaults()
	if err != nil {
		return nil
	}
	rng := rand.New(rand.NewPCG(1, 1))
	sizes := make([]uint32, cutoffSamples)
	for i := range sizes {
		sizes[i] = uint32(min(d.Sample(rng), int(full.MaxMessageBytes)))
	}
	return homa.CutoffsFor(sizes, full, levels)
}

// tcpConfig is the TCP model's configuration for kernel-TCP transport t
// (nil for an engine transport): its window law, tcprpc's connections per
// peer (or a pool that grows when busy), segments of the fabric's MTU, and for PIAS the tagging the agents
// would attach (agents.Requests.TCPParams, pias.ForRun: the same
// thresholds from the same calibration).
func (r *Network) tcpConfig(t scenario.Transport) (*tcpmodel.Config, error) {
	if t.Engine() {
		return nil, nil
	}
	law, err := tcpmodel.LawOf(t.TCP.Congestion)
	if err != nil {
		return nil, err
	}
	tp := agents.Requests{Fabric: r.fab, Calibration: r.calib}.TCPParams(t)
	cfg := &tcpmodel.Config{MSS: r.fab.MTU - ipTCPHeaders, Law: law, ConnsPerPeer: int(tp.GetConnectionsPerPeer()),
		OpenWhenBusy: t.TCP.OpenWhenBusy, DelayedAck: true, MinRTO: t.TCP.MinRTO.D(), InitRTO: t.TCP.MinRTO.D()}
	pc, withPIAS, err := driver.PIASOf(tp)
	if err != nil {
		return nil, fmt.Errorf("transport %s: %w", t.Config(), err)
	}
	if withPIAS {
		// With a pool of connections per pair every message is a flow of
		// its own, as in the ns-2 agents' pool, whose PIAS restarts its
		// count at each message: so does the model's.
		cfg.PIAS = &tcpmodel.PIAS{Thresholds: pc.Thresholds, IdleReset: pc.IdleReset, PerMessage: t.TCP.OpenWhenBusy}
		for i := range pc.Levels() {
			cfg.PIAS.DSCP = append(cfg.PIAS.DSCP, pc.LevelDSCP(i))
		}
	}
	return cfg, nil
}

// modelNote is an experiment's fidelity note when its transport ran on
// the TCP model (empty for engine transports, which are the real code):
// the summary and the report carry it beside the results.
func modelNote(t scenario.Transport, tcp *tcpmodel.Config) []string {
	if tcp == nil {
		return []string{}
	}
	law := tcp.Law.String()
	if t.TCP.Congestion == "cubic" {
		law += ", standing in for cubic"
	}
	pi := ""
	if p := tcp.PIAS; p != nil {
		pi = fmt.Sprintf(" with PIAS's tagging (thresholds %v B", p.Thresholds)
		if p.PerMessage {
			pi += ", counted in each message"
		}
		pi += ")"
	}
	if tcp.OpenWhenBusy {
		pi += ", a connection opened whenever a pair's are all busy"
	}
	if t.TCP.NICPriorities {
		pi += ", NICs with the switches' priority queues"
	}
	if t.TCP.MinRTO != 0 {
		pi += ", a minimum and initial RTO of " + t.TCP.MinRTO.D().String()
	}
	return []string{fmt.Sprintf("%s ran on the simulator's model of TCP (simnet/tcpmodel, window law %s%s), not the kernel's TCP", t.Config(), law, pi)}
}

// ipTCPHeaders are an IPv4 and a TCP header without options: the MTU less
// them is the MSS.
const ipTCPHeaders = 40

// pfcOf is the scenario's switch.pfc as the switches run it (zero: off).
func pfcOf(p *scenario.PFC) dataplane.PFC {
	if p == nil {
		return dataplane.PFC{}
	}
	c := dataplane.PFC{XoffPkts: p.XoffPkts, XonPkts: p.XonPkts, HeadroomPkts: p.HeadroomPkts}
	for _, q := range p.Priorities {
		c.Priorities |= 1 << q
	}
	return c
}
