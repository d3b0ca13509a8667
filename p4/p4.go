// Package p4 holds the homatb top-of-rack program, tor.p4 (P4-16, v1model),
// and its P4Info, both embedded so the switch and the controller use the same
// bytes, plus the P4Runtime ids of every object in it.
package p4

import (
	_ "embed"
	"fmt"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
)

//go:embed tor.p4
var source []byte

//go:embed tor.p4info.txtpb
var p4infoText []byte

// P4Runtime ids of the tor.p4 objects (pinned with @id in the source).
const (
	TableIPv4LPM     uint32 = 0x02000001 // TorIngress.ipv4_lpm
	TableDSCPToQueue uint32 = 0x02000002 // TorIngress.dscp_to_queue
	TableARPProxy    uint32 = 0x02000003 // TorIngress.arp_proxy
	TableECNConfig   uint32 = 0x02000004 // TorEgress.ecn_config
	TablePortMode    uint32 = 0x02000005 // TorIngress.port_mode
	TableLoadBalance uint32 = 0x02000010 // TorIngress.load_balance (keyless)
	TableNexthop     uint32 = 0x02000011 // TorIngress.nexthop_group (indirect, uplink_selector)
	TableDefence     uint32 = 0x02000020 // TorIngress.ingress_defence
	TableSourceGuard uint32 = 0x02000021 // TorIngress.source_guard
	TableMeterSelect uint32 = 0x02000022 // TorIngress.meter_select

	ActionNoAction        uint32 = 0x01445b37 // NoAction (p4c's hash id)
	ActionDrop            uint32 = 0x01000001 // TorIngress.drop
	ActionIPv4Forward     uint32 = 0x01000002 // TorIngress.ipv4_forward(port, dst_mac)
	ActionSetQueue        uint32 = 0x01000003 // TorIngress.set_queue(queue)
	ActionARPReply        uint32 = 0x01000004 // TorIngress.arp_reply(mac)
	ActionSetECNThreshold uint32 = 0x01000005 // TorEgress.set_ecn_threshold(threshold_pkts)
	ActionStrictPriority  uint32 = 0x01000006 // TorIngress.strict_priority()
	ActionRankOrder       uint32 = 0x01000007 // TorIngress.rank_order(buffer_bytes)
	ActionTrimAbove       uint32 = 0x01000008 // TorIngress.trim_above(threshold_pkts)
	ActionECMPForward     uint32 = 0x01000010 // TorIngress.ecmp_forward(group, dst_mac)
	ActionSetEgress       uint32 = 0x01000011 // TorIngress.set_egress(port)
	ActionFlowHash        uint32 = 0x01000012 // TorIngress.flow_hash(seed)
	ActionSpray           uint32 = 0x01000013 // TorIngress.spray()
	ActionSetECNRED       uint32 = 0x01000030 // TorEgress.set_ecn_red(kmin_pkts, kmax_pkts, slope)
	ActionPortDefence     uint32 = 0x01000020 // TorIngress.port_defence(remark, dscp, guard)
	ActionSourceOK        uint32 = 0x01000021 // TorIngress.source_ok()
	ActionUseMeter        uint32 = 0x01000022 // TorIngress.use_meter(index, drop_red)

	ProfileUplinkSelector uint32 = 0x11000010 // TorIngress.uplink_selector (action selector)

	CounterIngressQueue uint32 = 0x12000001 // TorIngress.ingress_queue_counter
	CounterEgressQueue  uint32 = 0x12000002 // TorEgress.egress_queue_counter
	CounterRemark       uint32 = 0x12000020 // TorIngress.remark_counter (by ingress port)
	CounterMeter        uint32 = 0x12000021 // TorIngress.meter_counter (by ingress port)
	CounterSpoof        uint32 = 0x12000022 // TorIngress.spoof_counter (by ingress port)

	MeterPriority uint32 = 0x14000020 // TorIngress.priority_meter (bytes, MeterSlots)

	RegisterQueueDepth uint32 = 0x16000001 // TorEgress.queue_depth
	RegisterQueuePeak  uint32 = 0x16000002 // TorEgress.queue_peak
	RegisterQueueDelay uint32 = 0x16000003 // TorEgress.queue_delay
	RegisterSpraySeq   uint32 = 0x16000010 // TorIngress.spray_seq (size 1)
)

// ECNSlopeOne is set_ecn_red's slope for a marking probability of 1 per
// packet above Kmin: slopes are probabilities scaled by 2^16.
const ECNSlopeOne = 1 << 16

// ECNSlope is set_ecn_red's slope for a RED profile that marks with
// probability 0 at kminPkts rising linearly to pmax at kmaxPkts: pmax
// * 2^16 / (kmax - kmin), rounded down (tor.p4 has no division). kmaxPkts
// must be above kminPkts and pmax in [0, 1].
func ECNSlope(kminPkts, kmaxPkts uint32, pmax float64) uint32 {
	return uint32(pmax * ECNSlopeOne / float64(kmaxPkts-kminPkts))
}

// Shape of the per-(port, queue) counters and registers.
const (
	// QueuesPerPort is the number of strict-priority queues per egress port.
	QueuesPerPort = 8
	// MaxPort is the highest data port number; ports are 1..MaxPort.
	MaxPort = 63
	// QueueSlots is the size of every per-(port, queue) counter and register.
	QueueSlots = 512
	// PortSlots is the size of the per-ingress-port defence counters.
	PortSlots = 64
	// MeterSlots is priority_meter's size: MetersPerPort meters on each port.
	MeterSlots = 256
	// MetersPerPort is how many meters a port may have (index/PortSlots).
	MetersPerPort = MeterSlots / PortSlots
)

// QueueIndex is the counter and register index of (port, queue).
func QueueIndex(port uint16, queue uint8) uint32 {
	return uint32(port)*QueuesPerPort + uint32(queue)
}

// MeterIndex is priority_meter's index of meter m (0..MetersPerPort-1) on
// ingress port.
func MeterIndex(m int, port uint16) uint32 { return uint32(m)*PortSlots + uint32(port) }

// Source returns the P4-16 source of tor.p4.
func Source() []byte { return append([]byte(nil), source...) }

// P4InfoText returns tor.p4info.txtpb, the P4Info in protobuf text format.
func P4InfoText() []byte { return append([]byte(nil), p4infoText...) }

// P4Info parses the embedded P4Info. Each call returns a fresh message the
// caller may modify.
func P4Info() (*p4configv1.P4Info, error) {
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(p4infoText, info); err != nil {
		return nil, fmt.Errorf("parse embedded tor.p4info.txtpb: %w", err)
	}
	return info, nil
}
