package scenario

import "fmt"

// Oversubscribed is a tier of a multi-tier topology whose switches can
// take more from below than they can send up: Down links of DownRate
// toward the hosts against Up links of UpRate toward the next tier.
type Oversubscribed struct {
	Tier     string // "leaf", "edge", "aggregation"
	Down, Up int
	DownRate Rate
	UpRate   Rate
}

// RatioText is Ratio for people: "2", "1.25", "20000".
func (o Oversubscribed) RatioText() string {
	if r := o.Ratio(); r >= 100 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.3g", o.Ratio())
}

// Ratio is how many times the tier's capacity from below exceeds its
// capacity up.
func (o Oversubscribed) Ratio() float64 {
	return float64(o.Down) * float64(o.DownRate) / (float64(o.Up) * float64(o.UpRate))
}

// Oversubscription lists the tiers of t, with links of rate link between
// hosts and switches, that are oversubscribed (none for a star, or when
// every tier can send up all it takes from below).
func (t Topology) Oversubscription(link Rate) []Oversubscribed {
	up := cmpRate(t.UplinkRate, link)
	var tiers []Oversubscribed
	switch t.Kind {
	case KindLeafSpine:
		tiers = []Oversubscribed{{"leaf", t.HostsPerLeaf, t.edgeUplinks(), link, up}}
	case KindRail:
		tiers = []Oversubscribed{{"leaf", t.Servers, t.edgeUplinks(), link, up}}
	case KindFatTree:
		tiers = []Oversubscribed{{"edge", t.edgeHosts(), t.edgeUplinks(), link, up}, {"aggregation", t.K / 2, t.K / 2, up, cmpRate(t.CoreRate, up)}}
	}
	var out []Oversubscribed
	for _, o := range tiers {
		if o.Up > 0 && o.UpRate > 0 && o.Ratio() > 1 {
			out = append(out, o)
		}
	}
	return out
}

// edgeUplinks is how many links join each top-of-rack switch to the tier
// above (a leaf's spines, a fat tree edge's aggregation switches), and
// podUplinks how many join each fat tree pod to the cores; 0 where there
// are none.
func (t Topology) edgeUplinks() int {
	switch t.Kind {
	case KindLeafSpine, KindRail:
		return t.Spines
	case KindFatTree:
		return t.K / 2
	}
	return 0
}

func (t Topology) podUplinks() int {
	if t.Kind == KindFatTree {
		return (t.K / 2) * (t.K / 2)
	}
	return 0
}

// cmpRate is r, or def when r is unset.
func cmpRate(r, def Rate) Rate {
	if r == 0 {
		return def
	}
	return r
}

// tierGroups says, for an oversubscribed tier o of t, which group of
// hosts each host is in (the switch it hangs off, or its pod for a fat
// tree's aggregation tier), the groups' names and how many bytes a second
// the links above one group carry each way.
func (t Topology) tierGroups(o Oversubscribed) (group map[string]int, names []string, capacity float64) {
	capacity = float64(o.Up) * float64(o.UpRate) / 8
	l, err := t.Clos()
	if err != nil {
		return nil, nil, 0
	}
	var name func(i int) string // of the group of host i (from 0)
	switch {
	case t.Kind == KindLeafSpine:
		name = func(i int) string { return fmt.Sprintf("l%d", i/t.HostsPerLeaf+1) }
	case o.Tier == "aggregation":
		// A pod's k/2 aggregation switches share its traffic to the cores.
		name = func(i int) string { return fmt.Sprintf("pod %d", i/l.HostsPerPod+1) }
		capacity *= float64(t.K / 2)
	case l != nil:
		name = func(i int) string { return l.Hosts[i].Switch }
	default:
		return nil, nil, 0
	}
	group = map[string]int{}
	index := map[string]int{}
	for i, h := range t.HostNames() {
		n := name(i)
		g, ok := index[n]
		if !ok {
			g = len(names)
			index[n] = g
			names = append(names, n)
		}
		group[h] = g
	}
	return group, names, capacity
}

