package reports

import (
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/homatb/homatb/reports/stats"
	"gonum.org/v1/plot"
)

// The charts are SVG written here rather than by gonum/plot: gonum/plot
// draws legends only inside the plotting area, has no second (top) x axis,
// writes fixed point sizes and its own fonts, and cannot tag an element
// with a class, all of which the report needs. gonum/plot's Ticker type is
// kept for the tick generators.

// Chart geometry in viewBox units; the SVG scales to the page's width.
const (
	svgWidth     = 800.0
	plotHeight   = 300.0
	marginLeft   = 72.0
	marginRight  = 24.0
	marginTop    = 16.0
	axisBelow    = 48.0 // tick labels and the x label
	topAxisSpace = 40.0 // tick labels and the label of a top axis
	legendRowH   = 18.0
	fontSize     = 12.0
	charWidth    = 7.4 // advance of a wide 12-unit sans-serif character
)

// guide is a horizontal reference line, such as P50 and P99 on a CCDF.
type guide struct {
	y     float64
	label string
}

// axis maps data values to viewBox coordinates along one direction.
type axis struct {
	lo, hi     float64
	log        bool
	pos0, pos1 float64 // viewBox coordinates of lo and hi
}

func (a axis) at(v float64) float64 {
	f := (v - a.lo) / (a.hi - a.lo)
	if a.log {
		f = (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	}
	return a.pos0 + f*(a.pos1-a.pos0)
}

// linearTicks labels a linear axis at about five round values.
func linearTicks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: formatNumber(lo)}}
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for k := math.Ceil(lo / step); k*step <= hi*(1+1e-9); k++ {
		v := k * step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: formatNumber(v)})
	}
	return ticks
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, so a
// linear axis ends at a labelled value with headroom above the data.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*mag >= v*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// hexColor prints a colour as #rrggbb.
func hexColor(c color.Color) string {
	if c == nil {
		return "#333"
	}
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// coord prints a viewBox coordinate to a tenth of a unit.
func coord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// stepPoints turns a post-step series into the corners of its steps.
func stepPoints(pts []stats.Point) []stats.Point {
	out := make([]stats.Point, 0, 2*len(pts))
	for i, p := range pts {
		if i > 0 {
			out = append(out, stats.Point{X: p.X, Y: pts[i-1].Y})
		}
		out = append(out, p)
	}
	return out
}

// drawn is one series with the points of it a chart can plot.
type drawn struct {
	s   series
	pts []stats.Point
}

// plotted keeps the points of each series the chart's axes can show (finite,
// and positive on a log axis), drops series left empty, and returns the
// corners of what is left.
func plotted(spec chartSpec) (ds []drawn, lo, hi stats.Point) {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range spec.series {
		var pts []stats.Point
		for _, p := range decimate(s.pts) {
			if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) ||
				(spec.logX && p.X <= 0) || (spec.logY && p.Y <= 0) {
				continue
			}
			pts = append(pts, p)
			xlo, xhi, ylo, yhi = min(xlo, p.X), max(xhi, p.X), min(ylo, p.Y), max(yhi, p.Y)
		}
		if len(pts) == 0 {
			continue
		}
		ds = append(ds, drawn{s, pts})
	}
	return ds, stats.Point{X: xlo, Y: ylo}, stats.Point{X: xhi, Y: yhi}
}

// axesRange widens the data's corners lo and hi to the axes' ranges: the
// bands, guides and fixed ends the spec asks for, whole decades on a log
// y axis, headroom above the data on a linear one.
func (spec chartSpec) axesRange(lo, hi stats.Point) (stats.Point, stats.Point) {
	xlo, xhi, ylo, yhi := lo.X, hi.X, lo.Y, hi.Y
	for _, bd := range spec.bands {
		xlo, xhi = min(xlo, bd.X0), max(xhi, bd.X1)
	}
	if spec.xMin != nil {
		xlo = *spec.xMin
	}
	if spec.xMax != nil {
		xhi = *spec.xMax
	}
	if spec.yMin != nil {
		// The axis starts at yMin, or lower where data lies below it
		// (a transport faster unloaded than the ideal model).
		ylo = min(ylo, *spec.yMin)
	}
	for _, g := range spec.guides {
		ylo, yhi = min(ylo, g.y), max(yhi, g.y)
	}
	if spec.yMax != nil {
		yhi = max(yhi, *spec.yMax)
	}
	xlo, xhi = widen(xlo, xhi, spec.logX)
	ylo, yhi = widen(ylo, yhi, spec.logY)
	if spec.logY {
		// Whole decades: the axis starts and ends at a labelled value.
		ylo, yhi = math.Pow(10, math.Floor(math.Log10(ylo)+1e-9)), math.Pow(10, math.Ceil(math.Log10(yhi)-1e-9))
	} else {
		// Headroom above the data so no line runs along the top edge.
		yhi = niceCeil(yhi * 1.05)
		if ylo > 0 && spec.yMin == nil {
			ylo = 0
		}
	}
	if spec.logX && spec.xMin == nil {
		xlo, xhi = xlo/1.3, xhi*1.3 // room for markers at the ends
	}
	return stats.Point{X: xlo, Y: ylo}, stats.Point{X: xhi, Y: yhi}
}

