package testbed

import (
	"math"
	"slices"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/topo"
)

// ServerPort is the port every agent serves RPCs on (Homa and TCP have
// separate port spaces).
const ServerPort = 4000

func transportEnum(name string) agentpb.Transport {
	if name == scenario.TransportHoma {
		return agentpb.Transport_TRANSPORT_HOMA
	}
	return agentpb.Transport_TRANSPORT_TCP
}

// homaParams maps the scenario's Homa settings, with the calibrated
// unscheduled bytes and RTT when the scenario leaves them open.
func (r *run) homaParams(t scenario.Transport, s *scenario.Scenario) *agentpb.HomaParams {
	h := t.Homa
	p := &agentpb.HomaParams{
		LinkBps: uint64(s.Link.Rate), UnschedBytes: h.UnschedBytes, Overcommit: h.Overcommit,
		Priorities: h.Priorities, Basic: h.Basic, WindowBytes: h.WindowBytes, MaxIncoming: h.MaxIncoming,
		FifoGrantPermille: h.FifoGrantPermille, UnschedCutoffs: h.UnschedCutoffs, Mtu: uint32(s.Link.MTU),
		ResendTicks: h.ResendTicks, TimeoutTicks: h.TimeoutTicks, TickUs: h.TickUS,
		IncastControl: h.IncastControl, AtLeastOnce: h.AtLeastOnce, MaxMessageBytes: h.MaxMessageBytes,
		Extra: h.Extra,
	}
	if c, ok := r.calib[scenario.TransportHoma]; ok {
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
		Experiment: exp, Transport: transportEnum(t.Name), Host: h.Name, Address: h.IP.String(),
		Client: w, Phase: phase,
	}
	if serve {
		req.ServerPorts = []uint32{ServerPort}
	}
	if t.Name == scenario.TransportHoma {
		req.Homa = r.homaParams(t, s)
	} else {
		req.Tcp = &agentpb.TcpParams{Congestion: t.TCP.Congestion, ConnectionsPerPeer: t.TCP.ConnectionsPerPeer}
	}
	return req
}
