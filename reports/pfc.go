package reports

import "github.com/homatb/homatb/reports/stats"

// pfcRow is one switch port and priority's PFC over one experiment, as
// the report lists it.
type pfcRow struct {
	Experiment string
	stats.PFCPort
}

// pfcRows lists every experiment's PAUSE activity, in experiment order
// and then as the switches list their ports.
func pfcRows(s *stats.Summary) []pfcRow {
	var rows []pfcRow
	for i := range s.Experiments {
		e := &s.Experiments[i]
		for _, p := range e.Switch.PFC {
			rows = append(rows, pfcRow{Experiment: e.Name, PFCPort: p})
		}
	}
	return rows
}
