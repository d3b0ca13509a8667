package reports

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/homatb/homatb/anatomy"
	"github.com/homatb/homatb/reports/stats"
)

// anatomyPart is one part of the RTT as the anatomy chart draws it.
type anatomyPart struct {
	name, color string
	of          func(p anatomy.Parts) float64
}

// anatomyParts are the parts in drawing order, left to right: the
// network's first, then the hosts', then what nothing explains.
var anatomyParts = []anatomyPart{
	{"switch queue", "#d62728", func(p anatomy.Parts) float64 { return p.Queue }},
	{"switch", "#ff9896", func(p anatomy.Parts) float64 { return p.Switch }},
	{"wire", "#9467bd", func(p anatomy.Parts) float64 { return p.Wire }},
	{"loss recovery", "#ff7f0e", func(p anatomy.Parts) float64 { return p.Recovery }},
	{"host, behind its connection's queued bytes", "#17becf", func(p anatomy.Parts) float64 { return p.HostHOL }},
	{"host", "#1f77b4", func(p anatomy.Parts) float64 { return p.Host - p.HostHOL }},
	{"send lag", "#aec7e8", func(p anatomy.Parts) float64 { return p.SendLag }},
	{"unattributed", "#c7c7c7", func(p anatomy.Parts) float64 { return math.Abs(p.Unattributed) }},
}

// anatomyBar is one stacked bar: a label and its parts.
type anatomyBar struct {
	label string
	parts anatomy.Parts
}

// anatomyChart draws, for each experiment with an anatomy, two bars (the
// median RPC and the tail) with each part's share of the RTT, the bar's
// mean RTT written at its end. Shares rather than µs, so that a transport
// whose RTT is a hundred times another's still shows its make-up.
func anatomyChart(id, title string, exps []*stats.Experiment) chart {
	var bars []anatomyBar
	for _, e := range exps {
		if a := e.Anatomy; a != nil && a.RPCs > 0 {
			bars = append(bars, anatomyBar{e.Name + ", median", a.Median}, anatomyBar{e.Name + ", tail (≥ P99)", a.Tail})
		}
	}
	c := chart{ID: id, Title: title}
	if len(bars) == 0 {
		c.Note = "no per-packet switch records (switch.postcards), so no latency anatomy"
		short := false
		for _, e := range exps {
			short = short || e.Short.Count > 0
		}
		if !short {
			c.Note = "no latency anatomy: it takes apart short RPCs, and this run has none"
		}
		return c
	}
	const (
		labelW = 250.0
		barH   = 22.0
		gap    = 10.0
		rttW   = 90.0
	)
	x0, x1 := labelW, svgWidth-rttW
	legendY := marginTop + float64(len(bars))*(barH+gap) + 16
	// The legend wraps into as many rows as its items need.
	type item struct{ x, y float64 }
	items := make([]item, len(anatomyParts))
	lx, ly := x0, legendY
	for i, p := range anatomyParts {
		w := 16 + charWidth*float64(len([]rune(p.name)))
		if lx > x0 && lx+w > svgWidth-marginRight {
			lx, ly = x0, ly+legendRowH
		}
		items[i] = item{lx, ly}
		lx += w + 14
	}
	height := ly + 2*legendRowH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" font-size="%s" font-family="sans-serif" role="img">`,
		coord(svgWidth), coord(height), coord(fontSize))
	for i, bar := range bars {
		y := marginTop + float64(i)*(barH+gap)
		total := 0.0
		for _, p := range anatomyParts {
			total += p.of(bar.parts)
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, coord(x0-8), coord(y+barH*0.7), template.HTMLEscapeString(fitText(bar.label, x0-8)))
		x := x0
		for _, p := range anatomyParts {
			v := p.of(bar.parts)
			if v <= 0 || total <= 0 {
				continue
			}
			w := (x1 - x0) * v / total
			share := 100 * v / total
			fmt.Fprintf(&b, `<rect class="anatomy-part" data-part="%s" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s: %.0f µs (%.0f%%)</title></rect>`,
				p.name, coord(x), coord(y), coord(w), coord(barH), p.color, template.HTMLEscapeString(bar.label+", "+p.name), v, share)
			if w > 34 {
				fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="#fff">%.0f%%</text>`, coord(x+w/2), coord(y+barH*0.7), share)
			}
			x += w
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s">%s</text>`, coord(x1+6), coord(y+barH*0.7), template.HTMLEscapeString(stats.MicrosLabel(bar.parts.RTT)))
	}
	for i, p := range anatomyParts {
		it := items[i]
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="12" height="12" fill="%s"/><text x="%s" y="%s">%s</text>`,
			coord(it.x), coord(it.y), p.color, coord(it.x+16), coord(it.y+10), p.name)
	}
	b.WriteString(`</svg>`)
	c.SVG = template.HTML(b.String()) // built from escaped text and numbers only
	c.Points = len(bars)
	return c
}

// fitText shortens s with an ellipsis to at most width viewBox units at
// charWidth a character; callers keep the full text in a tooltip (the
// bar's, the legend item's).
func fitText(s string, width float64) string {
	r := []rune(s)
	n := int(width / charWidth)
	if len(r) <= n || n < 2 {
		return s
	}
	return string(r[:n-1]) + "…"
}
