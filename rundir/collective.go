package rundir

import (
	"fmt"

	"github.com/homatb/homatb/workloads"
)

// CheckCollectiveOrder checks from the records that no collective step
// started before its input arrived: a step k of iteration i sent by host h
// depends on every message of iteration i sent to h of the step
// workloads.CollectiveInputStep names for the phase's kind (kindOf, by
// phase name; k-1 for k > 0 but in a tree all-reduce); its input_ns (the
// last of them arriving at h, on h's clock) must lie between the last
// one's send and its answer, its intended time must not be earlier than
// that, and it must not have been sent before its intended time. Rows of
// several experiments are checked each among its own. It returns how many
// dependent steps it checked, or the first violation.
func CheckCollectiveOrder(rows []RPC, kindOf func(phase string) string) (int, error) {
	type key struct {
		exp, phase, to string
		iter, step     int64
	}
	inputs := map[key][]*RPC{}
	for i := range rows {
		r := &rows[i]
		if r.Collective != "" {
			k := key{r.Experiment, r.Collective, r.ServerHost, r.Iteration, r.Step}
			inputs[k] = append(inputs[k], r)
		}
	}
	checked := 0
	var cur *RPC // the row received asks about, made once rather than per row
	received := func(step int) bool {
		return len(inputs[key{cur.Experiment, cur.Collective, cur.Client, cur.Iteration, int64(step)}]) > 0
	}
	for i := range rows {
		r := &rows[i]
		if r.Collective == "" || r.SentNs == 0 {
			continue
		}
		what := fmt.Sprintf("%s iteration %d step %d from %s", r.Collective, r.Iteration, r.Step, r.Client)
		if r.SentNs < r.IntendedNs || r.IntendedNs < r.InputNs {
			return checked, fmt.Errorf("%s: sent at %d, intended %d, its input arrived at %d: want input <= intended <= sent", what, r.SentNs, r.IntendedNs, r.InputNs)
		}
		cur = r
		dep, ok := workloads.CollectiveInputStep(kindOf(r.Collective), int(r.Step), received)
		if !ok {
			continue
		}
		in := inputs[key{r.Experiment, r.Collective, r.Client, r.Iteration, int64(dep)}]
		if len(in) == 0 {
			return checked, fmt.Errorf("%s: no step %d message to %s", what, dep, r.Client)
		}
		var lastSent, lastDone int64
		for _, q := range in {
			if q.Status != StatusCompleted {
				return checked, fmt.Errorf("%s: sent though its input from %s is %s", what, q.Client, q.Status)
			}
			lastSent, lastDone = max(lastSent, q.SentNs), max(lastDone, q.DoneNs)
		}
		if r.InputNs < lastSent || r.InputNs > lastDone {
			return checked, fmt.Errorf("%s: its input arrived at %d, outside the last input's send %d .. answer %d", what, r.InputNs, lastSent, lastDone)
		}
		checked++
	}
	return checked, nil
}
