package scenario

import "fmt"

// OrderWarnings says which transports of experiment e need a queue
// pair's packets in order on a fabric that sprays them. RoCE's responder
// takes packets in PSN order only: a packet that overtakes another on a
// different path is NAKed, and the requester goes back to it and sends
// everything after it again (go-back-N), so spraying turns reordering
// into retransmissions. It still delivers, so the run goes on; the
// warning says what it measures and how to keep a queue pair on one path.
func OrderWarnings(e *Experiment) []string {
	t := e.Scenario.Topology
	if t.LoadBalancing == LoadBalanceECMP || t.paths() < 2 {
		return nil
	}
	var out []string
	for _, tr := range e.AllTransports() {
		if tr.Name == TransportRoCE {
			out = append(out, fmt.Sprintf("%s: RoCE takes a queue pair's packets in order only, and load_balancing: spray (the default) sends them over %d paths: those that overtake others are NAKed and sent again with all after them (go-back-N); load_balancing: ecmp keeps a queue pair on one path", tr.Config(), t.paths()))
		}
	}
	return out
}

// paths is how many equal-cost paths join two hosts furthest apart.
func (t Topology) paths() int {
	switch t.Kind {
	case KindLeafSpine, KindRail:
		return t.Spines
	case KindFatTree:
		return (t.K / 2) * (t.K / 2)
	}
	return 1
}
