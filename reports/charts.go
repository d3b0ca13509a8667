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

// series is one line of a chart.
type series struct {
	name   string
	pts    []stats.Point
	color  color.Color
	dashed bool
	step   bool // post-step histogram (the cperf chart)
	// markers marks each point; markersOnly draws no line between them,
	// for discrete x values where a line would suggest values in between.
	markers, markersOnly bool
	dotted               bool // a reference line, such as the unloaded baseline
}

// chartSpec describes a chart independent of the plotting library.
type chartSpec struct {
	id, title      string
	xLabel, yLabel string
	logX, logY     bool
	xTicks         plot.Ticker // nil: default for the scale
	xMin, xMax     *float64
	yMin, yMax     *float64 // the axis reaches at least down to yMin and up to yMax
	// topTicks and topLabel draw a second x axis above the plot.
	topTicks []plot.Tick
	topLabel string
	guides   []guide
	bands    []stats.Band
	series   []series
	// shareX and shareY ask shareAxes for the x (time) or y range common
	// to every chart of a configuration that asks for it.
	shareX, shareY bool
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

func decimate(pts []stats.Point) []stats.Point {
	if len(pts) <= maxChartPoints {
		return pts
	}
	w := (len(pts) + maxChartPoints - 1) / maxChartPoints
	out := make([]stats.Point, 0, maxChartPoints)
	for i := 0; i < len(pts); i += w {
		best := pts[i]
		for _, p := range pts[i:min(i+w, len(pts))] {
			if p.Y > best.Y {
				best = p
			}
		}
		out = append(out, stats.Point{X: pts[i].X, Y: best.Y})
	}
	return out
}

// formatLength prints a byte count the way cperf labels its axis: 100,
// 1.5K, 10K, 1M.
func formatLength(l float64) string {
	var s string
	switch {
	case l < 1000:
		return fmt.Sprintf("%.0f", l)
	case l < 10e3:
		s = fmt.Sprintf("%.1fK", l/1e3)
	case l < 1e6:
		return fmt.Sprintf("%.0fK", l/1e3)
	default:
		s = fmt.Sprintf("%.1fM", l/1e6)
	}
	return strings.Replace(s, ".0", "", 1)
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

// formatNumber prints an axis value compactly: 0.001, 20, 5K, 1M.
func formatNumber(v float64) string {
	// Twelve significant digits drop the noise of sums such as 0.1*8.
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', -1, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "K"
	case a != 0 && a < 1e-3:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// cdfLengthTicks labels the cumulative-fraction axis with message sizes:
// each size bucket is as wide as its share of messages and carries its
// size in its middle, unless that label would crowd the previous one; the
// bucket boundaries get unlabelled ticks.
func cdfLengthTicks(rows []stats.SizeRow) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		const minGap = 0.07 // of the axis: about five characters at 800 units
		var ticks []plot.Tick
		prev, lastLabel := 0.0, math.Inf(-1)
		for _, r := range rows {
			mid := (prev + r.CumFrac) / 2
			if mid-lastLabel >= minGap {
				ticks = append(ticks, plot.Tick{Value: mid, Label: formatLength(float64(r.Length))})
				lastLabel = mid
			}
			ticks = append(ticks, plot.Tick{Value: r.CumFrac})
			prev = r.CumFrac
		}
		return ticks
	})
}
