package reports

import (
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"

	"github.com/homatb/homatb/reports/stats"
	"gonum.org/v1/plot"
)

// Series builders shared by the run report and the comparison.

// rttSeries is P50 (solid) and P99 (dashed) RTT against request length.
func rttSeries(e *stats.Experiment, label string, c color.Color) []series {
	var p50, p99 []stats.Point
	for _, r := range e.BySize {
		p50 = append(p50, stats.Point{X: float64(r.Length), Y: r.P50us})
		p99 = append(p99, stats.Point{X: float64(r.Length), Y: r.P99us})
	}
	return []series{
		{name: label + " P50", pts: p50, color: c},
		{name: label + " P99", pts: p99, color: c, dashed: true},
	}
}

// slowdownSeries is the cperf chart: P50 and P99 slowdown as step lines
// over the cumulative fraction of messages, each bucket as wide as its share.
func slowdownSeries(e *stats.Experiment, label string, c color.Color) []series {
	if len(e.BySize) == 0 || e.BySize[0].S50 == nil {
		return nil
	}
	var p50, p99 []stats.Point
	prev := 0.0
	for _, r := range e.BySize {
		p50 = append(p50, stats.Point{X: prev, Y: *r.S50})
		p99 = append(p99, stats.Point{X: prev, Y: *r.S99})
		prev = r.CumFrac
	}
	last := e.BySize[len(e.BySize)-1]
	p50 = append(p50, stats.Point{X: 1, Y: *last.S50})
	p99 = append(p99, stats.Point{X: 1, Y: *last.S99})
	return []series{
		{name: label + " P50", pts: p50, color: c, step: true},
		{name: label + " P99", pts: p99, color: c, dashed: true, step: true},
	}
}

// unloadedSeries is the transport's own unloaded P50 RTT over the ideal
// RTT per size bucket (S50 / OwnS50): the floor its loaded slowdown is
// measured against. Nil without the transport's own calibration.
func unloadedSeries(e *stats.Experiment, label string, c color.Color) []series {
	var pts []stats.Point
	prev := 0.0
	for _, r := range e.BySize {
		if r.S50 == nil || r.OwnS50 == nil || *r.OwnS50 <= 0 {
			return nil
		}
		pts = append(pts, stats.Point{X: prev, Y: *r.S50 / *r.OwnS50})
		prev = r.CumFrac
	}
	if len(pts) == 0 {
		return nil
	}
	pts = append(pts, stats.Point{X: 1, Y: pts[len(pts)-1].Y})
	return []series{{name: label + " unloaded P50", pts: pts, color: c, step: true, dotted: true}}
}

func ccdfSeries(e *stats.Experiment, label string, c color.Color, dashed bool) []series {
	if len(e.CCDF) == 0 {
		return nil
	}
	return []series{{name: label, pts: e.CCDF, color: c, dashed: dashed}}
}

// rttChart, slowdownChart and ccdfChart fix the axes of the three latency
// charts so the report and the comparison draw them alike.
func rttChart(id, title string, s []series) chartSpec {
	// Request lengths are discrete: mark each measured length, and join
	// them only when there are enough to suggest a curve.
	for i := range s {
		s[i].markers = true
		s[i].markersOnly = len(s[i].pts) < 4
	}
	return chartSpec{id: id, title: title, xLabel: "request length (bytes)", yLabel: "RTT (µs)",
		logX: true, logY: true, xTicks: lengthTicks(), series: s}
}

// slowdownChart is the Homa papers' figure: slowdown against message size
// with the x axis spaced by the cumulative fraction of messages, sizes at
// the bottom and the cumulative percentage at the top, y from 1.
func slowdownChart(id, title string, rows []stats.SizeRow, s []series) chartSpec {
	zero, one := 0.0, 1.0
	var top []plot.Tick
	for i := 0; i <= 10; i++ {
		f := float64(i) / 10
		label := ""
		if i%2 == 0 {
			label = strconv.Itoa(i*10) + "%"
		}
		top = append(top, plot.Tick{Value: f, Label: label})
	}
	return chartSpec{id: id, title: title,
		xLabel:   "message size (bytes), spaced by cumulative fraction of messages",
		topLabel: "cumulative % of messages", topTicks: top,
		yLabel: "slowdown (RTT / ideal RTT)", logY: true, xTicks: cdfLengthTicks(rows),
		xMin: &zero, xMax: &one, yMin: &one, series: s}
}

func ccdfChart(id, title string, s []series) chartSpec {
	return chartSpec{id: id, title: title, xLabel: "RTT (µs)", yLabel: "fraction of short RPCs with larger RTT",
		logX: true, logY: true, guides: []guide{{0.5, "P50"}, {0.01, "P99"}}, series: s}
}

// queueChart draws the occupancy of each queue of the busiest port.
func queueChart(id string, e *stats.Experiment, ss stats.SwitchSeries) chartSpec {
	var s []series
	for _, q := range stats.SortedKeys(ss.Depth) {
		if !slices.ContainsFunc(ss.Depth[q], func(p stats.Point) bool { return p.Y > 0 }) {
			continue // an idle queue would only hide the axis
		}
		s = append(s, series{name: fmt.Sprintf("queue %d", q), pts: ss.Depth[q], color: paletteColor(q)})
	}
	zero := 0.0
	return chartSpec{id: id, title: fmt.Sprintf("%s: %s port %d queue occupancy (busiest port)", e.Name, ss.Switch, ss.Busiest),
		xLabel: timeLabel(e), bands: e.Bands, shareX: true, yLabel: "queue depth (packets)", yMin: &zero, series: s, shareY: true}
}

