package stats

import (
	"slices"

	"github.com/homatb/homatb/rundir"
)

// A shared experiment runs several transports at once (the manifest's
// transports list). Its statistics, anatomy and headline are per
// transport: each transport's RPCs are analysed as an experiment of their
// own, named PartName, beside the others of the same experiment (the same
// params, so the same group in the report).

// PartName names transport tr's share of shared experiment exp.
func PartName(exp, tr string) string { return exp + "/" + tr }

// sharedParts lists the manifest's experiments with each shared one
// replaced by one entry per transport, in its order; partOf maps each
// part's name to its experiment's.
func sharedParts(exps []rundir.Experiment, partOf map[string]string) []rundir.Experiment {
	var out []rundir.Experiment
	for _, me := range exps {
		if len(me.Transports) < 2 {
			out = append(out, me)
			continue
		}
		for i, tr := range me.Transports {
			p := me
			p.Name, p.Transport, p.Label, p.Config = PartName(me.Name, tr), tr, "", tr
			if i < len(me.Configs) {
				p.Config = me.Configs[i]
			}
			if i < len(me.PartLoads) {
				l := me.PartLoads[i]
				p.ConfiguredBps, p.ConfiguredRPS, p.UnratedClients = l.ConfiguredBps, l.ConfiguredRPS, l.UnratedClients
			} else {
				p.ConfiguredBps, p.ConfiguredRPS, p.UnratedClients = 0, 0, 0 // unknown: no check against it
			}
			p.Transports, p.Configs, p.PartLoads = nil, nil, nil
			// The books and counters are the whole experiment's.
			p.Fidelity = append(slices.Clip(me.Fidelity), "the RPC books and transport counters are those of the whole experiment, whose transports ran at once ("+joinNames(me.Transports)+")")
			partOf[p.Name] = me.Name
			out = append(out, p)
		}
	}
	return out
}

func joinNames(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// splitOf is ReadRecordsSplit's split for the manifest's experiments: the
// transports of each shared one.
func splitOf(exps []rundir.Experiment) func(string) []string {
	shared := map[string][]string{}
	for _, me := range exps {
		if len(me.Transports) > 1 {
			shared[me.Name] = me.Transports
		}
	}
	if len(shared) == 0 {
		return nil
	}
	return func(exp string) []string { return shared[exp] }
}

// lastServed keeps the rows served returned last, so the parts of one
// experiment, asked for in turn, read its servers' rows once.
func lastServed(served func(string) ([]rundir.Served, error)) func(string) ([]rundir.Served, error) {
	var (
		name string
		rows []rundir.Served
	)
	return func(exp string) ([]rundir.Served, error) {
		if exp == name && name != "" {
			return rows, nil
		}
		r, err := served(exp)
		if err != nil {
			return nil, err
		}
		name, rows = exp, r
		return r, nil
	}
}