// render draws a chart as inline SVG: plotting area, axes, then a legend
// below the x axis, where it cannot cover data.
func render(spec chartSpec) (chart, error) {
	c := chart{ID: spec.id, Title: spec.title}
	ds, lo, hi := plotted(spec)
	for _, d := range ds {
		c.Points += len(d.pts)
	}
	if c.Points == 0 {
		c.Note = "no data to plot"
		return c, nil
	}
	lo, hi = spec.axesRange(lo, hi)
	xlo, xhi, ylo, yhi := lo.X, hi.X, lo.Y, hi.Y

	top := marginTop
	if len(spec.topTicks) > 0 {
		top += topAxisSpace
	}
	x := axis{lo: xlo, hi: xhi, log: spec.logX, pos0: marginLeft, pos1: svgWidth - marginRight}
	y := axis{lo: ylo, hi: yhi, log: spec.logY, pos0: top + plotHeight, pos1: top}

	// Legend layout: equal columns wide enough for the longest name.
	longest := 0
	for _, d := range ds {
		longest = max(longest, len([]rune(d.s.name)))
	}
	// A name too long for one column is shortened (the full one is in the
	// line's tooltip).
	itemW := min(44+charWidth*float64(longest), svgWidth-marginLeft-marginRight)
	cols := max(1, int((svgWidth-marginLeft-marginRight)/itemW))
	rows := (len(ds) + cols - 1) / cols
	legendTop := y.pos0 + axisBelow + 6
	height := legendTop + float64(rows)*legendRowH + 6

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="100%%" role="img" aria-label="%s" font-size="%s">`,
		coord(svgWidth), coord(height), template.HTMLEscapeString(spec.title), coord(fontSize))
	// Shaded phases, then grid and ticks, then data on top.
	for i, bd := range spec.bands {
		x0, x1 := max(x.at(max(bd.X0, xlo)), x.pos0), min(x.at(min(bd.X1, xhi)), x.pos1)
		if x1 <= x0 {
			continue
		}
		fill := [...]string{"#eeeeee", "#ffffff", "#f4f4f4"}[i%3]
		fmt.Fprintf(&b, `<g class="phase"><rect x="%s" y="%s" width="%s" height="%s" fill="%s"/><text x="%s" y="%s" text-anchor="middle" fill="#777" font-size="11">%s</text></g>`,
			coord(x0), coord(y.pos1), coord(x1-x0), coord(y.pos0-y.pos1), fill, coord((x0+x1)/2), coord(y.pos1+12), template.HTMLEscapeString(bd.Label))
	}
	xt, yt := spec.xTicks, plot.Ticker(nil)
	if xt == nil {
		xt = defaultTicker(spec.logX)
	}
	yt = defaultTicker(spec.logY)
	b.WriteString(`<g class="axes" stroke="#ddd" stroke-width="0.6">`)
	for _, tk := range xt.Ticks(xlo, xhi) {
		if tk.Label != "" && tk.Value >= xlo && tk.Value <= xhi*(1+1e-9) {
			px := coord(x.at(tk.Value))
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, px, coord(y.pos1), px, coord(y.pos0))
		}
	}
	for _, tk := range yt.Ticks(ylo, yhi) {
		if tk.Label != "" {
			py := coord(y.at(tk.Value))
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, coord(x.pos0), py, coord(x.pos1), py)
		}
	}
	fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#888"/></g>`,
		coord(x.pos0), coord(y.pos1), coord(x.pos1-x.pos0), coord(y.pos0-y.pos1))
	b.WriteString(`<g class="ticks" fill="#333">`)
	for _, tk := range xt.Ticks(xlo, xhi) {
		if tk.Value < xlo*(1-1e-9) || tk.Value > xhi*(1+1e-9) {
			continue
		}
		px := x.at(tk.Value)
		l := 3.0
		if tk.Label != "" {
			l = 5
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, coord(px), coord(y.pos0+18), template.HTMLEscapeString(tk.Label))
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`, coord(px), coord(y.pos0), coord(px), coord(y.pos0+l))
	}
	for _, tk := range yt.Ticks(ylo, yhi) {
		py := y.at(tk.Value)
		l := 3.0
		if tk.Label != "" {
			l = 5
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, coord(x.pos0-8), coord(py+4), template.HTMLEscapeString(tk.Label))
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`, coord(x.pos0-l), coord(py), coord(x.pos0), coord(py))
	}
	for _, tk := range spec.topTicks {
		px := x.at(tk.Value)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`, coord(px), coord(y.pos1-5), coord(px), coord(y.pos1))
		if tk.Label != "" {
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, coord(px), coord(y.pos1-9), template.HTMLEscapeString(tk.Label))
		}
	}
	if spec.topLabel != "" {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, coord((x.pos0+x.pos1)/2), coord(y.pos1-26), template.HTMLEscapeString(spec.topLabel))
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, coord((x.pos0+x.pos1)/2), coord(y.pos0+38), template.HTMLEscapeString(spec.xLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %s) rotate(-90)" text-anchor="middle">%s</text></g>`, coord((y.pos0+y.pos1)/2), template.HTMLEscapeString(spec.yLabel))
	for _, g := range spec.guides {
		py := coord(y.at(g.y))
		fmt.Fprintf(&b, `<g class="guide"><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999" stroke-dasharray="2 3"/><text x="%s" y="%s" text-anchor="end" fill="#666" font-size="11">%s</text></g>`,
			coord(x.pos0), py, coord(x.pos1), py, coord(x.pos1-4), coord(y.at(g.y)-3), template.HTMLEscapeString(g.label))
	}
	for _, d := range ds {
		col := hexColor(d.s.color)
		dash := dashArray(d.s)
		pts := d.pts
		if d.s.step {
			pts = stepPoints(pts)
		}
		if len(pts) > 1 && !d.s.markersOnly {
			var pb strings.Builder
			for i, p := range pts {
				if i > 0 {
					pb.WriteByte(' ')
				}
				pb.WriteString(coord(x.at(p.X)) + "," + coord(y.at(p.Y)))
			}
			fmt.Fprintf(&b, `<polyline class="series" data-series="%s" points="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`,
				template.HTMLEscapeString(d.s.name), pb.String(), col, dash)
		}
		if len(d.pts) == 1 || d.s.markers || d.s.markersOnly {
			fmt.Fprintf(&b, `<g class="markers" data-series="%s" fill="%s">`, template.HTMLEscapeString(d.s.name), col)
			for _, p := range d.pts {
				if d.s.dashed {
					// Hollow squares tell P99 from P50's dots in grey print.
					fmt.Fprintf(&b, `<rect x="%s" y="%s" width="7" height="7" fill="#fff" stroke="%s" stroke-width="1.5"/>`, coord(x.at(p.X)-3.5), coord(y.at(p.Y)-3.5), col)
				} else {
					fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5"/>`, coord(x.at(p.X)), coord(y.at(p.Y)))
				}
			}
			b.WriteString(`</g>`)
		}
	}
	b.WriteString(`<g class="legend">`)
	for i, d := range ds {
		lx := marginLeft + float64(i%cols)*itemW
		ly := legendTop + float64(i/cols)*legendRowH + legendRowH/2
		dash := dashArray(d.s)
		col := hexColor(d.s.color)
		fmt.Fprintf(&b, `<g><title>%s</title>`, template.HTMLEscapeString(d.s.name))
		switch {
		case d.s.markersOnly && d.s.dashed:
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="7" height="7" fill="#fff" stroke="%s" stroke-width="1.5"/>`, coord(lx+9.5), coord(ly-3.5), col)
		case d.s.markersOnly:
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`, coord(lx+13), coord(ly), col)
		default:
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, coord(lx), coord(ly), coord(lx+26), coord(ly), col, dash)
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s">%s</text></g>`, coord(lx+30), coord(ly+4), template.HTMLEscapeString(fitText(d.s.name, itemW-30)))
	}
	b.WriteString(`</g></svg>`)
	c.SVG = template.HTML(b.String()) // numbers and escaped labels only
	return c, nil
}

// widen gives a degenerate range some width so values map somewhere.
func widen(lo, hi float64, log bool) (float64, float64) {
	if hi > lo {
		return lo, hi
	}
	if log {
		return lo / 2, hi * 2
	}
	if lo == 0 {
		return 0, 1
	}
	return lo - math.Abs(lo)/2, hi + math.Abs(hi)/2
}

// defaultTicker labels log axes at decades and linear axes at round values.
func defaultTicker(log bool) plot.Ticker {
	if log {
		return logTicks(formatNumber)
	}
	return plot.TickerFunc(linearTicks)
}

// dashArray is the stroke-dasharray attribute of a series' line.
func dashArray(s series) string {
	switch {
	case s.dotted:
		return ` stroke-dasharray="1.5 3"`
	case s.dashed:
		return ` stroke-dasharray="6 4"`
	}
	return ""
}