// utilChart draws utilisation of every port that carried traffic.
func utilChart(id string, e *stats.Experiment, ss stats.SwitchSeries) chartSpec {
	// Ports that never reach 5% (ACKs and grants only) would bury the
	// busy ones under a band of near-zero lines; they are counted instead.
	const idle = 0.05
	var s []series
	quiet := 0
	for i, p := range stats.SortedKeys(ss.Util) {
		if !slices.ContainsFunc(ss.Util[p], func(pt stats.Point) bool { return pt.Y >= idle }) {
			quiet++
			continue
		}
		s = append(s, series{name: "port " + strconv.Itoa(p), pts: ss.Util[p], color: paletteColor(i)})
	}
	title := fmt.Sprintf("%s: %s link utilisation", e.Name, ss.Switch)
	if quiet > 0 {
		title += fmt.Sprintf(" (%d ports never above 5%% not drawn)", quiet)
	}
	zero, one := 0.0, 1.0
	return chartSpec{id: id, title: title,
		xLabel: timeLabel(e), bands: e.Bands, shareX: true, yLabel: "utilisation (fraction of link rate)",
		yMin: &zero, yMax: &one, series: s}
}

// activeChart draws each Homa receiver's active inbound messages over
// time (hosts.csv): the overcommitment actually in use.
func activeChart(id string, e *stats.Experiment) chartSpec {
	var s []series
	for i, h := range stats.SortedKeys(e.Active) {
		s = append(s, series{name: h, pts: e.Active[h], color: paletteColor(i)})
	}
	zero := 0.0
	return chartSpec{id: id, title: e.Name + ": active (granted) inbound messages per receiver",
		xLabel: timeLabel(e), bands: e.Bands, shareX: true, yLabel: "active messages", yMin: &zero, series: s}
}

// roleTable lays out transport counters by host role for the report: one
// column per role (clients, servers, hosts that are both), one row per
// counter that is not zero somewhere.
type roleTable struct {
	Roles []string
	Hosts []int
	Rows  []roleRow
}

type roleRow struct {
	Name   string
	Values []uint64
}

// rolesOf builds an experiment's roleTable; nil without per-host counters.
func rolesOf(t *stats.TransportStats) *roleTable {
	if t == nil || len(t.ByRole) == 0 {
		return nil
	}
	rt := &roleTable{Roles: stats.SortedKeys(t.ByRole)}
	names := map[string]bool{}
	for _, r := range rt.Roles {
		rt.Hosts = append(rt.Hosts, t.Hosts[r])
		for k, v := range t.ByRole[r] {
			names[k] = names[k] || v != 0
		}
	}
	for _, k := range stats.SortedKeys(names) {
		if !names[k] {
			continue
		}
		row := roleRow{Name: k}
		for _, r := range rt.Roles {
			row.Values = append(row.Values, t.ByRole[r][k])
		}
		rt.Rows = append(rt.Rows, row)
	}
	return rt
}

// timeLabel names a time axis: since the experiment's start when the
// manifest gave it (the phases are then shaded), else since the first sample.
func timeLabel(e *stats.Experiment) string {
	if e.Bands != nil {
		return "time since the experiment started (s)"
	}
	return "time since first sample (s)"
}

// heatStyle shades a count against the largest in its table on a log
// scale, so the per-priority table reads as a heatmap; zero stays white.
func heatStyle(v, most uint64) template.CSS {
	if v == 0 || most == 0 {
		return ""
	}
	a := 0.08 + 0.5*math.Log1p(float64(v))/math.Log1p(float64(most))
	return template.CSS(fmt.Sprintf("background:rgba(31,119,180,%.2f)", a))
}

// largestCount is the largest of a table of counters.
func largestCount(m map[string][]uint64) uint64 {
	var most uint64
	for _, vs := range m {
		for _, v := range vs {
			most = max(most, v)
		}
	}
	return most
}

// shareAxes gives the time series of one configuration a common time axis,
// and its queue charts a common depth axis, so Homa's and TCP's queues
// compare at a glance.
func shareAxes(specs []chartSpec) {
	xlo, xhi, yhi := math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, sp := range specs {
		for _, s := range sp.series {
			for _, p := range s.pts {
				if math.IsNaN(p.X) || math.IsInf(p.X, 0) || math.IsNaN(p.Y) || math.IsInf(p.Y, 0) {
					continue
				}
				if sp.shareX {
					xlo, xhi = min(xlo, p.X), max(xhi, p.X)
				}
				if sp.shareY {
					yhi = max(yhi, p.Y)
				}
			}
		}
		for _, b := range sp.bands {
			if sp.shareX {
				xlo, xhi = min(xlo, b.X0), max(xhi, b.X1)
			}
		}
	}
	for i := range specs {
		if specs[i].shareX && xhi > xlo {
			specs[i].xMin, specs[i].xMax = stats.Ptr(xlo), stats.Ptr(xhi)
		}
		if specs[i].shareY && yhi > 0 {
			specs[i].yMax = stats.Ptr(yhi)
		}
	}
}
