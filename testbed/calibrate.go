package testbed

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/scenario"
	"github.com/homatb/homatb/testbed/switches"
)

// calibrate measures the unloaded time of each calibration size for each
// transport between the first two hosts, one message at a time, on the
// run's clock. The records enter rpcs.csv as experiment
// calibrate-<transport> (the slowdown baseline). A scenario of one-way
// messages calibrates one-way messages (the simulator alone can time
// them), and then the round trip of the smallest size, unrecorded, for the
// transports' parameters. Engine transports' unscheduled bytes become
// RTTbytes of the smallest size's round trip (agents.UnschedBytes); the
// kernel's TCP has none.
func (r *run) calibrate(ctx context.Context) error {
	s := r.plan.Base
	oneWay := s.OneWay()
	for _, t := range distinctTransports(r.plan) {
		name := rundir.CalibrationExperiment(t.Name)
		r.prog.begin(name)
		if err := r.ctl.PortModes(ctx, switches.TransportPortModes(t)); err != nil {
			return err
		}
		cal := rundir.Calibration{RTTus: map[uint32]float64{}, ResponseBytes: s.CalibrationResponse()}
		times := cal.RTTus
		if oneWay {
			cal.OneWayUs = map[uint32]float64{}
			times = cal.OneWayUs
		}
		for _, size := range s.Calibration.Sizes {
			med, err := r.calibrateSize(ctx, t, size, cal.ResponseBytes, oneWay, true)
			if err != nil {
				return err
			}
			times[size] = med
		}
		if oneWay {
			small := slices.Min(s.Calibration.Sizes)
			med, err := r.calibrateSize(ctx, t, small, cal.ResponseBytes, false, false)
			if err != nil {
				return err
			}
			cal.RTTus[small] = med
		}
		if t.Engine() {
			cal.UnschedBytes = agents.UnschedBytes(r.fab, agents.BaseRTT(cal))
		}
		r.calib[t.Name] = cal
		if err := r.man.update(func(m *Manifest) { m.Calibration[t.Name] = cal }); err != nil {
			return err
		}
		r.log.Info("calibrated", "transport", t.Name, "rtt_us", cal.RTTus, "one_way_us", cal.OneWayUs, "unsched_bytes", cal.UnschedBytes)
		r.prog.step(name, false)
	}
	return nil
}

// calibrateSize times transport t's calibration messages of size bytes
// (one-way, or RPCs asking for resp bytes) and returns their median in µs;
// book puts their records in rpcs.csv.
func (r *run) calibrateSize(ctx context.Context, t scenario.Transport, size, resp uint32, oneWay, book bool) (float64, error) {
	name := rundir.CalibrationExperiment(t.Name)
	rows, err := r.calibrateAgents(ctx, t, size, resp, oneWay)
	if err != nil {
		return 0, err
	}
	var rtts []float64
	for _, row := range rows {
		if row.Status == rundir.StatusCompleted {
			rtts = append(rtts, float64(row.DoneNs-row.IntendedNs)/1e3)
		}
	}
	if len(rtts) == 0 {
		return 0, fmt.Errorf("%s-%d: no RPC completed between %s and %s (is the switch forwarding? see logs/)",
			name, size, r.layout.Hosts[1].Name, r.layout.Hosts[0].Name)
	}
	if book {
		if err := r.records.write(rows, name); err != nil {
			return 0, err
		}
	}
	return median(rtts), nil
}

// calibrateAgents runs one calibration size on the agents of the first two
// hosts, on the run's timeline, and returns the client's records.
func (r *run) calibrateAgents(ctx context.Context, t scenario.Transport, size, resp uint32, oneWay bool) ([]rundir.RPC, error) {
	if err := r.time.BeginCalibration(ctx, t, oneWay); err != nil {
		return nil, err
	}
	defer r.time.End()
	s := r.plan.Base
	server, client := r.layout.Hosts[0], r.layout.Hosts[1]
	exp := fmt.Sprintf("%s-%d", rundir.CalibrationExperiment(t.Name), size)
	sa, ca := r.agents.get(server.Name), r.agents.get(client.Name)
	// A fresh server per size, like the fresh client: no transport state
	// (RPC ids) carries over from the previous size.
	if err := sa.Configure(ctx, r.requests.Configure(t, s, exp+"-server", rundir.PhaseCalibrate, server, true, nil)); err != nil {
		return nil, err
	}
	// Bound each size by time too, generously: samples x (RTT at the link
	// rate + 20 ms of software) + 2 s.
	if resp == 0 {
		resp = size
	}
	perRPC := r.fab.WireTime(int(size+resp)) + 20*time.Millisecond
	bound := time.Duration(s.Calibration.Samples)*perRPC + 2*time.Second
	w := agents.CalibrationWorkload(s, size, s.CalibrationResponse(), fmt.Sprintf("%s:%d", server.IP, agents.ServerPort), bound)
	if err := ca.Configure(ctx, r.requests.Configure(t, s, exp, rundir.PhaseCalibrate, client, false, w)); err != nil {
		return nil, err
	}
	if err := ca.Start(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", exp, err)
	}
	if err := waitIssued(ctx, ca, uint64(s.Calibration.Samples), bound+time.Second); err != nil {
		return nil, fmt.Errorf("%s: %w", exp, err)
	}
	if _, err := ca.Stop(ctx, 500*time.Millisecond); err != nil {
		return nil, fmt.Errorf("%s: %w", exp, err)
	}
	var buf bytes.Buffer
	if err := ca.Fetch(ctx, exp, agentpb.FileRecords, &buf); err != nil {
		return nil, err
	}
	return r.records.parse(buf.Bytes())
}

// waitIssued polls an agent until it has issued n RPCs and none is in
// flight, or until timeout.
func waitIssued(ctx context.Context, a agentAPI, n uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		st, err := a.Status(ctx)
		if err != nil {
			return err
		}
		c := st.GetCounters()
		if c.GetIssued() >= n && c.GetInFlight() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil // the Stop that follows records what is still in flight
}
