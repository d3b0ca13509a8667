package reports

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

// newSpread summarises values; nil when there are none. The median of an
// even count is the mean of the middle two.
func newSpread(values []float64) *Spread {
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

// HeadlineRow is one transport in one configuration over its repetitions:
// the short-message P50 and P99 (µs) of each.
type HeadlineRow struct {
	// Transport is the transport's name, with its label when it has one
	// ("homa-basic").
	Transport string `json:"transport"`
	// Params are the configuration's parameters, without the transport
	// and the repetition.
	Params      map[string]any `json:"params"`
	Repetitions int            `json:"repetitions"`
	ShortP50us  *Spread        `json:"short_p50_us"`
	ShortP99us  *Spread        `json:"short_p99_us"`
}

// RatioRow compares each transport with Homa in one configuration: the
// ratio of short-message P99s, repetition by repetition (above 1: Homa is
// faster).
type RatioRow struct {
	Params      map[string]any `json:"params"`
	Repetitions int            `json:"repetitions"`
	// TCPOverHomaP99 is TCP's; OverHomaP99 has every transport's by name.
	TCPOverHomaP99 *Spread            `json:"tcp_over_homa_p99"`
	OverHomaP99    map[string]*Spread `json:"over_homa_p99"`
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

// headlines gathers the repetitions of every configuration: one row per
// transport and configuration, and one ratio row per configuration that
// has Homa and another transport.
func headlines(exps []Experiment) ([]HeadlineRow, []RatioRow) {
	type key struct{ config, transport string }
	var configs []string
	var order []key
	byKey := map[key][]*Experiment{}
	for i := range exps {
		e := &exps[i]
		k := key{paramsKey(*e, "repetition"), transportID(e)}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
			if !slices.Contains(configs, k.config) {
				configs = append(configs, k.config)
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
		heads = append(heads, HeadlineRow{Transport: k.transport, Params: configParams(es[0]), Repetitions: len(es),
			ShortP50us: newSpread(p50), ShortP99us: newSpread(p99)})
	}
	ratios := []RatioRow{}
	for _, cfg := range configs {
		homa := byKey[key{cfg, "homa"}]
		if homa == nil {
			continue
		}
		homaP99 := map[string]float64{}
		for _, e := range homa {
			if e.Short.P99us != nil && *e.Short.P99us > 0 {
				homaP99[repetitionOf(e)] = *e.Short.P99us
			}
		}
		row := RatioRow{Params: configParams(homa[0]), Repetitions: len(homa), OverHomaP99: map[string]*Spread{}}
		for _, k := range order {
			if k.config != cfg || k.transport == "homa" {
				continue
			}
			var rs []float64
			for _, e := range byKey[k] {
				if h, ok := homaP99[repetitionOf(e)]; ok && e.Short.P99us != nil {
					rs = append(rs, *e.Short.P99us/h)
				}
			}
			if sp := newSpread(rs); sp != nil {
				row.OverHomaP99[k.transport] = sp
			}
		}
		if len(row.OverHomaP99) == 0 {
			continue
		}
		row.TCPOverHomaP99 = row.OverHomaP99["tcp"]
		ratios = append(ratios, row)
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
