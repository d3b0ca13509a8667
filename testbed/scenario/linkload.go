package scenario

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/internal/hostset"
	"github.com/homatb/homatb/workloads"
)

// LinkLoad is the load a scenario's open-loop phases put on each host's
// links, as fractions of the link rate: requests and their responses
// (none for one-way messages), counted as the phase's load counts them.
// That is message bytes by default; for a phase with load_of: wire or
// one_way it is their DATA frames as the wire carries them, payload,
// headers and framing (WireBytes), as the Homa paper's simulator counts
// load. Control packets (grants, ACKs) are left out: they depend on the
// transport. Closed-loop phases adapt to what the network carries and
// are left out too.
type LinkLoad struct {
	Up, Down map[string]float64
}

// OfferedLinkLoad works out the LinkLoad of a validated scenario. Each
// client spreads its requests evenly over its servers (the agents pick one
// at random per RPC); a response is response_bytes long, or as long as its
// request when that is 0 (echo). A client of a bursty phase (incast) sends
// one RPC per burst interval.
func OfferedLinkLoad(s *Scenario) (LinkLoad, error) {
	ll := LinkLoad{Up: map[string]float64{}, Down: map[string]float64{}}
	for i := range s.Phases {
		if err := ll.addPhase(s, i, SizeStatsOf); err != nil {
			return ll, err
		}
	}
	return ll, nil
}

// WireBytes is the mean bytes a message of st takes on a link as the
// engine's DATA packets at the scenario's MTU: its payload, and for each
// packet the IPv4 and DATA headers and the link's framing.
func (s *Scenario) WireBytes(st SizeStats) float64 {
	return st.Mean + s.meanPackets(st)*float64(homaconf.DataHeaderLen+s.Fabric().Framing)
}

// meanPackets is the mean number of DATA packets of a message of st at
// the scenario's MTU.
func (s *Scenario) meanPackets(st SizeStats) float64 {
	mtu := s.Link.MTU
	if mtu == 0 {
		mtu = 1500
	}
	payload := mtu - homaconf.DataHeaderLen
	if st.Dist != nil {
		return workloads.MeanPackets(st.Dist, payload)
	}
	return max(1, math.Ceil(st.Mean/float64(payload)))
}

// Offered is what the open-loop phases of a validated scenario offer over
// its warm-up and measurement, every client together: RPCs, and the DATA
// packets of their requests and responses. A simulation's events grow
// with both (per message and per packet), so they rank experiments by how
// long they take to simulate; closed loops and collectives count nothing.
func (s *Scenario) Offered() (rpcs, packets float64, err error) {
	rpcs, packets, err = s.offeredPerSecond()
	secs := (s.Warmup.D() + s.Duration.D()).Seconds()
	return rpcs * secs, packets * secs, err
}

// offeredPerSecond is Offered for one second of the open-loop phases.
func (s *Scenario) offeredPerSecond() (rpcs, packets float64, err error) {
	for _, ph := range s.Phases {
		if ph.Arrivals != ArrivalsPoisson {
			continue
		}
		st, err := SizeStatsOf(ph.Sizes)
		if err != nil {
			return 0, 0, err
		}
		clients, err := hostset.Expand(ph.Clients, s.Topology.HostNames())
		if err != nil {
			return 0, 0, err
		}
		n := phaseRPS(s, ph, st) * float64(len(clients))
		per := s.meanPackets(st)
		switch {
		case ph.OneWay:
		case ph.ResponseBytes == 0:
			per *= 2 // echoed
		default:
			per += s.meanPackets(SizeStats{Mean: float64(ph.ResponseBytes)})
		}
		rpcs += n
		packets += n * per
	}
	return rpcs, packets, nil
}

// LoadBytes is what one message of st counts for in ph's load: its bytes,
// or with load_of: wire its WireBytes.
func (s *Scenario) LoadBytes(ph Phase, st SizeStats) float64 {
	if ph.LoadOf == LoadOfWire {
		return s.WireBytes(st)
	}
	return st.Mean
}

// phaseRPS is the RPCs per second each client of an open-loop phase
// issues, 0 for a phase no rate fixes (closed loops).
func phaseRPS(s *Scenario, ph Phase, st SizeStats) float64 {
	switch {
	case ph.Arrivals != ArrivalsPoisson:
		return 0
	case ph.Incast != nil && ph.Incast.Interval > 0:
		return float64(time.Second) / float64(ph.Incast.Interval)
	case ph.Load > 0:
		return s.Fabric().RateFor(ph.Load, s.LoadBytes(ph, st))
	}
	return ph.RateRPS
}

