package testbed

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// ServerPort is the port every agent serves RPCs on (Homa and TCP have
// separate port spaces).
const ServerPort = 4000

func transportEnum(t scenario.Transport) agentpb.Transport {
	if t.Engine() {
		return agentpb.Transport_TRANSPORT_HOMA
	}
	return agentpb.Transport_TRANSPORT_TCP
}

// homaParams maps the scenario's Homa settings, with the calibrated
// unscheduled bytes and RTT when the scenario leaves them open. pFabric,
// pHost and NDP are the engine with the extra key variant.
func (r *run) homaParams(t scenario.Transport, s *scenario.Scenario) *agentpb.HomaParams {
	h := t.Homa
	if t.Name != scenario.TransportHoma {
		h.Extra = maps.Clone(h.Extra)
		if h.Extra == nil {
			h.Extra = map[string]string{}
		}
		h.Extra["variant"] = t.Name
	}
	p := &agentpb.HomaParams{
		LinkBps: uint64(s.Link.Rate), UnschedBytes: h.UnschedBytes, Overcommit: h.Overcommit,
		Priorities: h.Priorities, Basic: h.Basic, WindowBytes: h.WindowBytes, MaxIncoming: h.MaxIncoming,
		FifoGrantPermille: h.FifoGrantPermille, UnschedCutoffs: h.UnschedCutoffs, Mtu: uint32(s.Link.MTU),
		ResendTicks: h.ResendTicks, TimeoutTicks: h.TimeoutTicks, TickUs: h.TickUS,
		IncastControl: h.IncastControl, AtLeastOnce: h.AtLeastOnce, MaxMessageBytes: h.MaxMessageBytes,
		Extra: h.Extra,
	}
	if c, ok := r.calib[t.Name]; ok {
		if p.UnschedBytes == 0 {
			p.UnschedBytes = c.UnschedBytes
		}
		if rtt := c.RTTus[smallest(c.RTTus)]; rtt > 0 {
			p.UnloadedRttUs = uint32(math.Ceil(rtt))
		}
	}
	return p
}

func smallest(m map[uint32]float64) uint32 {
	var keys []uint32
	for k := range m {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return 0
	}
	return slices.Min(keys)
}

// configureRequest is the Configure of one host's agent for an experiment
// (phase "calibrate" or "measure"): the transport's parameters, a server
// on ServerPort when serve, and the client workload w (nil: none).
func (r *run) configureRequest(t scenario.Transport, s *scenario.Scenario, exp, phase string, h topo.Host, serve bool, w *agentpb.Workload) *agentpb.ConfigureRequest {
	req := &agentpb.ConfigureRequest{
		Experiment: exp, Transport: transportEnum(t), Host: h.Name, Address: h.IP.String(),
		Client: w, Phase: phase,
	}
	if serve {
		req.ServerPorts = []uint32{ServerPort}
	}
	if t.Engine() {
		req.Homa = r.homaParams(t, s)
	} else {
		req.Tcp = &agentpb.TcpParams{Congestion: t.TCP.Congestion, ConnectionsPerPeer: t.TCP.ConnectionsPerPeer}
		if t.Name == scenario.TransportPIAS {
			r.piasParams(req.Tcp, t, s)
		}
	}
	return req
}

// piasParams fills PIAS's settings: the scenario's thresholds, or the
// agent's defaults for the link rate and the calibrated base RTT.
func (r *run) piasParams(tp *agentpb.TcpParams, t scenario.Transport, s *scenario.Scenario) {
	tp.Pias, tp.LinkBps = true, uint64(s.Link.Rate)
	for _, b := range t.PIAS.Thresholds {
		tp.PiasThresholds = append(tp.PiasThresholds, uint64(b))
	}
	tp.PiasIdleResetUs = uint32(t.PIAS.IdleReset.D() / time.Microsecond)
	tp.BaseRttUs = 1000 // before calibration: 1 ms, about this machine's software round trip
	if c, ok := r.calib[t.Name]; ok {
		if rtt := c.RTTus[smallest(c.RTTus)]; rtt > 0 {
			tp.BaseRttUs = uint32(math.Ceil(rtt))
		}
	}
}
