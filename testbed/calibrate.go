package testbed

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
	"github.com/homatb/homatb/rundir"
	"github.com/homatb/homatb/testbed/agents"
	"github.com/homatb/homatb/testbed/switches"
)

// calibrate measures the unloaded RTT of each calibration size for each
// transport between the first two hosts, one RPC at a time. The records
// enter rpcs.csv as experiment calibrate-<transport> (the slowdown
// baseline), and Homa's unscheduled bytes become RTTbytes derived from the
// smallest size's RTT (see unschedBytes).
func (r *run) calibrate(ctx context.Context) error {
	s := r.plan.Base
	hosts := r.layout.Hosts
	server, client := hosts[0], hosts[1]
	target := fmt.Sprintf("%s:%d", server.IP, agents.ServerPort)
	for _, t := range distinctTransports(r.plan) {
		name := rundir.CalibrationExperiment(t.Name)
		r.prog.begin(name)
		if err := r.ctl.PortModes(ctx, switches.TransportPortModes(t)); err != nil {
			return err
		}
		cal := rundir.Calibration{RTTus: map[uint32]float64{}, ResponseBytes: s.CalibrationResponse()}
		sa, ca := r.agents.get(server.Name), r.agents.get(client.Name)
		for _, size := range s.Calibration.Sizes {
			exp := fmt.Sprintf("%s-%d", name, size)
			// A fresh server per size, like the fresh client: no transport
			// state (RPC ids) carries over from the previous size.
			if err := sa.Configure(ctx, r.requests.Configure(t, s, exp+"-server", "calibrate", server, true, nil)); err != nil {
				return err
			}
			// Bound each size by time too, generously: samples x (RTT at
			// the link rate + 20 ms of software) + 2 s.
			resp := uint32(cal.ResponseBytes)
			if resp == 0 {
				resp = size
			}
			perRPC := r.fab.WireTime(int(size+resp)) + 20*time.Millisecond
			bound := time.Duration(s.Calibration.Samples)*perRPC + 2*time.Second
			w := agents.CalibrationWorkload(s, size, cal.ResponseBytes, target, bound)
			if err := ca.Configure(ctx, r.requests.Configure(t, s, exp, "calibrate", client, false, w)); err != nil {
				return err
			}
			if err := ca.Start(ctx); err != nil {
				return fmt.Errorf("%s: %w", exp, err)
			}
			if err := waitIssued(ctx, ca, uint64(s.Calibration.Samples), bound+time.Second); err != nil {
				return fmt.Errorf("%s: %w", exp, err)
			}
			if _, err := ca.Stop(ctx, 500*time.Millisecond); err != nil {
				return fmt.Errorf("%s: %w", exp, err)
			}
			var buf bytes.Buffer
			if err := ca.Fetch(ctx, exp, agentpb.FileRecords, &buf); err != nil {
				return err
			}
			_, rtts, err := r.records.appendCSV(buf.Bytes(), name)
			if err != nil {
				return err
			}
			if len(rtts) == 0 {
				return fmt.Errorf("%s: no RPC completed between %s and %s (is the switch forwarding? see logs/)", exp, client.Name, server.Name)
			}
			cal.RTTus[size] = median(rtts)
		}
		if t.Engine() {
			cal.UnschedBytes = agents.UnschedBytes(r.fab, agents.BaseRTT(cal))
		}
		r.calib[t.Name] = cal
		if err := r.man.update(func(m *Manifest) { m.Calibration[t.Name] = cal }); err != nil {
			return err
		}
		r.log.Info("calibrated", "transport", t.Name, "rtt_us", cal.RTTus, "unsched_bytes", cal.UnschedBytes)
		r.prog.step(name, false)
	}
	return nil
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
