// Package claims is the registry of the published claims homatb
// reproduces (the article's single-queue model, the Homa paper's
// simulations and implementation, the TCP-NV measurements, the talk): for
// each, its published value, where it was published, how homatb measures
// it (the queue model, the twin, or emulation), the tolerance its
// precision allows, and how homatb's value is read from a run. Reproduce
// measures a set of claims and gives each a verdict.
package claims

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/homatb/homatb/reports/stats"
)

// Mode is how a claim is measured.
type Mode string

// The modes.
const (
	ModeQueue     Mode = "queue model"
	ModeTwin      Mode = "twin"
	ModeEmulation Mode = "emulation"
)

// Verdict is what the measurement says of a claim.
type Verdict string

// The verdicts.
const (
	// Reproduced: every measured point is within the claim's tolerance.
	Reproduced Verdict = "reproduced"
	// OrderingHolds: the published ordering holds, not every magnitude.
	OrderingHolds Verdict = "ordering holds"
	// NotReproduced: neither; the note says which points missed and why
	// when the cause is known.
	NotReproduced Verdict = "not reproduced"
	// MachineFloor: this machine cannot show the claim's scale; the note
	// gives the measured floor.
	MachineFloor Verdict = "machine floor"
	// NotYetMeasured: homatb has no experiment for the claim yet.
	NotYetMeasured Verdict = "not yet measured"
)

// Point is one number a claim makes: homatb's value of it passes when it
// lies in [Lo, Hi].
type Point struct {
	Label string
	// Published is the value to draw beside homatb's (NaN for a bound or
	// an ordering).
	Published float64
	Lo, Hi    float64
}

// near is a point whose published value v allows a relative error tol.
func near(label string, v, tol float64) Point {
	return Point{Label: label, Published: v, Lo: v * (1 - tol), Hi: v * (1 + tol)}
}

// bound is a point published as an upper bound v that a named departure
// (Claim.Departure) may take to hi.
func bound(label string, v, hi float64) Point {
	return Point{Label: label, Published: v, Lo: 0, Hi: hi}
}

// band is a point published as a range [lo, hi], allowed tol beyond it.
func band(label string, lo, hi, tol float64) Point {
	return Point{Label: label, Published: math.NaN(), Lo: lo * (1 - tol), Hi: hi * (1 + tol)}
}

// Claim is one published claim and how homatb measures it.
type Claim struct {
	ID   string
	Text string
	// Published is the claim's number(s) as published, in words.
	Published string
	// Source is where it was published.
	Source string
	Mode   Mode
	// Scenario is the scenario file (under scenarios/claims/) that
	// measures a twin or emulation claim.
	Scenario string
	// Tolerance says in words what Points allow.
	Tolerance string
	Points    []Point
	// Pending, when set, is why the claim is not measured yet.
	Pending string
	// Cause is the known reason when the claim does not reproduce.
	Cause string
	// Departure, for a claim whose band allows for a named departure
	// beyond its published bound, says what it is; the note names each
	// point above its published value with it.
	Departure string

	// queue measures a queue-model claim with one seed, one value per
	// point.
	queue func(q *queueRuns, seed uint64) ([]float64, error)
	// twin reads a twin or emulation claim's values, one per point, from
	// one repetition's experiments of its scenario's run.
	twin func(exps []stats.Experiment) ([]float64, error)
	// floor marks a claim at a scale this machine cannot reach: a point
	// outside its band gives the verdict machine floor, the point being
	// the floor measured.
	floor bool
	// ordering, when set, says whether the published ordering holds for
	// the medians.
	ordering func(med []float64) bool
	// note, when set, adds what the medians show beyond the points.
	note func(q *queueRuns) string
}

// PointResult is homatb's value of one point over the seeds (in
// claims.json as pointJSON).
type PointResult struct {
	Label     string
	Published *float64
	Lo, Hi    float64
	Values    []float64
	Median    float64
	Min, Max  float64
	Pass      bool
}

// Row is a claim's result: what claims.json holds and the table shows.
type Row struct {
	ID        string        `json:"id"`
	Claim     string        `json:"claim"`
	Published string        `json:"published"`
	Source    string        `json:"source"`
	Mode      Mode          `json:"mode"`
	Scenario  string        `json:"scenario,omitempty"`
	Tolerance string        `json:"tolerance,omitempty"`
	Seeds     []uint64      `json:"seeds,omitempty"`
	Points    []PointResult `json:"points,omitempty"`
	Verdict   Verdict       `json:"verdict"`
	Note      string        `json:"note,omitempty"`
	Command   string        `json:"command"`
	RunDir    string        `json:"run_dir,omitempty"`
}

