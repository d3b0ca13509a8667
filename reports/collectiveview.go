package reports

import (
	"fmt"
	"slices"

	"github.com/homatb/homatb/reports/stats"
)

// collectiveSection is the report's part on one collective phase: a row
// per experiment and its charts.
type collectiveSection struct {
	Phase, Kind string
	Rows        []collectiveRow
	Charts      []chart
}

// collectiveRow is one experiment's collective beside its short (or
// headline phase's) RPCs' P99.
type collectiveRow struct {
	Name, Config string
	C            stats.CollectiveStats
	// OverIdeal is the CCT P50 over the ideal CCT; ShortP99 the
	// experiment's short-message (or headline phase's) RTT P99, µs.
	OverIdeal *float64
	ShortP99  *float64
	ShortWhat string
}

// buildCollectives adds a section per collective phase found in the
// experiments, in the order they first appear.
func buildCollectives(pg *reportPage, s *stats.Summary) error {
	var phases []string
	for _, e := range s.Experiments {
		for _, c := range e.Collectives {
			if !slices.Contains(phases, c.Phase) {
				phases = append(phases, c.Phase)
			}
		}
	}
	for pi, ph := range phases {
		sec := collectiveSection{Phase: ph}
		var over, dist []series
		for i := range s.Experiments {
			e := &s.Experiments[i]
			for _, c := range e.Collectives {
				if c.Phase != ph {
					continue
				}
				sec.Kind = c.Kind
				row := collectiveRow{Name: e.Name, Config: e.Config, C: c, ShortP99: e.Short.P99us, ShortWhat: "short RPCs"}
				if e.Short.Phase != "" {
					row.ShortWhat = e.Short.Phase
				}
				if c.CCT.P50 != nil && c.IdealCCT != nil && *c.IdealCCT > 0 {
					row.OverIdeal = stats.Ptr(*c.CCT.P50 / *c.IdealCCT)
				}
				sec.Rows = append(sec.Rows, row)
				col := transportColor(e.Transport, len(over))
				var pts, cdf []stats.Point
				ccts := make([]float64, 0, len(c.Series))
				for _, p := range c.Series {
					pts = append(pts, stats.Point{X: p[0], Y: p[1]})
					ccts = append(ccts, p[1])
				}
				slices.Sort(ccts)
				for j, v := range ccts {
					cdf = append(cdf, stats.Point{X: v, Y: float64(j+1) / float64(len(ccts))})
				}
				over = append(over, series{name: e.Name, pts: pts, color: col, markers: true})
				dist = append(dist, series{name: e.Name, pts: cdf, color: col, step: true})
			}
		}
		specs := []chartSpec{
			{id: fmt.Sprintf("coll-time-%d", pi), title: fmt.Sprintf("Collective %s: completion time of each iteration", ph),
				xLabel: "iteration start (s since the first)", yLabel: "CCT (µs)", series: over},
			{id: fmt.Sprintf("coll-cdf-%d", pi), title: fmt.Sprintf("Collective %s: distribution of the completion time", ph),
				xLabel: "CCT (µs)", yLabel: "fraction of iterations", series: dist},
		}
		for _, sp := range specs {
			c, err := render(sp)
			if err != nil {
				return err
			}
			sec.Charts = append(sec.Charts, c)
		}
		pg.Collectives = append(pg.Collectives, sec)
	}
	return nil
}
