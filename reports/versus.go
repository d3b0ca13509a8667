package reports

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
}

// Versus pairs, in each group of params, the baseline's first experiment
// with the first experiment of every other configuration; groups without
// the baseline are left out.
func (s *Summary) Versus() []Versus {
	var out []Versus
	for _, c := range comparisons(s.Experiments, s.Baseline) {
		out = append(out, Versus{Params: c.Params, Baseline: configID(c.Base), Config: configID(c.Other),
			Base: headlineOf(c.Base), Other: headlineOf(c.Other), RatioP50: c.RatioP50, RatioP99: c.RatioP99})
	}
	return out
}

// comparison is one configuration's first experiment against the
// baseline's in one group of params.
type comparison struct {
	Params             string
	Base, Other        *Experiment
	RatioP50, RatioP99 *float64 // Other over Base
}

// comparisons lists, group by group, every configuration against the
// baseline, in the order the experiments ran.
func comparisons(exps []Experiment, baseline string) []comparison {
	var out []comparison
	keys, by := groupExperiments(exps)
	for _, k := range keys {
		base, others := againstBaseline(by[k], baseline)
		for _, o := range others {
			out = append(out, comparison{Params: k, Base: base, Other: o,
				RatioP50: ratio(base.Short.P50us, o.Short.P50us), RatioP99: ratio(base.Short.P99us, o.Short.P99us)})
		}
	}
	return out
}

// againstBaseline returns the baseline's first experiment in exps and the
// first experiment of every other configuration; no others without the
// baseline.
func againstBaseline(exps []*Experiment, baseline string) (base *Experiment, others []*Experiment) {
	seen := map[string]bool{}
	for _, e := range exps {
		c := configID(e)
		if seen[c] {
			continue
		}
		seen[c] = true
		if c == baseline {
			base = e
		} else {
			others = append(others, e)
		}
	}
	if base == nil {
		return nil, nil
	}
	return base, others
}
