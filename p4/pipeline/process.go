package pipeline

import (
	"encoding/binary"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/wire"
)

// Frame layout (offsets from the start of the Ethernet header).
const (
	ethLen       = 14
	etherTypeOff = 12
	etherIPv4    = 0x0800
	etherARP     = 0x0806

	arpLen     = 28
	arpOperOff = ethLen + 6
	arpShaOff  = ethLen + 8
	arpSpaOff  = ethLen + 14
	arpThaOff  = ethLen + 18
	arpTpaOff  = ethLen + 24
	arpRequest = 1
	arpReply   = 2

	ipv4Len      = 20
	ipTOSOff     = ethLen + 1
	ipTTLOff     = ethLen + 8
	ipProtoOff   = ethLen + 9
	ipCsumOff    = ethLen + 10
	ipSrcOff     = ethLen + 12
	ipDstOff     = ethLen + 16
	ipProtoTCP   = 6
	ipProtoUDP   = 17
	maxQdepthP4  = 1<<19 - 1 // enq_qdepth is bit<19> in v1model
	macLen       = 6
	ecnCE        = 3
	ecnMask      = 3
	queueMask    = 7
	portMask     = 1<<9 - 1
	dscpShift    = 2
	dscpMask     = 1<<6 - 1
	macWidthMask = 1<<48 - 1
)

// Ingress runs TorParser and TorIngress on frame, received on inPort, and
// rewrites it in place (MACs, TTL, checksum, ARP reply). It neither retains
// frame nor allocates. The meters read the pipeline's clock.
func (p *Pipeline) Ingress(frame []byte, inPort uint16, v *Verdict) {
	p.IngressAt(frame, inPort, -1, v)
}

// IngressAt is Ingress for a frame that arrived at now (ns on the
// pipeline's clock, v1model's ingress_global_timestamp), which the meters
// use: a caller that has the time of a batch saves a clock read per packet
// (tens of ns on a virtual machine). A negative now reads the clock.
func (p *Pipeline) IngressAt(frame []byte, inPort uint16, now int64, v *Verdict) {
	*v = Verdict{}
	snap := p.snap.Load()
	egressSpec, queue := uint16(DropPort), uint8(0)
	if len(frame) >= ethLen {
		switch binary.BigEndian.Uint16(frame[etherTypeOff:]) {
		case etherARP:
			if len(frame) >= ethLen+arpLen && binary.BigEndian.Uint16(frame[arpOperOff:]) == arpRequest {
				key := Key{uint64(binary.BigEndian.Uint32(frame[arpTpaOff:]))}
				a, _ := snap.tables[tblARPProxy].Lookup(&key)
				egressSpec = runIngressAction(a, frame, inPort, egressSpec, &queue)
			}
		case etherIPv4:
			var defence ActionCall // ingress_defence's action; zero: none
			if len(frame) >= ethLen+ipv4Len && snap.defences {
				defence = p.sourceGuard(snap, frame, inPort)
			}
			if len(frame) >= ethLen+ipv4Len && frame[ipTTLOff] > 1 && defence.ID != actionSpoofed {
				key := Key{uint64(binary.BigEndian.Uint32(frame[ipDstOff:]))}
				a, hit := snap.tables[tblIPv4LPM].Lookup(&key)
				egressSpec = runIngressAction(a, frame, inPort, egressSpec, &queue)
				if a.ID == p4.ActionECMPForward && a.Params[0] != 0 {
					egressSpec = p.selectUplink(snap, frame, a.Params[0], inPort, egressSpec)
				}
				if hit {
					if defence.ID == p4.ActionPortDefence && defence.Params[0] != 0 {
						p.remark(frame, inPort, uint8(defence.Params[1]))
					}
					key = Key{uint64(frame[ipTOSOff] >> dscpShift)}
					a, _ = snap.tables[tblDSCPToQueue].Lookup(&key)
					egressSpec = runIngressAction(a, frame, inPort, egressSpec, &queue)
					if snap.defences {
						egressSpec = p.meter(snap, frame, inPort, now, egressSpec, &queue)
					}
					if snap.modes {
						key = Key{uint64(egressSpec & portMask)}
						a, _ = snap.tables[tblPortMode].Lookup(&key)
						if a.ID != p4.ActionStrictPriority {
							portMode(a, frame, &queue, v)
						}
					}
				}
				updateIPv4Checksum(frame)
			}
		}
	}
	if egressSpec == DropPort {
		*v = Verdict{Drop: true}
		return
	}
	if idx := p4.QueueIndex(egressSpec, queue); idx < p4.QueueSlots {
		c := &p.ingressCtr[idx]
		c.pkts.Add(1)
		c.bytes.Add(uint64(len(frame)))
	}
	v.EgressPort, v.Queue = egressSpec, queue
}

