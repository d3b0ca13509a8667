package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// series is one line of a chart.
type series struct {
	name   string
	pts    []point
	color  color.Color
	dashed bool
	step   bool // post-step histogram (the cperf chart)
}

// chartSpec describes a chart independent of the plotting library.
type chartSpec struct {
	id, title      string
	xLabel, yLabel string
	logX, logY     bool
	xTicks         plot.Ticker // nil: default for the scale
	xMin, xMax     *float64
	yMin, yMax     *float64 // with yMax, the axis reaches at least yMax
	// legendLeft and legendBottom move the legend off where curves run.
	legendLeft, legendBottom bool
	series                   []series
}

// chart is a rendered chart for the HTML template. SVG is empty when the
// spec had no plottable point; Note then says why.
type chart struct {
	ID, Title string
	SVG       template.HTML
	Points    int
	Note      string
}

// paletteColor returns the i-th colour of a fixed categorical palette.
func paletteColor(i int) color.Color {
	p := [...]color.RGBA{
		{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
		{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
		{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
	}
	return p[((i%len(p))+len(p))%len(p)]
}

// transportColor keeps one colour per transport on every chart: Homa blue,
// TCP red, others from the rest of the palette.
func transportColor(transport string, i int) color.Color {
	switch transport {
	case "homa":
		return paletteColor(0)
	case "tcp":
		return paletteColor(3)
	}
	return paletteColor(i + 2)
}

// maxChartPoints bounds the points drawn per series; longer time series keep
// the largest value of each window so spikes stay visible.
const maxChartPoints = 1500

func decimate(pts []point) []point {
	if len(pts) <= maxChartPoints {
		return pts
	}
	w := (len(pts) + maxChartPoints - 1) / maxChartPoints
	out := make([]point, 0, maxChartPoints)
	for i := 0; i < len(pts); i += w {
		best := pts[i]
		for _, p := range pts[i:min(i+w, len(pts))] {
			if p.y > best.y {
				best = p
			}
		}
		out = append(out, point{pts[i].x, best.y})
	}
	return out
}

// plottable drops points a log axis cannot show, and non-finite ones.
func plottable(pts []point, logX, logY bool) plotter.XYs {
	xys := make(plotter.XYs, 0, len(pts))
	for _, p := range pts {
		if math.IsNaN(p.x) || math.IsNaN(p.y) || math.IsInf(p.x, 0) || math.IsInf(p.y, 0) {
			continue
		}
		if (logX && p.x <= 0) || (logY && p.y <= 0) {
			continue
		}
		xys = append(xys, plotter.XY{X: p.x, Y: p.y})
	}
	return xys
}

// render draws a chart as inline SVG.
func render(spec chartSpec) (chart, error) {
	c := chart{ID: spec.id, Title: spec.title}
	p := plot.New()
	p.Title.Text = spec.title
	p.X.Label.Text = spec.xLabel
	p.Y.Label.Text = spec.yLabel
	if spec.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks(formatNumber)
	}
	if spec.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks(formatNumber)
	}
	if spec.xTicks != nil {
		p.X.Tick.Marker = spec.xTicks
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = !spec.legendBottom
	p.Legend.Left = spec.legendLeft
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(-4), vg.Points(-4)
	if spec.legendLeft {
		p.Legend.XOffs = vg.Points(8)
	}
	if spec.legendBottom {
		p.Legend.YOffs = vg.Points(8)
	}
	for _, s := range spec.series {
		xys := plottable(decimate(s.pts), spec.logX, spec.logY)
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return c, fmt.Errorf("chart %s: series %s: %w", spec.id, s.name, err)
		}
		l.LineStyle.Color = s.color
		l.LineStyle.Width = vg.Points(1.5)
		if s.dashed {
			l.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		if s.step {
			l.StepStyle = plotter.PostStep
		}
		p.Add(l)
		if len(xys) == 1 {
			// A single point draws no line; mark it.
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return c, fmt.Errorf("chart %s: series %s: %w", spec.id, s.name, err)
			}
			sc.GlyphStyle.Color = s.color
			p.Add(sc)
		}
		p.Legend.Add(s.name, l)
		c.Points += len(xys)
	}
	if c.Points == 0 {
		c.Note = "no data to plot"
		return c, nil
	}
	if spec.xMin != nil {
		p.X.Min = *spec.xMin
	}
	if spec.xMax != nil {
		p.X.Max = *spec.xMax
	}
	if spec.yMin != nil {
		p.Y.Min = *spec.yMin
	}
	if spec.yMax != nil {
		p.Y.Max = max(p.Y.Max, *spec.yMax)
	}
	wt, err := p.WriterTo(8*vg.Inch, 4.5*vg.Inch, "svg")
	if err != nil {
		return c, fmt.Errorf("chart %s: %w", spec.id, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return c, fmt.Errorf("chart %s: %w", spec.id, err)
	}
	// Inline SVG starts at the <svg> element; the XML prolog is not HTML.
	b := buf.Bytes()
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		b = b[i:]
	}
	c.SVG = template.HTML(b) // generated by gonum/plot from numbers and escaped labels
	return c, nil
}

// formatLength prints a byte count the way cperf labels its axis.
func formatLength(l float64) string {
	switch {
	case l < 1000:
		return fmt.Sprintf("%.0f", l)
	case l < 10e3:
		return fmt.Sprintf("%.1fK", l/1e3)
	case l < 1e6:
		return fmt.Sprintf("%.0fK", l/1e3)
	}
	return fmt.Sprintf("%.1fM", l/1e6)
}

// lengthTicks labels a logarithmic byte axis as 100, 1K, 1.0M.
func lengthTicks() plot.Ticker { return logTicks(formatLength) }

// logTicks marks a log axis at every power of ten, and also at 2 and 5
// times each when the axis spans less than two decades, so a narrow range
// still gets several labels; label formats each labelled value.
func logTicks(label func(float64) string) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		if lo <= 0 || hi <= lo {
			return nil
		}
		narrow := hi/lo < 100
		var ticks []plot.Tick
		for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
			base := math.Pow(10, e)
			for m := 1.0; m < 10; m++ {
				v := base * m
				if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
					continue
				}
				t := plot.Tick{Value: v}
				if m == 1 || (narrow && (m == 2 || m == 5)) {
					t.Label = label(v)
				}
				ticks = append(ticks, t)
			}
		}
		return ticks
	})
}

// formatNumber prints an axis value compactly: 0.001, 20, 5000, 1e+06.
func formatNumber(v float64) string {
	if v >= 1e6 || v < 1e-3 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// cdfLengthTicks labels the cumulative-fraction axis with the message length
// at every 10% of messages, as cperf's slowdown chart does.
func cdfLengthTicks(rows []SizeRow) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var ticks []plot.Tick
		for i := 0; i <= 10; i++ {
			f := float64(i) / 10
			label := ""
			for _, r := range rows {
				if r.CumFrac >= f-1e-9 {
					label = formatLength(float64(r.Length))
					break
				}
			}
			if i == 0 && len(rows) > 0 {
				label = formatLength(float64(rows[0].MinLength))
			}
			ticks = append(ticks, plot.Tick{Value: f, Label: label})
			if i < 10 {
				ticks = append(ticks, plot.Tick{Value: f + 0.05})
			}
		}
		return ticks
	})
}
