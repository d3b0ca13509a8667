package claims

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is claims.json: the rows of one reproduce run and how it ran.
type Report struct {
	Command  string          `json:"command"`
	Date     time.Time       `json:"date"`
	Quick    bool            `json:"quick"`
	WallS    float64         `json:"wall_s"`
	Verdicts map[Verdict]int `json:"verdicts"`
	Rows     []Row           `json:"rows"`
}

// NewReport counts the verdicts of rows.
func NewReport(command string, date time.Time, quick bool, wall time.Duration, rows []Row) *Report {
	r := &Report{Command: command, Date: date.UTC(), Quick: quick, WallS: math.Round(wall.Seconds()*10) / 10, Verdicts: map[Verdict]int{}, Rows: rows}
	for _, row := range rows {
		r.Verdicts[row.Verdict]++
	}
	return r
}

// WriteTable prints the rows as a table: id, claim, published, homatb's
// median (range), verdict, and the command of the row.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCLAIM\tPUBLISHED\tHOMATB\tVERDICT\tCOMMAND")
	for i := range rows {
		r := &rows[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, clip(r.Claim, 48), clip(r.Published, 40), clip(r.Homatb(), 60), r.Verdict, r.Command)
	}
	return tw.Flush()
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// WriteFiles writes claims.json, claims.html and claims.md (the table in
// Markdown, as docs/claims.md shows it) into dir.
func WriteFiles(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "claims.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "`%s`, %s, %.0f s wall time.\n\n", rep.Command, rep.Date.Format("2006-01-02 15:04 UTC"), rep.WallS)
	WriteMarkdown(&md, rep.Rows)
	if err := os.WriteFile(filepath.Join(dir, "claims.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "claims.html"))
	if err != nil {
		return err
	}
	if err := page.Execute(f, pageData(rep)); err != nil {
		f.Close()
		return fmt.Errorf("claims.html: %w", err)
	}
	return f.Close()
}

// WriteMarkdown writes the rows as a Markdown table (docs/claims.md's).
func WriteMarkdown(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| id | claim | published | homatb | verdict | note | mode |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	for i := range rows {
		r := &rows[i]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.ID, esc(r.Claim), esc(r.Published), esc(r.Homatb()), r.Verdict, esc(r.Note), r.Mode)
	}
}

// The page draws each measured claim as one row per point on a shared
// axis: the accepted band in grey, the published value as a ring, homatb's
// median as a dot with its range over seeds as a line. The axis is
// logarithmic when the values span more than a factor of 20.
type pageRow struct {
	Row
	Homatb string
	SVG    template.HTML
}

func pageData(rep *Report) any {
	var rows []pageRow
	for _, r := range rep.Rows {
		rows = append(rows, pageRow{Row: r, Homatb: r.Homatb(), SVG: template.HTML(chart(&r))})
	}
	return struct {
		*Report
		Rows []pageRow
	}{rep, rows}
}

// chart is the SVG of one row's points ("" when nothing was measured).
func chart(r *Row) string {
	if len(r.Points) == 0 {
		return ""
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	see := func(v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, p := range r.Points {
		see(p.Lo)
		see(p.Hi)
		see(p.Min)
		see(p.Max)
		if p.Published != nil {
			see(*p.Published)
		}
	}
	if math.IsInf(lo, 0) {
		return ""
	}
	logScale := hi/lo > 20
	if logScale {
		lo, hi = lo/1.5, hi*1.5
	} else {
		pad := (hi - lo) * 0.1
		if pad == 0 {
			pad = math.Max(hi*0.1, 0.1)
		}
		lo, hi = math.Max(0, lo-pad), hi+pad
	}
	const left, width, rowH = 170, 420, 22
	x := func(v float64) float64 {
		if math.IsInf(v, 1) {
			v = hi
		}
		v = math.Min(math.Max(v, lo), hi)
		if logScale {
			return left + width*(math.Log(v)-math.Log(lo))/(math.Log(hi)-math.Log(lo))
		}
		return left + width*(v-lo)/(hi-lo)
	}
	var b strings.Builder
	h := rowH*len(r.Points) + 24
	fmt.Fprintf(&b, `<svg width="%d" height="%d" font-size="11" font-family="sans-serif">`, left+width+20, h)
	for i, p := range r.Points {
		y := float64(i*rowH + 12)
		fmt.Fprintf(&b, `<text x="0" y="%.0f">%s</text>`, y+4, template.HTMLEscapeString(p.Label))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="10" fill="#ddd"/>`, x(p.Lo), y-5, math.Max(1, x(p.Hi)-x(p.Lo)))
		if p.Published != nil {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.0f" r="5" fill="none" stroke="#444"/>`, x(*p.Published), y)
		}
		if !math.IsNaN(p.Median) {
			col := "#c33"
			if p.Pass {
				col = "#283"
			}
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="%s"/>`, x(p.Min), x(p.Max), y, y, col)
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.0f" r="3" fill="%s"/>`, x(p.Median), y, col)
		}
	}
	ay := h - 8
	scale := "linear"
	if logScale {
		scale = "log"
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text><text x="%d" y="%d" text-anchor="middle">%s axis</text>`,
		left, ay, fmtNum(lo), left+width, ay, fmtNum(hi), left+width/2, ay, scale)
	b.WriteString(`</svg>`)
	return b.String()
}

var page = template.Must(template.New("claims").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>homatb: published claims reproduced</title>
<style>body{font-family:sans-serif;max-width:70em;margin:1em auto}td,th{border-bottom:1px solid #ddd;padding:4px;vertical-align:top;text-align:left}
.reproduced{color:#283}.not{color:#c33}</style></head><body>
<h1>Published claims, reproduced</h1>
<p><code>{{.Command}}</code>, {{.Date.Format "2006-01-02 15:04 UTC"}}, {{.WallS}} s{{if .Quick}} (quick: one seed, shorter runs){{end}}.
Each chart: the accepted band in grey, the published value as a ring, homatb's median as a dot with its range over seeds (green: within the band).</p>
<table><tr><th>id</th><th>claim</th><th>published</th><th>homatb</th><th>verdict</th><th>chart</th></tr>
{{range .Rows}}<tr><td>{{.ID}}</td><td>{{.Claim}}<br><small>{{.Source}}; {{.Mode}}{{if .Scenario}}, {{.Scenario}}{{end}}</small></td><td>{{.Published}}</td><td>{{.Homatb}}</td>
<td>{{.Verdict}}{{if .Note}}<br><small>{{.Note}}</small>{{end}}<br><small><code>{{.Command}}</code></small></td><td>{{.SVG}}</td></tr>
{{end}}</table></body></html>
`))