// fabricExcess is the busiest group of hosts of an oversubscribed tier
// whose uplinks the open-loop phases load beyond their rate: Load is that
// traffic as a fraction of what the links above the group carry (more
// than 1), Dir "out of" or "into" the group, and PerPhase each phase's
// share of it in the same unit.
type fabricExcess struct {
	Tier     Oversubscribed
	Group    string
	Dir      string
	Load     float64
	PerPhase []float64
}

func (x fabricExcess) String() string {
	return fmt.Sprintf("the links above %s at %.0f%% of what they carry %s it (%d x %s per %s switch, %s:1 oversubscribed; traffic between its hosts and the rest, requests and responses together)",
		x.Group, 100*x.Load, x.Dir, x.Tier.Up, x.Tier.UpRate, x.Tier.Tier, x.Tier.RatioText())
}

// fabricOverload finds, for each oversubscribed tier of s's topology, the
// group whose uplinks the open-loop phases load the most, when that is
// beyond their rate; statsOf describes a size spec.
func fabricOverload(s *Scenario, statsOf func(string) (SizeStats, error)) ([]fabricExcess, error) {
	var out []fabricExcess
	for _, o := range s.Topology.Oversubscription(s.Link.Rate) {
		group, names, capacity := s.Topology.tierGroups(o)
		if group == nil || capacity <= 0 {
			continue
		}
		// Bytes a second out of and into each group, by phase.
		up, down := make([][]float64, len(names)), make([][]float64, len(names))
		for g := range names {
			up[g], down[g] = make([]float64, len(s.Phases)), make([]float64, len(s.Phases))
		}
		for i := range s.Phases {
			d, err := demandOf(s, i, statsOf)
			if err != nil {
				return nil, err
			}
			if d == nil {
				continue
			}
			// A client's requests leave its group for the servers outside
			// it, and come into a group from the clients outside it to
			// the servers inside; responses go the other way.
			servers := make([]int, len(names)) // in each group
			for _, t := range d.servers {
				servers[group[t]]++
			}
			clientShare := make([]float64, len(names)) // in each group
			var total float64
			for j, c := range d.clients {
				g := group[c]
				out := d.share[j] * float64(len(d.servers)-servers[g])
				up[g][i] += out * d.req
				down[g][i] += out * d.resp
				clientShare[g] += d.share[j]
				total += d.share[j]
			}
			for g := range names {
				in := float64(servers[g]) * (total - clientShare[g])
				down[g][i] += in * d.req
				up[g][i] += in * d.resp
			}
		}
		worst := fabricExcess{Tier: o, Load: 1 + 1e-9}
		for g, n := range names {
			for _, d := range []struct {
				dir string
				by  []float64
			}{{"out of", up[g]}, {"into", down[g]}} {
				// Ties (to rounding) go to the first group and "out of".
				if v := sum(d.by) / capacity; v > worst.Load*(1+1e-9) {
					worst.Group, worst.Dir, worst.Load = n, d.dir, v
					worst.PerPhase = make([]float64, len(d.by))
					for i, b := range d.by {
						worst.PerPhase[i] = b / capacity
					}
				}
			}
		}
		if worst.Group != "" {
			out = append(out, worst)
		}
	}
	return out, nil
}

func sum(vs []float64) float64 {
	var t float64
	for _, v := range vs {
		t += v
	}
	return t
}

// FabricOverloadWarnings says which oversubscribed tiers (Oversubscription)
// the open-loop phases of s load beyond the rate of their uplinks, with
// the traffic between the hosts below them and the rest: no transport
// can carry it, so it piles up in the fabric's queues and the run
// measures the backlog. Validation refuses it unless allow_overload is set
// (checkOverload); then it is a warning.
func FabricOverloadWarnings(s *Scenario) []string {
	xs, err := fabricOverload(s, SizeStatsOf)
	if err != nil {
		return nil // validation has reported it
	}
	var out []string
	for _, x := range xs {
		out = append(out, "the configured load puts "+x.String()+": beyond what any transport carries across the fabric")
	}
	return out
}
