package testbed

import (
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

// homaParams is the transport's Homa configuration (the scenario's, as
// validation checked it), with the calibrated unscheduled bytes and RTT
// when the scenario leaves them open.
func (r *run) homaParams(t scenario.Transport, s *scenario.Scenario) *agentpb.HomaParams {
	c := t.HomaConfig(s)
	c.LinkBps, c.MTU = r.fab.RateBps, r.fab.MTU
	if cal, ok := r.calib[t.Name]; ok {
		if c.UnschedBytes == 0 {
			c.UnschedBytes = cal.UnschedBytes
		}
		if rtt := cal.RTTus[smallest(cal.RTTus)]; rtt > 0 {
			c.UnloadedRTT = time.Duration(math.Ceil(rtt)) * time.Microsecond
		}
	}
	return agentpb.NewHomaParams(c)
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
	tp.Pias, tp.LinkBps = true, r.fab.RateBps
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
