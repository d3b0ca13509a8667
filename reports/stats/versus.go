package stats

import (
	"fmt"
	"maps"
	"strings"
)

// Versus is one configuration against the baseline in one group of params:
// the numbers the headline puts side by side, with ratios of the
// configuration's over the baseline's (above 1: the baseline is faster).
type Versus struct {
	// Params names the group of params ("load=0.5"), "" when the run has
	// one.
	Params string
	// Baseline and Config are the two configurations' labels.
	Baseline, Config   string
	Base, Other        Headline
	RatioP50, RatioP99 *float64 // short-message P50 and P99
	// Label names the RPCs compared (Summary.ShortLabel).
	Label string
}

// Versus pairs, in each group of params, the baseline's first experiment
// with the first experiment of every other configuration; groups without
// the baseline are left out.
func (s *Summary) Versus() []Versus {
	var out []Versus
	for _, c := range Comparisons(s.Experiments, s.Baseline) {
		out = append(out, Versus{Params: c.Params, Baseline: ConfigID(c.Base), Config: ConfigID(c.Other),
			Base: headlineOf(c.Base), Other: headlineOf(c.Other), RatioP50: c.RatioP50, RatioP99: c.RatioP99, Label: s.ShortLabel()})
	}
	return out
}

// Contrast is one configuration's first experiment against the
// baseline's in one group of params.
type Contrast struct {
	// Params names the pair's params (both experiments' together).
	Params             string
	Base, Other        *Experiment
	RatioP50, RatioP99 *float64 // Other over Base
	ParamMap           map[string]any
}

// Comparisons lists, group by group, every configuration against the
// baseline, in the order the experiments ran. A group is the params every
// transport shares; a parameter of one transport ("transports.homa....")
// tells variants apart within it, and every variant of the baseline is
// compared with every variant of the others.
func Comparisons(exps []Experiment, baseline string) []Contrast {
	var out []Contrast
	keys, by := groupBy(exps, func(e *Experiment) string { return sharedKey(e.Params, "") })
	for _, k := range keys {
		var bases, others []*Experiment
		seen := map[string]bool{}
		for _, e := range by[k] {
			id := ConfigID(e) + "\x00" + ParamsKey(*e, "")
			if seen[id] {
				continue
			}
			seen[id] = true
			if ConfigID(e) == baseline {
				bases = append(bases, e)
			} else {
				others = append(others, e)
			}
		}
		for _, b := range bases {
			for _, o := range others {
				params := unionParams(b.Params, o.Params)
				out = append(out, Contrast{Params: ParamsKey(Experiment{Params: params}, ""), Base: b, Other: o, ParamMap: params,
					RatioP50: ratio(b.Short.P50us, o.Short.P50us), RatioP99: ratio(b.Short.P99us, o.Short.P99us)})
			}
		}
	}
	return out
}

// groupBy groups experiments by key, in first-seen order.
func groupBy(exps []Experiment, key func(*Experiment) string) ([]string, map[string][]*Experiment) {
	var keys []string
	by := map[string][]*Experiment{}
	for i := range exps {
		k := key(&exps[i])
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], &exps[i])
	}
	return keys, by
}

// transportParam reports whether a param is one transport's (a sweep of
// "transports.<id>...."), which the other transports do not run with.
func transportParam(k string) bool { return strings.HasPrefix(k, "transports.") }

// sharedKey formats the params every transport shares, without except.
func sharedKey(params map[string]any, except string) string {
	shared := map[string]any{}
	for k, v := range params {
		if !transportParam(k) {
			shared[k] = v
		}
	}
	return ParamsKey(Experiment{Params: shared}, except)
}

// unionParams merges two experiments' params (they agree on the keys they
// share).
func unionParams(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, b)
	return out
}

// SubsetParams reports whether every param of sub has the same value in
// super.
func SubsetParams(sub, super map[string]any) bool {
	for k, v := range sub {
		if w, ok := super[k]; !ok || fmt.Sprint(v) != fmt.Sprint(w) {
			return false
		}
	}
	return true
}

func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *a == 0 {
		return nil
	}
	return Ptr(*b / *a)
}