// Homatb is the row's value in words: each point's median and, over
// several seeds, its range.
func (r *Row) Homatb() string {
	var parts []string
	for _, p := range r.Points {
		s := fmtNum(p.Median)
		if p.Min != p.Max {
			s += " (" + fmtNum(p.Min) + "–" + fmtNum(p.Max) + ")"
		}
		if len(r.Points) > 1 {
			s = p.Label + " " + s
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// fmtNum prints a value with three significant digits.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "–"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.01 || a == 0:
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// judge fills the row's points from per-seed values (values[seed][point])
// and gives its verdict.
func judge(c *Claim, r *Row, values [][]float64) {
	for i, p := range c.Points {
		pr := PointResult{Label: p.Label, Lo: p.Lo, Hi: p.Hi}
		if !math.IsNaN(p.Published) {
			v := p.Published
			pr.Published = &v
		}
		for _, vs := range values {
			pr.Values = append(pr.Values, vs[i])
		}
		pr.Median, pr.Min, pr.Max = spread(pr.Values)
		pr.Pass = pr.Median >= p.Lo && pr.Median <= p.Hi
		r.Points = append(r.Points, pr)
	}
	var missed []string
	med := make([]float64, len(r.Points))
	for i, p := range r.Points {
		med[i] = p.Median
		if !p.Pass {
			missed = append(missed, fmt.Sprintf("%s %s outside [%s, %s]", p.Label, fmtNum(p.Median), fmtNum(p.Lo), fmtNum(p.Hi)))
		}
	}
	switch {
	case len(missed) == 0:
		r.Verdict = Reproduced
	case c.ordering != nil && c.ordering(med):
		r.Verdict = OrderingHolds
	default:
		r.Verdict = NotReproduced
	}
	if len(missed) > 0 {
		r.Note = strings.Join(missed, "; ")
		if c.Cause != "" {
			r.Note += ". " + c.Cause
		}
	}
	var above []string
	for _, p := range r.Points {
		if c.Departure != "" && p.Pass && p.Published != nil && p.Median > *p.Published {
			above = append(above, fmt.Sprintf("%s %s above the published %s", p.Label, fmtNum(p.Median), fmtNum(*p.Published)))
		}
	}
	if len(above) > 0 {
		r.Note = strings.TrimPrefix(r.Note+"; "+strings.Join(above, "; ")+", within the named departure: "+c.Departure, "; ")
	}
}

// spread is the median, minimum and maximum of vs (NaNs, values that
// could not be measured, make the median NaN).
func spread(vs []float64) (med, lo, hi float64) {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n == 0 || slices.ContainsFunc(s, math.IsNaN) {
		return math.NaN(), math.NaN(), math.NaN()
	}
	if n%2 == 1 {
		med = s[n/2]
	} else {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// Num is a value in claims.json: NaN (not measured) is written as null
// and the infinities as "+Inf" and "-Inf", which JSON numbers cannot hold.
type Num float64

// MarshalJSON writes n as a number, null or "±Inf".
func (n Num) MarshalJSON() ([]byte, error) {
	v := float64(n)
	switch {
	case math.IsNaN(v):
		return []byte("null"), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (n *Num) UnmarshalJSON(b []byte) error {
	switch s := string(b); s {
	case "null":
		*n = Num(math.NaN())
		return nil
	case `"+Inf"`:
		*n = Num(math.Inf(1))
		return nil
	case `"-Inf"`:
		*n = Num(math.Inf(-1))
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*n = Num(v)
	return nil
}

// pointJSON is PointResult as claims.json holds it.
type pointJSON struct {
	Label     string `json:"label"`
	Published *Num   `json:"published,omitempty"`
	Lo        Num    `json:"accept_lo"`
	Hi        Num    `json:"accept_hi"`
	Values    []Num  `json:"values"`
	Median    Num    `json:"median"`
	Min       Num    `json:"min"`
	Max       Num    `json:"max"`
	Pass      bool   `json:"pass"`
}

// MarshalJSON writes p with its non-finite values as Num writes them.
func (p PointResult) MarshalJSON() ([]byte, error) {
	j := pointJSON{Label: p.Label, Lo: Num(p.Lo), Hi: Num(p.Hi), Median: Num(p.Median), Min: Num(p.Min), Max: Num(p.Max), Pass: p.Pass}
	if p.Published != nil {
		v := Num(*p.Published)
		j.Published = &v
	}
	for _, v := range p.Values {
		j.Values = append(j.Values, Num(v))
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *PointResult) UnmarshalJSON(b []byte) error {
	var j pointJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = PointResult{Label: j.Label, Lo: float64(j.Lo), Hi: float64(j.Hi), Median: float64(j.Median), Min: float64(j.Min), Max: float64(j.Max), Pass: j.Pass}
	if j.Published != nil {
		v := float64(*j.Published)
		p.Published = &v
	}
	for _, v := range j.Values {
		p.Values = append(p.Values, float64(v))
	}
	return nil
}
