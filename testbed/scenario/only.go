package scenario

import (
	"fmt"
	"slices"
	"strings"
)

// Only keeps the configurations named in names (a transport's name, as
// "homa" or "tcp", or its configuration label, as "tcp-dctcp") and the
// experiments that run them (homatb run --only). A name that matches none
// is an error that lists the scenario's configurations. In a scenario whose
// phases name their transports, each experiment keeps the parts of the
// transports named: one transport's part runs alone, on the same hosts,
// phases and seeds it has beside the others (Experiment.Part), the
// baseline of the shared experiment.
func (p *Plan) Only(names []string) error {
	match := func(t Transport) bool {
		return slices.Contains(names, t.Name) || slices.Contains(names, t.Config())
	}
	var have []string
	for _, t := range p.Base.Transports {
		have = append(have, t.Config())
	}
	for _, n := range names {
		if !slices.ContainsFunc(p.Base.Transports, func(t Transport) bool { return t.Name == n || t.Config() == n }) {
			return fmt.Errorf("%s: --only %s: no configuration of this scenario is %q (it has %s)", p.File, n, n, strings.Join(have, ", "))
		}
	}
	if p.Base.Shared() {
		p.onlyParts(match)
	}
	p.Base.Transports = slices.DeleteFunc(p.Base.Transports, func(t Transport) bool { return !match(t) })
	if !p.Base.Shared() {
		p.Experiments = slices.DeleteFunc(p.Experiments, func(e Experiment) bool { return !match(e.Transport) })
	}
	return nil
}

// onlyParts cuts a shared plan's experiments to the parts of the
// transports match keeps: with one left, each experiment becomes that
// part, run alone and named after its transport; with all, nothing
// changes (at most two transports share, so there is no third case).
func (p *Plan) onlyParts(match func(Transport) bool) {
	var kept []Experiment
	for _, e := range p.Experiments {
		ks := slices.IndexFunc(e.Transports, match)
		if ks < 0 {
			continue
		}
		if slices.IndexFunc(e.Transports[ks+1:], match) >= 0 || !e.Shared() {
			kept = append(kept, e)
			continue
		}
		part := *e.Part(ks)
		part.Name = experimentName(part.Scenario.Name, part.Transport, part)
		kept = append(kept, part)
	}
	p.Experiments = kept
	p.Base.Phases = slices.DeleteFunc(slices.Clone(p.Base.Phases), func(ph Phase) bool {
		return !slices.ContainsFunc(p.Base.Transports, func(t Transport) bool { return match(t) && ph.Names(t) })
	})
}
