package agents

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	fabdesc "github.com/homatb/homatb/internal/fabric"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// ServerPort is the port every agent serves RPCs on (Homa and TCP have
// separate port spaces).
const ServerPort = 4000

// Requests makes the Configure requests of one run: what they share is the
// fabric and what calibration has measured so far.
type Requests struct {
	Fabric *fabdesc.Fabric
	// Calibration is by transport name; a transport not calibrated yet
	// (or never: calibration.skip) gets the agent's defaults.
	Calibration map[string]rundir.Calibration
	// Simulate is true for the simulator's agents, whose links obey no
	// PAUSE for kernel TCP (scenario.KernelPause).
	Simulate bool
}

// Configure is the Configure of one host's agent for an experiment (phase
// "calibrate" or "measure"): the transport's parameters, a server on
// ServerPort when serve, and the client workload w (nil: none).
func (q Requests) Configure(t scenario.Transport, s *scenario.Scenario, exp, phase string, h topo.Host, serve bool, w *agentpb.Workload) *agentpb.ConfigureRequest {
	req := &agentpb.ConfigureRequest{
		Experiment: exp, Transport: transportEnum(t), Host: h.Name, Address: h.IP.String(),
		Client: w, Phase: phase,
	}
	if serve {
		req.ServerPorts = []uint32{ServerPort}
	}
	if t.Engine() {
		req.Homa = q.homaParams(t)
	} else {
		req.Tcp = q.TCPParams(t)
		if v := s.KernelPause(t, q.Simulate); v != 0 {
			req.Tcp.PausePriorities, req.Tcp.LinkBps = uint32(v), q.Fabric.RateBps
		}
	}
	return req
}

// TCPParams are kernel-TCP transport t's parameters (TCP, PIAS) as the
// agents get them, PIAS's settings included; the simulator's TCP model
// takes them too.
func (q Requests) TCPParams(t scenario.Transport) *agentpb.TcpParams {
	tp := &agentpb.TcpParams{Congestion: t.TCP.Congestion, ConnectionsPerPeer: t.TCP.ConnectionsPerPeer}
	if t.Name == scenario.TransportPIAS {
		q.piasParams(tp, t)
	}
	return tp
}

func transportEnum(t scenario.Transport) agentpb.Transport {
	if t.Engine() {
		return agentpb.Transport_TRANSPORT_HOMA
	}
	return agentpb.Transport_TRANSPORT_TCP
}

// homaParams is the transport's Homa configuration (the scenario's, as
// validation checked it), with the calibrated unscheduled bytes and RTT
// when the scenario leaves them open.
func (q Requests) homaParams(t scenario.Transport) *agentpb.HomaParams {
	return agentpb.NewHomaParams(q.HomaConfig(t))
}

// HomaConfig is engine transport t's configuration: the scenario's, with
// the calibrated unscheduled bytes and RTT when the scenario leaves them
// open.
func (q Requests) HomaConfig(t scenario.Transport) homaconf.Config {
	c := t.HomaConfig(q.Fabric)
	if cal, ok := q.Calibration[t.Name]; ok {
		if c.UnschedBytes == 0 {
			c.UnschedBytes = cal.UnschedBytes
		}
		if rtt := BaseRTT(cal); rtt > 0 {
			c.UnloadedRTT = time.Duration(math.Ceil(rtt)) * time.Microsecond
		}
	}
	return c
}

// piasParams fills PIAS's settings: the scenario's thresholds, or the
// agent's defaults for the link rate and the calibrated base RTT.
func (q Requests) piasParams(tp *agentpb.TcpParams, t scenario.Transport) {
	tp.Pias, tp.LinkBps = true, q.Fabric.RateBps
	for _, b := range t.PIAS.Thresholds {
		tp.PiasThresholds = append(tp.PiasThresholds, uint64(b))
	}
	tp.PiasIdleResetUs = uint32(t.PIAS.IdleReset.D() / time.Microsecond)
	tp.BaseRttUs = 1000 // before calibration: 1 ms, about this machine's software round trip
	if c, ok := q.Calibration[t.Name]; ok {
		if rtt := BaseRTT(c); rtt > 0 {
			tp.BaseRttUs = uint32(math.Ceil(rtt))
		}
	}
}

// BaseRTT is a calibration's unloaded round trip (µs): that of its
// smallest size; 0 when nothing was calibrated.
func BaseRTT(c rundir.Calibration) float64 {
	if len(c.RTTus) == 0 {
		return 0
	}
	var sizes []uint32
	for k := range c.RTTus {
		sizes = append(sizes, k)
	}
	return c.RTTus[slices.Min(sizes)]
}

// UnschedBytes is Homa's RTTbytes for a link: what the link carries while
// a full-size DATA packet travels to the receiver and its grant comes back
// (the Homa paper's definition), rounded up to whole packets. The
// calibrated round trip is a small message's, so the two full-packet
// serialisations it lacks (the sender's link and the switch's egress,
// store and forward) are added: without them a lone message's grants
// arrive after its window has drained and the downlink idles.
func UnschedBytes(f *fabdesc.Fabric, smallRTTus float64) uint32 {
	payload := float64(f.MTU - 20 - 60) // IPv4 and a generous Homa DATA header
	bytes := f.BytesPerSecond()*smallRTTus/1e6 + 2*float64(f.MTU)
	return uint32(math.Max(1, math.Ceil(bytes/payload)) * payload)
}

// CalibrationWorkload is the client workload that times calibration
// messages of size bytes to target, one at a time: the scenario's samples,
// responses of resp bytes (0 echoes), within bound.
func CalibrationWorkload(s *scenario.Scenario, size, resp uint32, target string, bound time.Duration) *agentpb.Workload {
	return &agentpb.Workload{
		Sizes: fmt.Sprintf("fixed:%d", size), Arrivals: scenario.ArrivalsClosed, MaxOutstanding: 1,
		Targets: []string{target}, ResponseBytes: resp, Seed: *s.Seed,
		DurationMs: uint32(bound / time.Millisecond), MaxRpcs: uint64(s.Calibration.Samples),
	}
}
