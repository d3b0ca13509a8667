package stats

import (
	"cmp"
	"context"
	"slices"

	"github.com/homatb/homatb/rundir"
)

// hostRow is one hosts.csv line: a host's Homa gauges at one time.
type hostRow struct {
	t                int64
	active, incoming int64
}

// hostTelemetry holds hosts.csv rows by experiment, then host.
type hostTelemetry map[string]map[string][]hostRow

// readHostTelemetry reads hosts.csv (docs/formats.md); a missing file
// yields none.
func readHostTelemetry(ctx context.Context, dir string) (hostTelemetry, error) {
	tel := hostTelemetry{}
	err := readSeries(ctx, dir, rundir.Hosts(), func(r *rundir.HostSample) {
		if tel[r.Experiment] == nil {
			tel[r.Experiment] = map[string][]hostRow{}
		}
		tel[r.Experiment][r.Host] = append(tel[r.Experiment][r.Host], hostRow{
			t: r.UnixNs, active: int64(r.Active), incoming: int64(r.Incoming)})
	})
	return tel, err
}

// HostGauges summarises one host's Homa gauges over an experiment, from
// hosts.csv: the inbound messages its grant scheduler kept active and the
// bytes it had granted but not yet received.
type HostGauges struct {
	Host             string  `json:"host"`
	Samples          int     `json:"samples"`
	MeanActive       float64 `json:"mean_active"`
	MaxActive        int64   `json:"max_active"`
	MeanIncomingKB   float64 `json:"mean_incoming_kb"`
	MaxIncomingBytes int64   `json:"max_incoming_bytes"`
}

// analyseHosts summarises each host that had an active message at some
// sample (the receivers; the others stay out) and returns the active
// messages over time for the chart, x in seconds since the experiment's
// first sample, or since origin (unix ns) when it is not 0.
func analyseHosts(byHost map[string][]hostRow, origin int64) ([]HostGauges, map[string][]Point) {
	t0 := origin
	for _, rows := range byHost {
		for _, r := range rows {
			if origin == 0 && (t0 == 0 || r.t < t0) {
				t0 = r.t
			}
		}
	}
	var out []HostGauges
	series := map[string][]Point{}
	for _, host := range SortedKeys(byHost) {
		rows := byHost[host]
		slices.SortFunc(rows, func(a, b hostRow) int { return cmp.Compare(a.t, b.t) })
		g := HostGauges{Host: host, Samples: len(rows)}
		var active, incoming int64
		pts := make([]Point, 0, len(rows))
		for _, r := range rows {
			active += r.active
			incoming += r.incoming
			g.MaxActive = max(g.MaxActive, r.active)
			g.MaxIncomingBytes = max(g.MaxIncomingBytes, r.incoming)
			pts = append(pts, Point{float64(r.t-t0) / 1e9, float64(r.active)})
		}
		if g.MaxActive == 0 {
			continue
		}
		g.MeanActive = float64(active) / float64(len(rows))
		g.MeanIncomingKB = float64(incoming) / float64(len(rows)) / 1e3
		out = append(out, g)
		series[host] = pts
	}
	return out, series
}
