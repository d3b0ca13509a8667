package stats

import (
	"slices"
)

// A scenario's `repetitions: N` runs every configuration N times with other
// seeds. One run's confidence intervals cover only the sampling noise inside
// it; on a shared machine runs differ by more than that, so the headline is
// the median over repetitions with their range.

// Spread is one statistic over the repetitions of a configuration.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Values has one value per repetition, in repetition order.
	Values []float64 `json:"values"`
}

// NewSpread summarises values; nil when there are none. The median of an
// even count is the mean of the middle two.
func NewSpread(values []float64) *Spread {
	if len(values) == 0 {
		return nil
	}
	s := slices.Clone(values)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return &Spread{Median: med, Min: s[0], Max: s[n-1], Values: values}
}

// HeadlineRow is one configuration in one group of params over its
// repetitions: the short-message P50 and P99 (µs) of each.
type HeadlineRow struct {
	// Config is the configuration's label ("homa", "tcp-cubic",
	// "homa-basic"); Transport is the transport's name with its label when
	// it has one, as before labels were derived.
	Config    string `json:"config"`
	Transport string `json:"transport"`
	// Params are the configuration's parameters, without the transport
	// and the repetition.
	Params      map[string]any `json:"params"`
	Repetitions int            `json:"repetitions"`
	ShortP50us  *Spread        `json:"short_p50_us"`
	ShortP99us  *Spread        `json:"short_p99_us"`
}

// RatioRow compares one configuration with the baseline in one group of
// params: its short-message P99 (and P50) over the baseline's, repetition
// by repetition (above 1: the baseline is faster).
type RatioRow struct {
	Params map[string]any `json:"params"`
	// Config is the configuration compared, Baseline the reference.
	Config   string `json:"config"`
	Baseline string `json:"baseline"`
	// Repetitions counts the repetitions both ran.
	Repetitions int     `json:"repetitions"`
	P99         *Spread `json:"p99_over_baseline"`
	P50         *Spread `json:"p50_over_baseline"`
}

// Rows finds the headline rows a ratio row divides: the baseline's and
// the configuration's (nil when absent).
func (r RatioRow) Rows(heads []HeadlineRow) (base, other *HeadlineRow) {
	for i := range heads {
		h := &heads[i]
		if !SubsetParams(h.Params, r.Params) {
			continue
		}
		switch h.Config {
		case r.Baseline:
			base = h
		case r.Config:
			other = h
		}
	}
	return base, other
}

// repetitionOf returns an experiment's repetition number (1 without one).
func repetitionOf(e *Experiment) string {
	if r, ok := e.Params["repetition"]; ok {
		if s, ok := r.(string); ok {
			return s
		}
	}
	return "1"
}

// Headlines gathers the repetitions of every configuration: one row per
// configuration and params, and one ratio row per configuration (and
// variant) that ran beside the baseline (each of its variants, when a
// sweep of the baseline's own parameter made several).
func Headlines(exps []Experiment, baseline string) ([]HeadlineRow, []RatioRow) {
	// group: the params every transport shares; params: the experiment's
	// own, which tell variants of one configuration apart.
	type key struct{ group, params, config string }
	var groups []string
	var order []key
	byKey := map[key][]*Experiment{}
	for i := range exps {
		e := &exps[i]
		k := key{sharedKey(e.Params, "repetition"), ParamsKey(*e, "repetition"), ConfigID(e)}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
			if !slices.Contains(groups, k.group) {
				groups = append(groups, k.group)
			}
		}
		byKey[k] = append(byKey[k], e)
	}
	heads := []HeadlineRow{}
	for _, k := range order {
		es := byKey[k]
		var p50, p99 []float64
		for _, e := range es {
			if e.Short.P50us != nil && e.Short.P99us != nil {
				p50, p99 = append(p50, *e.Short.P50us), append(p99, *e.Short.P99us)
			}
		}
		heads = append(heads, HeadlineRow{Config: k.config, Transport: transportID(es[0]), Params: configParams(es[0]),
			Repetitions: len(es), ShortP50us: NewSpread(p50), ShortP99us: NewSpread(p99)})
	}
	ratios := []RatioRow{}
	for _, g := range groups {
		var bases, others []key
		for _, k := range order {
			switch {
			case k.group != g:
			case k.config == baseline:
				bases = append(bases, k)
			default:
				others = append(others, k)
			}
		}
		for _, bk := range bases {
			baseByRep := map[string]*Experiment{}
			for _, e := range byKey[bk] {
				baseByRep[repetitionOf(e)] = e
			}
			for _, k := range others {
				var r50, r99 []float64
				for _, e := range byKey[k] {
					b := baseByRep[repetitionOf(e)]
					if b == nil {
						continue
					}
					if r := ratio(b.Short.P99us, e.Short.P99us); r != nil {
						r99 = append(r99, *r)
					}
					if r := ratio(b.Short.P50us, e.Short.P50us); r != nil {
						r50 = append(r50, *r)
					}
				}
				if len(r99) == 0 {
					continue
				}
				ratios = append(ratios, RatioRow{Params: unionParams(configParams(byKey[bk][0]), configParams(byKey[k][0])), Config: k.config, Baseline: baseline,
					Repetitions: len(r99), P99: NewSpread(r99), P50: NewSpread(r50)})
			}
		}
	}
	return heads, ratios
}

// transportID names an experiment's transport with its label, so two
// configurations of one transport stay apart ("homa-basic").
func transportID(e *Experiment) string {
	if e.Label == "" {
		return e.Transport
	}
	return e.Transport + "-" + e.Label
}

// ConfigID is the label an experiment's configuration goes by: the
// manifest's, or transport-label for runs written before it had one.
func ConfigID(e *Experiment) string {
	if e.Config != "" {
		return e.Config
	}
	return transportID(e)
}

// ChooseBaseline picks the configuration every other one is compared
// with: want (the manifest's) when some experiment has it, else "homa",
// else the first Homa experiment's, else the first experiment's.
func ChooseBaseline(exps []Experiment, want string) string {
	var firstHoma string
	for i := range exps {
		c := ConfigID(&exps[i])
		if c == want || (want == "" && c == "homa") {
			return c
		}
		if firstHoma == "" && exps[i].Transport == "homa" {
			firstHoma = c
		}
	}
	if firstHoma != "" {
		return firstHoma
	}
	if len(exps) > 0 {
		return ConfigID(&exps[0])
	}
	return ""
}

// configParams are an experiment's params without the repetition.
func configParams(e *Experiment) map[string]any {
	out := make(map[string]any, len(e.Params))
	for k, v := range e.Params {
		if k != "repetition" && k != "transport" {
			out[k] = v
		}
	}
	return out
}
