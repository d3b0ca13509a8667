package scenario

import "fmt"

// MarkingWarnings says which congestion controls of experiment e will
// run without the ECN marks they are built on. RoCE's DCQCN slows a
// sender only on the CNPs that CE marks bring, so without marking its
// senders stay at line rate (held back by PAUSE frames alone, where PFC
// is on); UET's NSCC cuts its window multiplicatively only on a CE mark,
// so its windows only grow, held back by quick adapt (a queueing delay
// beyond four targets) and losses alone. Both still deliver, so the run
// goes on; the warning says what it measures.
func MarkingWarnings(e *Experiment) []string {
	if e.Scenario.Switch.Marks() {
		return nil
	}
	const none = "and no switch marks (switch.ecn or switch.ecn_threshold_pkts)"
	var out []string
	for _, t := range e.AllTransports() {
		switch {
		case t.Name == TransportRoCE && !t.Homa.RoCENoDCQCN:
			out = append(out, fmt.Sprintf("%s: DCQCN slows a sender only on ECN marks, %s: its senders stay at line rate, as with roce_dcqcn: false", t.Config(), none))
		case t.Name == TransportUET && !t.Homa.UETNoNSCC:
			out = append(out, fmt.Sprintf("%s: NSCC cuts its window only on ECN marks, %s: its windows only grow, held back by quick adapt and losses", t.Config(), none))
		}
	}
	return out
}