// addPhase adds phase i's load to ll, with statsOf describing a size spec.
func (ll LinkLoad) addPhase(s *Scenario, i int, statsOf func(string) (SizeStats, error)) error {
	d, err := demandOf(s, i, statsOf)
	if err != nil || d == nil {
		return err
	}
	rate := s.Fabric().BytesPerSecond()
	var total float64 // requests a second of every client to each server
	for j, c := range d.clients {
		if d.share[j] == 0 {
			continue
		}
		ll.Up[c] += d.rps * d.req / rate
		ll.Down[c] += d.rps * d.resp / rate
		total += d.share[j]
	}
	for _, t := range d.servers {
		others := total - d.shareOf(t) // no client sends to itself
		ll.Down[t] += others * d.req / rate
		ll.Up[t] += others * d.resp / rate
	}
	return nil
}

// demand is what an open-loop phase asks of the links: each client sends
// rps requests a second of req bytes, spread evenly over its servers other
// than itself (share a second to each), each answered with resp bytes,
// counted as the phase's load counts them.
type demand struct {
	clients, servers []string
	share            []float64 // by client; 0 for a client with no server but itself
	isClient         map[string]int
	rps, req, resp   float64
}

// shareOf is host h's requests a second to each of its servers, 0 when it
// is no client.
func (d *demand) shareOf(h string) float64 {
	if j, ok := d.isClient[h]; ok {
		return d.share[j]
	}
	return 0
}

// demandOf is phase i's demand, nil for a phase whose rate nothing fixes
// (closed loops, collectives, matrices); statsOf describes a size spec.
func demandOf(s *Scenario, i int, statsOf func(string) (SizeStats, error)) (*demand, error) {
	ph := s.Phases[i]
	if ph.Arrivals != ArrivalsPoisson {
		return nil, nil
	}
	st, err := statsOf(ph.Sizes)
	if err != nil {
		return nil, err
	}
	rps := phaseRPS(s, ph, st)
	if rps == 0 {
		return nil, nil
	}
	all := s.Topology.HostNames()
	d := &demand{rps: rps, isClient: map[string]int{}}
	if d.clients, err = hostset.Expand(ph.Clients, all); err != nil {
		return nil, err
	}
	if d.servers, err = hostset.Expand(ph.Servers, all); err != nil {
		return nil, err
	}
	// A phase that counts its load on the wire, or sends one-way messages
	// as the Homa paper's simulations do, is checked on the wire; other
	// phases count message bytes, as their load does.
	bytes := func(st SizeStats) float64 { return st.Mean }
	if ph.OneWay || ph.LoadOf == LoadOfWire {
		bytes = s.WireBytes
	}
	d.req = bytes(st)
	switch {
	case ph.OneWay:
	case ph.ResponseBytes == 0:
		d.resp = d.req // echoed
	default:
		d.resp = bytes(SizeStats{Mean: float64(ph.ResponseBytes)})
	}
	isServer := make(map[string]bool, len(d.servers))
	for _, t := range d.servers {
		isServer[t] = true
	}
	d.share = make([]float64, len(d.clients))
	for j, c := range d.clients {
		d.isClient[c] = j
		n := len(d.servers)
		if isServer[c] {
			n--
		}
		if n > 0 {
			d.share[j] = rps / float64(n)
		}
	}
	return d, nil
}

// OverloadWarnings names the links an experiment's open-loop phases load
// beyond their rate: no transport can carry that, so RPCs pile up and the
// run measures the backlog. Often the cause is echoed responses
// (response_bytes 0) doubling the load on every host that is client and
// server at once.
func OverloadWarnings(s *Scenario) []string {
	ll, err := OfferedLinkLoad(s)
	if err != nil {
		return nil // validation has reported it
	}
	var out []string
	for _, dir := range []struct {
		name string
		m    map[string]float64
	}{{"downlink", ll.Down}, {"uplink", ll.Up}} {
		var over []string
		worst := 0.0
		for h, v := range dir.m {
			if v > 1 {
				over = append(over, h)
				worst = max(worst, v)
			}
		}
		if len(over) == 0 {
			continue
		}
		sortHosts(over)
		out = append(out, fmt.Sprintf("the configured load puts %d host %ss (%s) at up to %.0f%% of the link rate, requests and responses together: beyond what any transport carries (responses echo the request when response_bytes is 0)",
			len(over), dir.name, hostList(over), 100*worst))
	}
	return out
}

// sortHosts puts host names in index order (h2 before h10).
func sortHosts(hosts []string) {
	slices.SortFunc(hosts, func(a, b string) int {
		i, _ := hostset.Index(a)
		j, _ := hostset.Index(b)
		return i - j
	})
}

// hostList names a few hosts, or the first and last of many.
func hostList(hosts []string) string {
	if len(hosts) <= 4 {
		return strings.Join(hosts, ", ")
	}
	return fmt.Sprintf("%s ... %s", hosts[0], hosts[len(hosts)-1])
}
