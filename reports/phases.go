package reports

import "github.com/homatb/homatb/runfmt"

// phasesOf lays out an experiment's warm-up, measurement and drain on the
// time axis of its series (seconds since the experiment started), from the
// manifest. Without a start time or a duration there is nothing to shade.
func phasesOf(me runfmt.Experiment) []band {
	if me.Started <= 0 || me.DurationMs <= 0 {
		return nil
	}
	warm := float64(me.WarmupMs) / 1e3
	measured := warm + float64(me.DurationMs)/1e3
	out := []band{{0, warm, "warm-up"}, {warm, measured, "measurement"}}
	if me.Ended > me.Started {
		if end := float64(me.Ended-me.Started) / 1e9; end > measured {
			out = append(out, band{measured, end, "drain"})
		}
	}
	return out
}