// actionSpoofed is what sourceGuard returns for a packet source_guard
// drops: an id no tor.p4 action has (prefix 0).
const actionSpoofed = 1

// sourceGuard runs ingress_defence and, when the port's action turns the
// check on, source_guard: a packet whose (port, source) has no entry is
// counted in spoof_counter and reported as actionSpoofed.
func (p *Pipeline) sourceGuard(snap *snapshot, frame []byte, inPort uint16) ActionCall {
	key := Key{uint64(inPort & portMask)}
	a, _ := snap.tables[tblDefence].Lookup(&key)
	if a.ID != p4.ActionPortDefence || a.Params[2] == 0 {
		return a
	}
	key[1] = uint64(binary.BigEndian.Uint32(frame[ipSrcOff:]))
	if _, ok := snap.tables[tblSourceGuard].Lookup(&key); ok {
		return a
	}
	if inPort < p4.PortSlots {
		p.spoofCtr[inPort].add(len(frame))
	}
	return ActionCall{ID: actionSpoofed}
}

// remark sets an untrusted port's packet's DSCP (the checksum is updated
// with the TTL's), counting the packets it changes.
func (p *Pipeline) remark(frame []byte, inPort uint16, dscp uint8) {
	tos := frame[ipTOSOff]
	if tos>>dscpShift == dscp&dscpMask {
		return
	}
	frame[ipTOSOff] = dscp<<dscpShift | tos&ecnMask
	if inPort < p4.PortSlots {
		p.remarkCtr[inPort].add(len(frame))
	}
}

// meter runs meter_select on (inPort, queue) and priority_meter on what
// it selects: a red packet is counted and dropped, or re-marked to queue 0
// and DSCP 0, as the entry's drop_red says. It returns the egress_spec.
func (p *Pipeline) meter(snap *snapshot, frame []byte, inPort uint16, now int64, egressSpec uint16, queue *uint8) uint16 {
	key := Key{uint64(inPort & portMask), uint64(*queue)}
	a, ok := snap.tables[tblMeterSelect].Lookup(&key)
	if !ok || a.ID != p4.ActionUseMeter || a.Params[0] >= p4.MeterSlots {
		return egressSpec
	}
	if now < 0 {
		now = p.clock()
	}
	if p.meters[a.Params[0]].execute(now, len(frame)) != ColorRed {
		return egressSpec
	}
	if inPort < p4.PortSlots {
		p.meterCtr[inPort].add(len(frame))
	}
	if a.Params[1] != 0 {
		return DropPort
	}
	*queue = 0
	frame[ipTOSOff] &= ecnMask
	return egressSpec
}

// runIngressAction executes one TorIngress action and returns the new
// egress_spec.
func runIngressAction(a ActionCall, frame []byte, inPort, egressSpec uint16, queue *uint8) uint16 {
	switch a.ID {
	case p4.ActionDrop:
		return DropPort
	case p4.ActionIPv4Forward:
		putMAC(frame[0:], a.Params[1])
		frame[ipTTLOff]--
		return uint16(a.Params[0] & portMask)
	case p4.ActionECMPForward:
		putMAC(frame[0:], a.Params[1])
		frame[ipTTLOff]--
		return DropPort // until nexthop_group picks a member
	case p4.ActionSetEgress:
		return uint16(a.Params[0] & portMask)
	case p4.ActionSetQueue:
		*queue = uint8(a.Params[0] & queueMask)
	case p4.ActionARPReply:
		mac := a.Params[0]
		copy(frame[0:macLen], frame[macLen:2*macLen]) // dst = requester
		putMAC(frame[macLen:], mac)
		binary.BigEndian.PutUint16(frame[arpOperOff:], arpReply)
		var spa [4]byte
		copy(spa[:], frame[arpSpaOff:arpSpaOff+4])
		copy(frame[arpThaOff:arpThaOff+macLen], frame[arpShaOff:arpShaOff+macLen])
		putMAC(frame[arpShaOff:], mac)
		copy(frame[arpSpaOff:arpSpaOff+4], frame[arpTpaOff:arpTpaOff+4])
		copy(frame[arpTpaOff:arpTpaOff+4], spa[:])
		return inPort
	}
	return egressSpec
}

