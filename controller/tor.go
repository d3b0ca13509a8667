package controller

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/homatb/homatb/controller/p4rtclient"
	"github.com/homatb/homatb/p4"
)

// Names of the tor.p4 objects the controller programs and reads (the P4
// object contract; ids come from the P4Info).
const (
	tableIPv4LPM     = "TorIngress.ipv4_lpm"
	tableDSCPToQueue = "TorIngress.dscp_to_queue"
	tableARPProxy    = "TorIngress.arp_proxy"
	tableECNConfig   = "TorEgress.ecn_config"
	tablePortMode    = "TorIngress.port_mode"

	actionIPv4Forward     = "TorIngress.ipv4_forward"
	actionSetQueue        = "TorIngress.set_queue"
	actionARPReply        = "TorIngress.arp_reply"
	actionSetECNThreshold = "TorEgress.set_ecn_threshold"
	actionSetECNRED       = "TorEgress.set_ecn_red"
	actionStrictPriority  = "TorIngress.strict_priority"
	actionRankOrder       = "TorIngress.rank_order"
	actionTrimAbove       = "TorIngress.trim_above"

	fieldIPv4Dst    = "hdr.ipv4.dstAddr"
	fieldDSCP       = "hdr.ipv4.dscp"
	fieldARPTarget  = "hdr.arp.tpa"
	fieldEgressPort = "standard_metadata.egress_port"
	fieldEgressSpec = "standard_metadata.egress_spec"

	counterIngressQueue = "TorIngress.ingress_queue_counter"
	counterEgressQueue  = "TorEgress.egress_queue_counter"
	registerQueueDepth  = "TorEgress.queue_depth"
	registerQueuePeak   = "TorEgress.queue_peak"
	registerQueueDelay  = "TorEgress.queue_delay"
)

