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

// hostGauges are the transport gauges hosts.csv follows over time: Homa's
// active (granted) inbound messages and its granted-but-unreceived bytes,
// as the agent names them (Counters.transport).
var hostGauges = []string{"homa_active_messages", "homa_incoming_bytes"}

// hostSample is one host's gauges at one time.
type hostSample struct {
	host   string
	unixNs int64
	values []uint64 // by hostGauges
}

// maxHostSamples bounds what one experiment keeps per host (10 minutes at
// the default 50 ms).
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
		s := hostSample{host: a.host, unixNs: rep.GetUnixNs(), values: make([]uint64, len(hostGauges))}
		for i, g := range hostGauges {
			s.values[i] = tr[g]
		}
		out = append(out, s)
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
	row := make([]string, 3+len(hostGauges))
	for _, hs := range samples {
		for _, s := range hs {
			row = append(row[:0], exp, s.host, strconv.FormatInt(s.unixNs, 10))
			for _, v := range s.values {
				row = append(row, strconv.FormatUint(v, 10))
			}
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