// selectUplink runs load_balance and nexthop_group for group: a member
// entry's action directly, a group's member chosen by the flow hash.
func (p *Pipeline) selectUplink(snap *snapshot, frame []byte, group uint64, inPort, egressSpec uint16) uint16 {
	var nonce uint32
	if snap.spray {
		nonce = p.spraySeq[0].Add(1) - 1 // spray_seq.read, then write + 1
	} else if snap.seed != 0 {
		nonce = seedNonce(frame, snap.seed)
	}
	key := Key{group}
	a, _ := snap.tables[tblNexthop].Lookup(&key)
	if a.ID == ActionSelect {
		members := snap.groups[a.Params[0]]
		if len(members) == 0 {
			return egressSpec
		}
		a = members[int(FlowHash(frame, nonce))%len(members)]
	}
	var queue uint8
	return runIngressAction(a, frame, inPort, egressSpec, &queue)
}

// seedNonce is flow_hash(seed)'s lb_nonce: meta.l4_ports, srcAddr and
// dstAddr XORed, times seed (bit<32> arithmetic).
func seedNonce(frame []byte, seed uint32) uint32 {
	return (l4Ports(frame) ^ binary.BigEndian.Uint32(frame[ipSrcOff:]) ^ binary.BigEndian.Uint32(frame[ipSrcOff+4:])) * seed
}

// l4Ports is meta.l4_ports of an IPv4 frame: the TCP, UDP or Homa source
// and destination ports, 0 for other protocols or with IPv4 options.
func l4Ports(frame []byte) uint32 {
	if frame[ethLen]&0x0f != ipv4Len/4 {
		return 0
	}
	switch frame[ipProtoOff] {
	case wire.IPProto:
		if len(frame) >= dataplane.HomaOffset+dataplane.HomaCommonLen {
			return binary.BigEndian.Uint32(frame[ethLen+ipv4Len:])
		}
	case ipProtoTCP, ipProtoUDP:
		if len(frame) >= ethLen+ipv4Len+4 {
			return binary.BigEndian.Uint32(frame[ethLen+ipv4Len:])
		}
	}
	return 0
}

// FlowHash is uplink_selector's hash of frame (IPv4): CRC-32 (IEEE) over
// the selector fields in tor.p4's key order, big-endian: the nonce
// (meta.lb_nonce), meta.l4_ports (TCP, UDP or Homa source and destination
// port; 0 for other protocols or with IPv4 options), srcAddr, dstAddr and
// protocol, cut to the selector's 16-bit output.
func FlowHash(frame []byte, nonce uint32) uint16 {
	var in [17]byte
	binary.BigEndian.PutUint32(in[0:], nonce)
	binary.BigEndian.PutUint32(in[4:], l4Ports(frame))
	copy(in[8:16], frame[ipSrcOff:ipSrcOff+8]) // srcAddr, dstAddr
	in[16] = frame[ipProtoOff]
	crc := ^uint32(0)
	for _, b := range in {
		crc = crc>>8 ^ crc32Table[byte(crc)^b]
	}
	return uint16(^crc)
}

// crc32Table is CRC-32/IEEE's byte table (reflected polynomial
// 0xedb88320), read-only after init. hash/crc32 would move the hash
// input to the heap on every packet.
var crc32Table = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0xedb88320
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

// portMode runs a rank_order or trim_above action of port_mode on frame
// and the tor.p4 lines after it, filling v's mode fields and changing the
// queue as they do. Frames are Homa when they are IPv4 protocol wire.IPProto
// without options and hold a whole common header (TorParser's parse_homa),
// UET when they are UDP to wire.UETPort without IPv4 options and hold a
// PDS prologue (parse_uet).
func portMode(a ActionCall, frame []byte, queue *uint8, v *Verdict) {
	options := frame[ethLen]&0x0f != ipv4Len/4
	homa := !options && frame[ipProtoOff] == wire.IPProto &&
		len(frame) >= dataplane.HomaOffset+dataplane.HomaCommonLen
	switch a.ID {
	case p4.ActionRankOrder:
		v.Mode, v.ModeArg = dataplane.ModeRankOrder, uint32(a.Params[0])
		*queue = 0
		v.Rank = dataplane.RankMax
		if homa {
			v.Rank = binary.BigEndian.Uint32(frame[dataplane.HomaRankOffset:])
		}
	case p4.ActionTrimAbove:
		v.Mode, v.ModeArg = dataplane.ModeTrimAbove, uint32(a.Params[0])
		switch {
		case !homa:
		case frame[dataplane.HomaFlagsOffset]&dataplane.HomaFlagTrimmed != 0:
			*queue = dataplane.TrimQueue // trimmed upstream: keep it ahead
		case frame[dataplane.HomaTypeOffset] == dataplane.HomaTypeData && len(frame) > dataplane.TrimmedFrameLen:
			// tor.p4 trims in egress; this target's traffic manager
			// trims at enqueue, where it sees the queue.
			v.Trim = dataplane.TrimHomaData
		}
		if !options && frame[ipProtoOff] == ipProtoUDP && len(frame) > dataplane.UETTrimmedFrameLen &&
			binary.BigEndian.Uint16(frame[dataplane.UDPOffset+2:]) == wire.UETPort && uetData(frame[dataplane.UETOffset]>>3) {
			v.Trim = dataplane.TrimUETData
		}
	}
}