// switchEntries lists the table entries one switch gets from the topology
// and policy: an ipv4_lpm /32 route to every host rewriting the
// destination MAC to the host's (its own port for local hosts, the one
// port of the shortest path to a host on another switch, or, when several
// ports tie, ecmp_forward to that switch's next-hop group, whose
// nexthop_group entry is listed too; see switchMultipath), the DSCP-to-queue map, an ARP-proxy entry
// per host, an ECN threshold on every port, the policy's port modes and
// its defences on host ports.
// The order is stable.
func (t *Topology) switchEntries(name string, p Policy) ([]p4rtclient.Entry, error) {
	sw := t.findSwitch(name)
	if sw == nil {
		return nil, fmt.Errorf("switch %q is not in the topology", name)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	hops := t.nextHops(name)
	mp := t.switchMultipath(name, nil)
	shared := t.sharedPrefixes()
	routed := map[netip.Prefix]bool{}
	var out []p4rtclient.Entry
	for _, h := range t.Hosts {
		port := h.Port
		dst, bits, mac := h.IP, 32, h.MAC
		if h.Switch != name {
			ports := hops[h.Switch]
			if len(ports) == 0 {
				return nil, fmt.Errorf("switch %q: no path to host %q on %q", name, h.Name, h.Switch)
			}
			if pfx, ok := t.routePrefix(h.IP); ok && !shared[pfx] {
				if routed[pfx] {
					continue
				}
				// The destination switch rewrites the MAC to the host's
				// (its own /32); on the way there it names that switch.
				routed[pfx] = true
				dst, bits, mac = pfx.Addr(), pfx.Bits(), switchMAC(t.findSwitch(h.Switch).DeviceID)
			}
			if g, ok := mp.groupOf[h.Switch]; ok {
				out = append(out, p4rtclient.Entry{
					Table:  tableIPv4LPM,
					Match:  []p4rtclient.Match{p4rtclient.LPM(fieldIPv4Dst, p4rtclient.IPv4(dst), bits)},
					Action: actionECMPForward,
					Params: map[string]p4rtclient.Value{"group": p4rtclient.Uint(uint64(g)), "dst_mac": mac.value()},
				})
				continue
			}
			port = ports[0]
		}
		out = append(out, p4rtclient.Entry{
			Table:  tableIPv4LPM,
			Match:  []p4rtclient.Match{p4rtclient.LPM(fieldIPv4Dst, p4rtclient.IPv4(dst), bits)},
			Action: actionIPv4Forward,
			Params: map[string]p4rtclient.Value{"port": p4rtclient.Uint(uint64(port)), "dst_mac": mac.value()},
		})
	}
	dscp := p.dscpQueues()
	for _, d := range slices.Sorted(maps.Keys(dscp)) {
		out = append(out, p4rtclient.Entry{
			Table:  tableDSCPToQueue,
			Match:  []p4rtclient.Match{p4rtclient.Exact(fieldDSCP, p4rtclient.Uint(uint64(d)))},
			Action: actionSetQueue,
			Params: map[string]p4rtclient.Value{"queue": p4rtclient.Uint(uint64(dscp[d]))},
		})
	}
	if !p.NoARPProxy {
		for _, h := range t.Hosts {
			out = append(out, p4rtclient.Entry{
				Table:  tableARPProxy,
				Match:  []p4rtclient.Match{p4rtclient.Exact(fieldARPTarget, p4rtclient.IPv4(h.IP))},
				Action: actionARPReply,
				Params: map[string]p4rtclient.Value{"mac": h.MAC.value()},
			})
		}
	}
	if action, params := p.ecnAction(); action != "" {
		for _, port := range t.switchPorts(name) {
			out = append(out, p4rtclient.Entry{
				Table:  tableECNConfig,
				Match:  []p4rtclient.Match{p4rtclient.Exact(fieldEgressPort, p4rtclient.Uint(uint64(port)))},
				Action: action,
				Params: params,
			})
		}
	}
	modes, err := t.portModeEntries(name, sw.Target, p.PortModes)
	if err != nil {
		return nil, err
	}
	defences, err := t.defenceEntries(name, p.Defences)
	if err != nil {
		return nil, err
	}
	return append(append(append(out, mp.entries...), modes...), defences...), nil
}

// routePrefix is the RoutePrefix-long prefix holding ip; false when the
// topology routes by host.
func (t *Topology) routePrefix(ip netip.Addr) (netip.Prefix, bool) {
	if t.RoutePrefix == 0 {
		return netip.Prefix{}, false
	}
	p, err := ip.Prefix(t.RoutePrefix)
	return p, err == nil
}

// sharedPrefixes are the RoutePrefix-long prefixes that hold hosts of
// more than one switch: those hosts keep their own /32 routes.
func (t *Topology) sharedPrefixes() map[netip.Prefix]bool {
	shared := map[netip.Prefix]bool{}
	if t.RoutePrefix == 0 {
		return shared
	}
	owner := map[netip.Prefix]string{}
	for _, h := range t.Hosts {
		p, _ := t.routePrefix(h.IP)
		if o, seen := owner[p]; seen && o != h.Switch {
			shared[p] = true
		}
		owner[p] = h.Switch
	}
	return shared
}

// switchMAC is the locally administered MAC a route toward a switch's
// prefix writes: 02:fe and the switch's device id.
func switchMAC(deviceID uint64) MAC {
	return MAC{0x02, 0xfe, byte(deviceID >> 24), byte(deviceID >> 16), byte(deviceID >> 8), byte(deviceID)}
}

// ecnAction is ecn_config's action for every switch port: a RED profile,
// a step threshold, or none ("").
func (p Policy) ecnAction() (string, map[string]p4rtclient.Value) {
	if r := p.ECNRED; r.KmaxPkts != 0 {
		return actionSetECNRED, map[string]p4rtclient.Value{
			"kmin_pkts": p4rtclient.Uint(uint64(r.KminPkts)),
			"kmax_pkts": p4rtclient.Uint(uint64(r.KmaxPkts)),
			"slope":     p4rtclient.Uint(uint64(p4.ECNSlope(r.KminPkts, r.KmaxPkts, r.Pmax))),
		}
	}
	if p.ECNThresholdPkts > 0 {
		return actionSetECNThreshold, map[string]p4rtclient.Value{"threshold_pkts": p4rtclient.Uint(uint64(p.ECNThresholdPkts))}
	}
	return "", nil
}
