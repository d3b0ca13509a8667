package scenario

import (
	"fmt"
	"slices"
	"strings"
)

// Only keeps the configurations named in names (a transport's name, as
// "homa" or "tcp", or its configuration label, as "tcp-dctcp") and the
// experiments that run them (homatb run --only). A name that matches none
// is an error that lists the scenario's configurations.
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
	p.Base.Transports = slices.DeleteFunc(p.Base.Transports, func(t Transport) bool { return !match(t) })
	p.Experiments = slices.DeleteFunc(p.Experiments, func(e Experiment) bool { return !match(e.Transport) })
	return nil
}
