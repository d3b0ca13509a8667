package rundir

import (
	"fmt"
	"slices"

	"github.com/homatb/homatb/workloads"
)

// CheckMatrixOrder checks from the records of a connection matrix m's
// phase that no flow waiting on a trigger started before the trigger
// fired: its input_ns (when the trigger fired at its sender) must not be
// later than its intended time nor that than its send, and by input_ns the
// trigger must have had the activations the flow needs (one for oneshot,
// count for barrier, k for a multishot trigger's k-th flow), each dated
// from its flow's row: a send_done activation at the flow's answer
// (done_ns), a recv_done one no earlier than the flow's send (the
// receiver's arrival time is not in rpcs.csv). Rows of several
// experiments are checked each among its own. It returns how many
// triggered flows it checked, or the first violation.
func CheckMatrixOrder(rows []RPC, m *workloads.Matrix) (int, error) {
	type key struct {
		exp  string
		flow int64
	}
	byFlow := map[key]*RPC{}
	for i := range rows {
		if r := &rows[i]; r.Matrix != "" && r.Flow > 0 {
			byFlow[key{r.Experiment, r.Flow}] = r
		}
	}
	index := map[int64]int{}
	for i, f := range m.Flows {
		index[int64(f.ID)] = i
	}
	checked := 0
	for i := range rows {
		r := &rows[i]
		if r.Matrix == "" || r.Flow == 0 || r.Trigger == 0 || r.SentNs == 0 {
			continue
		}
		what := fmt.Sprintf("%s flow %d from %s", r.Matrix, r.Flow, r.Client)
		if r.SentNs < r.IntendedNs || r.IntendedNs < r.InputNs {
			return checked, fmt.Errorf("%s: sent at %d, intended %d, its trigger fired at %d: want fired <= intended <= sent", what, r.SentNs, r.IntendedNs, r.InputNs)
		}
		fi, ok := index[r.Flow]
		t := m.Triggers[int(r.Trigger)]
		if !ok || t == nil || m.Flows[fi].Trigger != t.ID {
			return checked, fmt.Errorf("%s: trigger %d is not the flow's in %s", what, r.Trigger, m.File)
		}
		need := t.Needed(slices.Index(t.Targets, fi))
		var times []int64
		for _, a := range m.Flows {
			ar := byFlow[key{r.Experiment, int64(a.ID)}]
			if ar == nil {
				continue
			}
			if a.SendDone == t.ID && ar.Status == StatusCompleted {
				times = append(times, ar.DoneNs)
			}
			if a.RecvDone == t.ID && ar.SentNs > 0 {
				times = append(times, ar.SentNs)
			}
		}
		slices.Sort(times)
		if len(times) < need || times[need-1] > r.InputNs {
			had := 0
			for _, at := range times {
				if at <= r.InputNs {
					had++
				}
			}
			return checked, fmt.Errorf("%s: its %s trigger %d fired at %d, when %d of the %d activations it needs could have happened", what, t.Kind, t.ID, r.InputNs, had, need)
		}
		checked++
	}
	return checked, nil
}
