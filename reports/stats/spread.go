package stats

import (
	"github.com/homatb/homatb/rundir"
)

// fabricSpread is what a collective's own messages put on the links above
// the hosts: each host's top-of-rack switch and pod, and what the links
// above one switch, or one pod, carry in units of a host's link.
type fabricSpread struct {
	edge, pod       map[string]int // by host name: a group's number
	edgeCap, podCap float64        // host links' worth
}

// newFabricSpread reads the manifest's fabric; nil when it does not say
// how many links leave a switch (a star, or a run written before it was
// recorded).
func newFabricSpread(f *rundir.FabricRecord) *fabricSpread {
	if f == nil || f.EdgeUplinks == 0 || f.LinkBps == 0 {
		return nil
	}
	up, core := float64(f.Uplink()), float64(f.Core())
	sp := &fabricSpread{edge: map[string]int{}, edgeCap: float64(f.EdgeUplinks) * up / float64(f.LinkBps)}
	switches := map[string]int{}
	for _, h := range f.Hosts {
		g, ok := switches[h.Switch]
		if !ok {
			g = len(switches)
			switches[h.Switch] = g
		}
		sp.edge[h.Name] = g
	}
	if f.PodUplinks > 0 && len(f.SwitchPods) > 0 {
		sp.pod = map[string]int{}
		sp.podCap = float64(f.PodUplinks) * core / float64(f.LinkBps)
		for _, h := range f.Hosts {
			sp.pod[h.Name] = f.SwitchPods[h.Switch]
		}
	}
	return sp
}

// factor is how many times more one step's messages (equal in size, each
// from host From to host To) put on the busiest link above a switch or a
// pod, spread evenly over its links, than on the busiest host link: at
// least 1 (the host links bound the step), and 1 when sp is nil.
func (sp *fabricSpread) factor(msgs [][2]string) float64 {
	if sp == nil || len(msgs) == 0 {
		return 1
	}
	hostOut, hostIn := map[string]int{}, map[string]int{}
	busiestHost := 0
	for _, m := range msgs {
		hostOut[m[0]]++
		hostIn[m[1]]++
		busiestHost = max(busiestHost, hostOut[m[0]], hostIn[m[1]])
	}
	f := 1.0
	for _, tier := range []struct {
		of  map[string]int
		cap float64
	}{{sp.edge, sp.edgeCap}, {sp.pod, sp.podCap}} {
		if tier.of == nil || tier.cap <= 0 {
			continue
		}
		out, in := map[int]int{}, map[int]int{}
		busiest := 0
		for _, m := range msgs {
			a, okA := tier.of[m[0]]
			b, okB := tier.of[m[1]]
			if !okA || !okB || a == b {
				continue
			}
			out[a]++
			in[b]++
			busiest = max(busiest, out[a], in[b])
		}
		f = max(f, float64(busiest)/tier.cap/float64(busiestHost))
	}
	return f
}
