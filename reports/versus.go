package reports

// Versus is Homa against TCP in one configuration of a run: the numbers the
// headline puts side by side, with ratios of TCP over Homa (above 1: Homa
// is faster).
type Versus struct {
	Config             string
	Homa, TCP          Headline
	RatioP50, RatioP99 *float64 // short-message P50 and P99
}

// Versus pairs each configuration's first Homa and first TCP experiment;
// configurations without both are left out.
func (s *Summary) Versus() []Versus {
	var out []Versus
	keys, by := groupExperiments(s.Experiments)
	for _, k := range keys {
		homa, tcp := homaAndTCP(by[k])
		if homa == nil || tcp == nil {
			continue
		}
		out = append(out, Versus{Config: k, Homa: headlineOf(homa), TCP: headlineOf(tcp),
			RatioP50: ratio(homa.Short.P50us, tcp.Short.P50us), RatioP99: ratio(homa.Short.P99us, tcp.Short.P99us)})
	}
	return out
}

// homaAndTCP returns the first experiment of each transport in exps.
func homaAndTCP(exps []*Experiment) (homa, tcp *Experiment) {
	for _, e := range exps {
		switch {
		case e.Transport == "homa" && homa == nil:
			homa = e
		case e.Transport == "tcp" && tcp == nil:
			tcp = e
		}
	}
	return homa, tcp
}
