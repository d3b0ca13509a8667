package testbed

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/homatb/homatb/hostagent/agentpb"
)

// hostSample is one host's Homa gauges at one time: its active (granted)
// inbound messages and its granted-but-unreceived bytes, the agent's
// homa_active_messages and homa_incoming_bytes counters.
type hostSample struct {
	host             string
	unixNs           int64
	active, incoming uint64
}

// maxHostSamples bounds what one experiment keeps per host (20 minutes at
// the default 100 ms).
const maxHostSamples = 12_000

// startHostTelemetry follows the Homa gauges of hosts through their
// agents' Status streams every interval while the experiment runs; the
// returned func stops it and appends the samples to hosts.csv. A host
// whose stream fails is logged and left out, the experiment goes on.
func (r *run) startHostTelemetry(ctx context.Context, exp string, hosts []string, interval time.Duration) func() {
	if interval <= 0 {
		return func() {}
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	samples := make([][]hostSample, len(hosts))
	for i, h := range hosts {
		a := r.agents.get(h)
		if a == nil {
			continue
		}
		wg.Go(func() {
			s, err := a.followGauges(sctx, interval)
			if err != nil && sctx.Err() == nil {
				r.log.Warn("host telemetry", "experiment", exp, "host", h, "err", err)
			}
			samples[i] = s
		})
	}
	return func() {
		cancel()
		wg.Wait()
		if err := appendHostsCSV(filepath.Join(r.dir, "hosts.csv"), exp, samples); err != nil {
			r.log.Warn("host telemetry file", "experiment", exp, "err", err)
		}
	}
}

// followGauges reads the agent's Status stream until ctx ends and keeps
// the hostGauges of each reply.
func (a *agent) followGauges(ctx context.Context, interval time.Duration) ([]hostSample, error) {
	st, err := a.api.Status(ctx, &agentpb.StatusRequest{IntervalMs: uint32(max(1, interval.Milliseconds()))})
	if err != nil {
		return nil, err
	}
	var out []hostSample
	for len(out) < maxHostSamples {
		rep, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return out, nil
			}
			return out, err
		}
		tr := rep.GetCounters().GetTransport()
		out = append(out, hostSample{host: a.host, unixNs: rep.GetUnixNs(),
			active: tr["homa_active_messages"], incoming: tr["homa_incoming_bytes"]})
	}
	return out, nil
}

// appendHostsCSV appends samples to path (docs/formats.md: hosts.csv),
// writing the header when the file is new.
func appendHostsCSV(path, exp string, samples [][]hostSample) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
		_ = w.Write([]string{"experiment", "host", "unix_ns", "active_messages", "incoming_bytes"})
	}
	for _, hs := range samples {
		for _, s := range hs {
			row := []string{exp, s.host, strconv.FormatInt(s.unixNs, 10),
				strconv.FormatUint(s.active, 10), strconv.FormatUint(s.incoming, 10)}
			if err := w.Write(row); err != nil {
				f.Close()
				return err
			}
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
