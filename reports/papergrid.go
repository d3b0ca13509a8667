package reports

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"github.com/homatb/homatb/reports/stats"
)

// The Homa paper's slowdown figure (SIGCOMM 2018, Figure 12): one panel per
// workload, the P99 (and P50) slowdown against message size with the sizes
// spaced by the cumulative fraction of messages, every transport overlaid.
// The report lays its per-group slowdown charts out that way when a sweep
// varies a phase's message sizes, and adds the paper's headline number, the
// P99 slowdown of the shortest half of the messages, as a table.

// paperGrid is that section of the report.
type paperGrid struct {
	// Param is the swept sizes parameter ("phases.all2all.sizes").
	Param string
	// P99 and P50 are the panels, one per workload in the sweep's order.
	P99, P50 []chart
	// Configs heads the table's columns; Rows has one row per workload.
	Configs []string
	Rows    []paperRow
}

// paperRow is one workload's shortest-half P99 slowdown per configuration,
// the median over its repetitions (nil where it ran none or had no ideal).
type paperRow struct {
	Workload string
	Cells    []*stats.Spread
}

// sizesParam is the swept parameter that sets a phase's message sizes, or
// "" when no sweep does.
func sizesParam(s *stats.Summary) string {
	for _, p := range s.SweptParams {
		if strings.HasPrefix(p, "phases.") && strings.HasSuffix(p, ".sizes") {
			return p
		}
	}
	return ""
}

// buildPaperGrid returns the grid, or nil when no sweep covers workloads.
func buildPaperGrid(s *stats.Summary) (*paperGrid, error) {
	param := sizesParam(s)
	if param == "" {
		return nil, nil
	}
	g := &paperGrid{Param: param}
	var workloads []string
	byWorkload := map[string][]*stats.Experiment{}
	for i := range s.Experiments {
		e := &s.Experiments[i]
		v, ok := e.Params[param]
		if !ok {
			continue
		}
		w := fmt.Sprint(v)
		if _, seen := byWorkload[w]; !seen {
			workloads = append(workloads, w)
		}
		byWorkload[w] = append(byWorkload[w], e)
		if c := stats.ConfigID(e); !slices.Contains(g.Configs, c) {
			g.Configs = append(g.Configs, c)
		}
	}
	if len(workloads) < 2 {
		return nil, nil
	}
	color := func(c string) color.Color {
		i := slices.Index(g.Configs, c)
		if c == "homa" {
			return paletteColor(0)
		}
		return paletteColor(i + 1)
	}
	var p99, p50 []chartSpec
	for wi, w := range workloads {
		exps := byWorkload[w]
		var s99, s50 []series
		var rows []stats.SizeRow
		reps := map[string]int{}
		row := paperRow{Workload: w, Cells: make([]*stats.Spread, len(g.Configs))}
		halves := make([][]float64, len(g.Configs))
		for _, e := range exps {
			c := stats.ConfigID(e)
			reps[c]++
			if h := e.ShortestHalf; h != nil && h.S99 != nil {
				ci := slices.Index(g.Configs, c)
				halves[ci] = append(halves[ci], *h.S99)
			}
			label := c
			if reps[c] > 1 {
				label = fmt.Sprintf("%s #%d", c, reps[c])
			}
			ss := slowdownSeries(e, label, color(c))
			if ss == nil {
				continue
			}
			if rows == nil {
				rows = e.BySize
			}
			// slowdownSeries gives P50 then P99; each panel shows one of
			// them, solid.
			ss[1].dashed = false
			s50, s99 = append(s50, ss[0]), append(s99, ss[1])
		}
		for ci := range g.Configs {
			row.Cells[ci] = stats.NewSpread(halves[ci])
		}
		g.Rows = append(g.Rows, row)
		if len(s99) == 0 {
			continue
		}
		sp := slowdownChart(fmt.Sprintf("paper-p99-%d", wi), "P99 slowdown, "+w, rows, s99)
		sp.shareY = true
		p99 = append(p99, sp)
		sp = slowdownChart(fmt.Sprintf("paper-p50-%d", wi), "P50 slowdown, "+w, rows, s50)
		sp.shareY = true
		p50 = append(p50, sp)
	}
	// One y range across a row of panels, as the paper draws them.
	shareAxes(p99)
	shareAxes(p50)
	for _, specs := range []struct {
		in  []chartSpec
		out *[]chart
	}{{p99, &g.P99}, {p50, &g.P50}} {
		for _, sp := range specs.in {
			c, err := render(sp)
			if err != nil {
				return nil, fmt.Errorf("paper grid chart %s: %w", sp.id, err)
			}
			*specs.out = append(*specs.out, c)
		}
	}
	return g, nil
}