// uetData reports whether a PDS type is a data packet's: a RUD or ROD
// request, with or without CC state (tor.p4's UET_DATA types). A trimmed
// one is not longer than its trimmed length, so it is not trimmed again;
// its DSCP keeps it in the top queue.
func uetData(t uint8) bool {
	switch wire.UETType(t) {
	case wire.UETRUDReq, wire.UETRODReq, wire.UETRUDCCReq, wire.UETRODCCReq:
		return true
	}
	return false
}

// Egress runs TorEgress on a frame leaving the traffic manager: the egress
// counter, the depth, peak and delay registers, and ECN marking. It may
// rewrite frame in place; tor.p4's egress never drops, so it returns true.
func (p *Pipeline) Egress(frame []byte, md *EgressMeta) bool {
	idx := p4.QueueIndex(md.EgressPort, md.Queue&queueMask)
	if idx < p4.QueueSlots {
		c := &p.egressCtr[idx]
		c.pkts.Add(1)
		c.bytes.Add(uint64(md.Length))
		depth := min(md.EnqDepthPkts, maxQdepthP4)
		p.depth[idx].Store(depth)
		for peak := &p.peak[idx]; ; {
			old := peak.Load()
			if depth <= old || peak.CompareAndSwap(old, depth) {
				break
			}
		}
		p.delay[idx].Store(md.DeqTimedeltaUs)
	}
	if len(frame) < ethLen+ipv4Len || binary.BigEndian.Uint16(frame[etherTypeOff:]) != etherIPv4 {
		return true
	}
	key := Key{uint64(md.EgressPort & portMask)}
	a, _ := p.snap.Load().tables[tblECNConfig].Lookup(&key)
	tos := frame[ipTOSOff]
	if tos&ecnMask != 0 && (a.ID == p4.ActionSetECNThreshold || a.ID == p4.ActionSetECNRED) &&
		p.redMarks(a, min(md.EnqDepthPkts, maxQdepthP4)) && tos&ecnMask != ecnCE {
		frame[ipTOSOff] = tos | ecnCE
		updateIPv4Checksum(frame)
	}
	return true
}

// redMarks is tor.p4's marking decision for an ECN-capable frame that
// found depth packets in its queue, under ecn_config's action a:
// set_ecn_threshold(t) is set_ecn_red(t, t, 0).
func (p *Pipeline) redMarks(a ActionCall, depth uint32) bool {
	kmin, kmax, slope := a.Params[0], a.Params[0], uint64(0)
	if a.ID == p4.ActionSetECNRED {
		kmax, slope = a.Params[1], a.Params[2]
	}
	d := uint64(depth)
	if d < kmin {
		return false
	}
	var r uint64
	if d < kmax {
		r = uint64(p.random16()) + 1
	}
	return r <= uint64(uint32((d-kmin)*slope)) // bit<32> in tor.p4
}

func putMAC(b []byte, mac uint64) {
	mac &= macWidthMask
	b[0] = byte(mac >> 40)
	b[1] = byte(mac >> 32)
	b[2] = byte(mac >> 24)
	b[3] = byte(mac >> 16)
	b[4] = byte(mac >> 8)
	b[5] = byte(mac)
}

// updateIPv4Checksum recomputes the header checksum over the header length
// the IHL gives (20 bytes when it is too small or the frame too short), so
// headers with options stay valid too.
func updateIPv4Checksum(frame []byte) {
	hl := int(frame[ethLen]&0x0f) * 4
	if hl < ipv4Len || ethLen+hl > len(frame) {
		hl = ipv4Len
	}
	frame[ipCsumOff], frame[ipCsumOff+1] = 0, 0
	binary.BigEndian.PutUint16(frame[ipCsumOff:], Checksum(frame[ethLen:ethLen+hl]))
}

// Checksum is the Internet checksum (RFC 1071) of b.
func Checksum(b []byte) uint16 {
	var sum uint32
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
