package controller

import (
	"fmt"
	"maps"
	"slices"
)

// Names of the tor.p4 objects the controller programs and reads (the P4
// object contract; ids come from the P4Info).
const (
	TableIPv4LPM     = "TorIngress.ipv4_lpm"
	TableDSCPToQueue = "TorIngress.dscp_to_queue"
	TableARPProxy    = "TorIngress.arp_proxy"
	TableECNConfig   = "TorEgress.ecn_config"

	ActionIPv4Forward     = "TorIngress.ipv4_forward"
	ActionSetQueue        = "TorIngress.set_queue"
	ActionARPReply        = "TorIngress.arp_reply"
	ActionSetECNThreshold = "TorEgress.set_ecn_threshold"

	FieldIPv4Dst    = "hdr.ipv4.dstAddr"
	FieldDSCP       = "hdr.ipv4.dscp"
	FieldARPTarget  = "hdr.arp.tpa"
	FieldEgressPort = "standard_metadata.egress_port"

	CounterIngressQueue = "TorIngress.ingress_queue_counter"
	CounterEgressQueue  = "TorEgress.egress_queue_counter"
	RegisterQueueDepth  = "TorEgress.queue_depth"
	RegisterQueuePeak   = "TorEgress.queue_peak"
	RegisterQueueDelay  = "TorEgress.queue_delay"
)

// QueueIndex is the counter and register index of (port, queue) in tor.p4.
func QueueIndex(port, queue int) int { return port*NumQueues + queue }

// SwitchEntries lists the table entries one switch gets from the topology
// and policy: an ipv4_lpm /32 route to every host (its own port for local
// hosts, the first port of a shortest path otherwise, rewriting the
// destination MAC to the host's), the DSCP-to-queue map, an ARP-proxy entry
// per host, and an ECN threshold on every port. The order is stable.
func (t *Topology) SwitchEntries(name string, p Policy) ([]Entry, error) {
	sw := t.Switch(name)
	if sw == nil {
		return nil, fmt.Errorf("switch %q is not in the topology", name)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	hops := t.nextHops(name)
	var out []Entry
	for _, h := range t.Hosts {
		port := h.Port
		if h.Switch != name {
			ports := hops[h.Switch]
			if len(ports) == 0 {
				return nil, fmt.Errorf("switch %q: no path to host %q on %q", name, h.Name, h.Switch)
			}
			// tor.p4 has no action selector, so of equal-cost paths the
			// lowest port carries the traffic.
			port = ports[0]
		}
		out = append(out, Entry{
			Table:  TableIPv4LPM,
			Match:  []Match{LPM(FieldIPv4Dst, IPv4(h.IP), 32)},
			Action: ActionIPv4Forward,
			Params: map[string]Value{"port": Uint(uint64(port)), "dst_mac": h.MAC.Value()},
		})
	}
	dscp := p.dscpQueues()
	for _, d := range slices.Sorted(maps.Keys(dscp)) {
		out = append(out, Entry{
			Table:  TableDSCPToQueue,
			Match:  []Match{Exact(FieldDSCP, Uint(uint64(d)))},
			Action: ActionSetQueue,
			Params: map[string]Value{"queue": Uint(uint64(dscp[d]))},
		})
	}
	if !p.NoARPProxy {
		for _, h := range t.Hosts {
			out = append(out, Entry{
				Table:  TableARPProxy,
				Match:  []Match{Exact(FieldARPTarget, IPv4(h.IP))},
				Action: ActionARPReply,
				Params: map[string]Value{"mac": h.MAC.Value()},
			})
		}
	}
	if p.ECNThresholdPkts > 0 {
		for _, port := range t.SwitchPorts(name) {
			out = append(out, Entry{
				Table:  TableECNConfig,
				Match:  []Match{Exact(FieldEgressPort, Uint(uint64(port)))},
				Action: ActionSetECNThreshold,
				Params: map[string]Value{"threshold_pkts": Uint(uint64(p.ECNThresholdPkts))},
			})
		}
	}
	return out, nil
}
