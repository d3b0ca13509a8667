/* tor.p4: the homatb top-of-rack switch (P4-16, v1model).
 *
 * Ingress parses Ethernet, ARP and IPv4, answers ARP requests for addresses
 * the controller registered (arp_proxy), forwards IPv4 by longest prefix
 * (ipv4_lpm: egress port, destination MAC, TTL - 1; drop on miss or on TTL
 * expiry) and picks one of eight strict-priority egress queues from the DSCP
 * (dscp_to_queue, default queue 0). Egress counts the packets that left each
 * (port, queue), records its depth, peak depth and queueing delay in
 * registers, and marks ECN CE by a per-port RED profile (ecn_config):
 * never below Kmin packets, with a probability rising linearly from 0 at
 * Kmin to Pmax at Kmax drawn with v1model's random(), always from Kmax
 * (set_ecn_red); a step threshold is the profile with Kmin = Kmax
 * (set_ecn_threshold).
 *
 * Switch modes (docs/transports.md): port_mode, keyed by egress port, picks
 * how the traffic manager queues what goes out of that port. The default,
 * strict_priority, is the eight strict-priority queues. rank_order(buffer)
 * is pFabric's: one queue served smallest rank first, the rank read from
 * the Homa common header (bytes 16..19), with buffer bytes and the
 * largest-rank frames dropped on overflow. trim_above(threshold) is NDP's
 * and UET's: a Homa DATA frame whose queue already holds threshold frames
 * is cut to its 90-byte header, flagged trimmed and sent in queue 7; a UET
 * data packet (UDP to port 4793, a RUD or ROD request) is cut to 64 bytes
 * of UDP payload (its PDS and SES headers), its UDP checksum zeroed and
 * its DSCP set to UET_TRIMMED_DSCP, the DSCP of queue 7 (UET 1.0 marks
 * trimmed packets by a DSCP of their own).
 *
 * What v1model cannot express: standard_metadata has no rank and BMv2's
 * queues are FIFOs, so rank_order only computes meta.rank here (BMv2 would
 * queue such frames in queue 0 by arrival; the controller refuses
 * rank_order on BMv2); the embedded target hands the same rank, mode and
 * argument to its traffic manager with the egress port and queue. v1model
 * knows the queue depth only in egress, after the frame waited in its
 * queue, so BMv2 trims there with truncate() but cannot move the trimmed
 * frame to queue 7; the embedded target decides at enqueue, as NDP's
 * switches do.
 *
 * Multipath (docs/controller.md): a route to a host behind another switch
 * is ecmp_forward(group, dst_mac), which names a next-hop group instead of
 * a port; nexthop_group, an indirect table whose implementation is the
 * action selector uplink_selector, then picks one member (set_egress(port))
 * of the group by hashing meta.lb_nonce and the flow: the TCP, UDP or Homa
 * ports, IPv4 source, destination and protocol. load_balance, a keyless
 * table whose default action the controller sets, chooses what lb_nonce
 * is: flow_hash(seed) sets it from the flow's ports and addresses times
 * the switch's hash seed, so every packet of a flow takes one path (ECMP),
 * and switches given different seeds choose independently of each other (on a fat tree, an aggregation
 * switch hashing as its edge switch did would reach only one core in k/2:
 * polarisation); spray() sets it from a per-switch packet counter
 * (spray_seq), so consecutive packets of a flow hash to different members
 * (packet spraying).
 *
 * Defences (docs/controller.md, "Defences"), per ingress port: ingress_defence
 * re-marks an untrusted port's DSCP before dscp_to_queue and turns on the
 * source check, which drops a packet whose (port, IPv4 source) source_guard
 * does not list; meter_select sends chosen (port, queue) pairs through
 * priority_meter (v1model's two-rate three-colour meter, bytes) and re-marks
 * (queue 0, DSCP 0) or drops what comes out red. remark_counter,
 * meter_counter and spoof_counter count per ingress port.
 *
 * Every P4Runtime object carries a full 32-bit @id so that p4c emits exactly
 * the ids of tor.p4info.txtpb, which the embedded target and the controller
 * both rely on. Counter and register index: egress_port * 8 + queue, ports
 * 1..63, so every index is below 512.
 *
 * Run on BMv2 with `-- --priority-queues 8`, otherwise every packet with a
 * non-zero priority is dropped.
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP = 0x0806;
const bit<16> ARP_OPER_REQUEST = 1;
const bit<16> ARP_OPER_REPLY = 2;
const bit<32> QUEUE_SLOTS = 512;

const bit<8>  IP_PROTO_HOMA = 146;
const bit<8>  IP_PROTO_TCP = 6;
const bit<8>  IP_PROTO_UDP = 17;
const bit<8>  HOMA_TYPE_DATA = 0x10;
const bit<8>  HOMA_FLAG_TRIMMED = 0x01;
/* A trimmed DATA frame: Ethernet 14 + IPv4 20 + DATA header 56 bytes. */
const bit<32> TRIMMED_FRAME_LEN = 90;
const bit<16> TRIMMED_IPV4_LEN = 76;
/* A trimmed UET frame: Ethernet 14 + IPv4 20 + UDP 8 + 64 bytes. */
const bit<16> UET_PORT = 4793;
const bit<32> UET_TRIMMED_FRAME_LEN = 106;
const bit<16> UET_TRIMMED_IPV4_LEN = 92;
const bit<16> UET_TRIMMED_UDP_LEN = 72;
const bit<6>  UET_TRIMMED_DSCP = 56;
/* PDS types of data packets: RUD, ROD, RUD_CC, ROD_CC requests. */
const bit<5>  UET_RUD_REQ = 2;
const bit<5>  UET_ROD_REQ = 3;
const bit<5>  UET_RUD_CC_REQ = 13;
const bit<5>  UET_ROD_CC_REQ = 14;
const bit<32> RANK_MAX = 0xffffffff;
const bit<3>  QUEUE_TRIMMED = 7;
const bit<32> PORT_SLOTS = 64;
const bit<32> METER_SLOTS = 256;
const bit<2>  METER_RED = 2;

/* Values of meta.mode, set by the port_mode actions. */
const bit<2> MODE_STRICT_PRIORITY = 0;
const bit<2> MODE_RANK_ORDER = 1;
const bit<2> MODE_TRIM_ABOVE = 2;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

/* ARP for IPv4 over Ethernet only (htype 1, ptype 0x0800, hlen 6, plen 4). */
header arp_t {
    bit<16> htype;
    bit<16> ptype;
    bit<8>  hlen;
    bit<8>  plen;
    bit<16> oper;
    bit<48> sha;
    bit<32> spa;
    bit<48> tha;
    bit<32> tpa;
}

/* The diffserv byte is split into DSCP (6 bits) and ECN (2 bits). */
header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

/* The Homa common header (28 bytes). flags and rank are bytes Linux leaves
 * unused; homatb's switch modes carry the trimmed flag and pFabric's rank
 * in them (the issue #20 contract). */
header homa_common_t {
    bit<16> sport;
    bit<16> dport;
    bit<32> sequence;
    bit<8>  flags;     /* byte 8: HOMA_FLAG_TRIMMED */
    bit<16> unused1;   /* bytes 9..10 */
    bit<8>  type;      /* byte 11 */
    bit<8>  doff;      /* byte 12 */
    bit<24> unused2;   /* bytes 13..15 */
    bit<32> rank;      /* bytes 16..19: remaining bytes of the message */
    bit<64> senderId;
}

header udp_t {
    bit<16> sport;
    bit<16> dport;
    bit<16> length;
    bit<16> checksum;
}

/* The UET PDS prologue: type, next header, flags. */
header uet_prologue_t {
    bit<5> type;
    bit<4> next_header;
    bit<7> flags;
}

struct headers_t {
    ethernet_t     ethernet;
    arp_t          arp;
    ipv4_t         ipv4;
    homa_common_t  homa;
    udp_t          udp;
    uet_prologue_t uet;
}

struct metadata_t {
    bit<16> nexthop_group; /* ecmp_forward's group, 0: none */
    bit<32> l4_ports;      /* TCP, UDP or Homa source and destination port */
    bit<32> lb_nonce;      /* load_balance: the seed (flow_hash) or spray_seq */
    bit<19> ecn_threshold; /* Kmin */
    bit<19> ecn_kmax;
    bit<32> ecn_slope;     /* P(mark) * 2^16 per packet above Kmin */
    bit<1>  ecn_enabled;
    bit<2>  mode;       /* MODE_*, from port_mode */
    bit<32> mode_arg;   /* rank_order: buffer bytes; trim_above: threshold */
    bit<32> rank;       /* rank_order: the frame's rank, RANK_MAX if not Homa */
    bit<1>  remark;     /* ingress_defence: untrusted port */
    bit<6>  remark_dscp;
    bit<1>  guard;      /* ingress_defence: check the source */
    bit<8>  meter_index;
    bit<1>  meter_drop; /* red: drop, else re-mark */
    bit<2>  color;
}

parser TorParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }
    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        /* Only option-less headers: the rank's offset is fixed. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, IP_PROTO_HOMA): parse_homa;
            (5, IP_PROTO_TCP): parse_l4_ports;
            (5, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_homa {
        packet.extract(hdr.homa);
        meta.l4_ports = hdr.homa.sport ++ hdr.homa.dport;
        transition accept;
    }
    /* The flow hash needs the ports only: no header is extracted. */
    state parse_l4_ports {
        meta.l4_ports = packet.lookahead<bit<32>>();
        transition accept;
    }
    /* UDP: the ports; UET's headers for trimming. */
    state parse_udp {
        meta.l4_ports = packet.lookahead<bit<32>>();
        transition select(meta.l4_ports[15:0]) {
            UET_PORT: parse_uet;
            default: accept;
        }
    }
    state parse_uet {
        packet.extract(hdr.udp);
        packet.extract(hdr.uet);
        transition accept;
    }
}

control TorVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control TorIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    /* Packets offered to the traffic manager per (egress port, queue). */
    @id(0x12000001)
    counter(QUEUE_SLOTS, CounterType.packets_and_bytes) ingress_queue_counter;

    @id(0x01000001)
    action drop() {
        mark_to_drop(standard_metadata);
    }

    @id(0x01000002)
    action ipv4_forward(@id(1) bit<9> port, @id(2) bit<48> dst_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dstAddr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    @id(0x01000003)
    action set_queue(@id(1) bit<3> queue) {
        standard_metadata.priority = queue;
    }

    /* Turns the request into a reply from mac, back out the ingress port. */
    @id(0x01000004)
    action arp_reply(@id(1) bit<48> mac) {
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = mac;
        hdr.arp.oper = ARP_OPER_REPLY;
        hdr.arp.tha = hdr.arp.sha;
        hdr.arp.sha = mac;
        bit<32> asked = hdr.arp.tpa;
        hdr.arp.tpa = hdr.arp.spa;
        hdr.arp.spa = asked;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    @id(0x01000006)
    action strict_priority() {
        meta.mode = MODE_STRICT_PRIORITY;
    }

    /* One rank-ordered queue: every frame shares the queue (priority 0). */
    @id(0x01000007)
    action rank_order(@id(1) bit<32> buffer_bytes) {
        meta.mode = MODE_RANK_ORDER;
        meta.mode_arg = buffer_bytes;
        standard_metadata.priority = 0;
    }

    @id(0x01000008)
    action trim_above(@id(1) bit<16> threshold_pkts) {
        meta.mode = MODE_TRIM_ABOVE;
        meta.mode_arg = (bit<32>)threshold_pkts;
    }

    /* Multipath: the packet is dropped unless nexthop_group picks a port. */
    @id(0x01000010)
    action ecmp_forward(@id(1) bit<16> group, @id(2) bit<48> dst_mac) {
        mark_to_drop(standard_metadata);
        meta.nexthop_group = group;
        hdr.ethernet.dstAddr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    /* A member of a next-hop group: one uplink. */
    @id(0x01000011)
    action set_egress(@id(1) bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    /* Packets sprayed so far; its value is the next packet's nonce. */
    @id(0x16000010)
    register<bit<32>>(1) spray_seq;

    @id(0x01000012)
    action flow_hash(@id(1) bit<32> seed) {
        /* The flow's fields times the seed, not the seed alone: the
         * selector's CRC is linear, so a constant in its input would flip
         * the same output bits of every flow and switches would still
         * choose alike. Seed 0 gives nonce 0, one hash everywhere. */
        meta.lb_nonce = (meta.l4_ports ^ hdr.ipv4.srcAddr ^ hdr.ipv4.dstAddr) * seed;
    }

    @id(0x01000013)
    action spray() {
        spray_seq.read(meta.lb_nonce, 0);
        spray_seq.write(0, meta.lb_nonce + 1);
    }

    @id(0x11000010)
    action_selector(HashAlgorithm.crc32, 32w1024, 32w16) uplink_selector;

    @id(0x02000010)
    table load_balance {
        actions = {
            flow_hash;
            spray;
        }
        default_action = flow_hash(0);
        size = 1;
    }

    /* No default_action: a miss (no entry for the group) runs no action
     * on either target, so ecmp_forward's drop stands. p4c gives the
     * table NoAction and warns that BMv2 cannot take a default action on
     * an action-profile table; BMv2 then runs an empty action on a miss. */
    @id(0x02000011)
    table nexthop_group {
        key = {
            meta.nexthop_group : exact @id(1);
            /* The fields that vary within a flow or between flows
             * first. CRC-32, not crc16: with CRC-16 (0x8005), hash % 4
             * of consecutive nonces or Homa ports took two values only. */
            meta.lb_nonce      : selector;
            meta.l4_ports      : selector;
            hdr.ipv4.srcAddr   : selector;
            hdr.ipv4.dstAddr   : selector;
            hdr.ipv4.protocol  : selector;
        }
        actions = {
            set_egress;
        }
        implementation = uplink_selector;
        size = 1024;
    }

    /* Defences, per ingress port. */
    @id(0x12000020)
    counter(PORT_SLOTS, CounterType.packets_and_bytes) remark_counter;
    @id(0x12000021)
    counter(PORT_SLOTS, CounterType.packets_and_bytes) meter_counter;
    @id(0x12000022)
    counter(PORT_SLOTS, CounterType.packets_and_bytes) spoof_counter;
    @id(0x14000020)
    meter(METER_SLOTS, MeterType.bytes) priority_meter;

    @id(0x01000020)
    action port_defence(@id(1) bit<1> remark, @id(2) bit<6> dscp, @id(3) bit<1> guard) {
        meta.remark = remark;
        meta.remark_dscp = dscp;
        meta.guard = guard;
    }

    @id(0x01000021)
    action source_ok() { }

    @id(0x01000022)
    action use_meter(@id(1) bit<8> index, @id(2) bit<1> drop_red) {
        meta.meter_index = index;
        meta.meter_drop = drop_red;
    }

    @id(0x02000020)
    table ingress_defence {
        key = {
            standard_metadata.ingress_port : exact @id(1);
        }
        actions = {
            port_defence;
            NoAction;
        }
        default_action = NoAction();
        size = 64;
    }

    @id(0x02000021)
    table source_guard {
        key = {
            standard_metadata.ingress_port : exact @id(1);
            hdr.ipv4.srcAddr : exact @id(2);
        }
        actions = {
            source_ok;
            NoAction;
        }
        default_action = NoAction();
        size = 1024;
    }

    @id(0x02000022)
    table meter_select {
        key = {
            standard_metadata.ingress_port : exact @id(1);
            standard_metadata.priority : exact @id(2);
        }
        actions = {
            use_meter;
            NoAction;
        }
        default_action = NoAction();
        size = 512;
    }

    @id(0x02000001)
    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr : lpm @id(1);
        }
        actions = {
            ipv4_forward;
            ecmp_forward;
            drop;
        }
        default_action = drop();
        size = 1024;
    }

    @id(0x02000002)
    table dscp_to_queue {
        key = {
            hdr.ipv4.dscp : exact @id(1);
        }
        actions = {
            set_queue;
        }
        default_action = set_queue(0);
        size = 64;
    }

    @id(0x02000003)
    table arp_proxy {
        key = {
            hdr.arp.tpa : exact @id(1);
        }
        actions = {
            arp_reply;
            drop;
        }
        default_action = drop();
        size = 1024;
    }

    @id(0x02000005)
    table port_mode {
        key = {
            standard_metadata.egress_spec : exact @id(1);
        }
        actions = {
            strict_priority;
            rank_order;
            trim_above;
        }
        default_action = strict_priority();
        size = 512;
    }

    apply {
        if (hdr.arp.isValid()) {
            if (hdr.arp.oper == ARP_OPER_REQUEST) {
                arp_proxy.apply();
            } else {
                drop();
            }
        } else if (hdr.ipv4.isValid()) {
            bit<32> in_port = (bit<32>)standard_metadata.ingress_port;
            bool spoofed = false;
            ingress_defence.apply();
            if (meta.guard == 1) {
                if (!source_guard.apply().hit) {
                    spoof_counter.count(in_port);
                    spoofed = true;
                }
            }
            if (spoofed || hdr.ipv4.ttl <= 1) {
                drop();
            } else if (ipv4_lpm.apply().hit) {
                if (meta.nexthop_group != 0) {
                    load_balance.apply();
                    nexthop_group.apply();
                }
                if (meta.remark == 1 && hdr.ipv4.dscp != meta.remark_dscp) {
                    hdr.ipv4.dscp = meta.remark_dscp;
                    remark_counter.count(in_port);
                }
                dscp_to_queue.apply();
                if (meter_select.apply().hit) {
                    priority_meter.execute_meter((bit<32>)meta.meter_index, meta.color);
                    if (meta.color == METER_RED) {
                        meter_counter.count(in_port);
                        if (meta.meter_drop == 1) {
                            drop();
                        } else {
                            standard_metadata.priority = 0;
                            hdr.ipv4.dscp = 0;
                        }
                    }
                }
                port_mode.apply();
                if (meta.mode == MODE_RANK_ORDER) {
                    /* v1model cannot hand meta.rank to BMv2's queues. */
                    meta.rank = RANK_MAX;
                    if (hdr.homa.isValid()) {
                        meta.rank = hdr.homa.rank;
                    }
                } else if (meta.mode == MODE_TRIM_ABOVE && hdr.homa.isValid() &&
                           (hdr.homa.flags & HOMA_FLAG_TRIMMED) != 0) {
                    /* A header trimmed upstream keeps its high priority. */
                    standard_metadata.priority = QUEUE_TRIMMED;
                }
            }
        } else {
            drop();
        }
        if (standard_metadata.egress_spec != 511) {
            ingress_queue_counter.count(
                (bit<32>)standard_metadata.egress_spec * 8 +
                (bit<32>)standard_metadata.priority);
        }
    }
}

control TorEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    /* Packets that left the queue per (egress port, queue). */
    @id(0x12000002)
    counter(QUEUE_SLOTS, CounterType.packets_and_bytes) egress_queue_counter;
    /* enq_qdepth of the last packet, in packets. */
    @id(0x16000001)
    register<bit<32>>(QUEUE_SLOTS) queue_depth;
    /* Largest enq_qdepth seen, in packets. */
    @id(0x16000002)
    register<bit<32>>(QUEUE_SLOTS) queue_peak;
    /* deq_timedelta of the last packet, in microseconds. */
    @id(0x16000003)
    register<bit<32>>(QUEUE_SLOTS) queue_delay;

    @id(0x01000005)
    action set_ecn_threshold(@id(1) bit<19> threshold_pkts) {
        meta.ecn_threshold = threshold_pkts;
        meta.ecn_kmax = threshold_pkts;
        meta.ecn_enabled = 1;
    }

    /* RED: slope = Pmax * 2^16 / (Kmax - Kmin), computed by the
     * controller (no division in the data plane). */
    @id(0x01000030)
    action set_ecn_red(@id(1) bit<19> kmin_pkts, @id(2) bit<19> kmax_pkts, @id(3) bit<32> slope) {
        meta.ecn_threshold = kmin_pkts;
        meta.ecn_kmax = kmax_pkts;
        meta.ecn_slope = slope;
        meta.ecn_enabled = 1;
    }

    @id(0x02000004)
    table ecn_config {
        key = {
            standard_metadata.egress_port : exact @id(1);
        }
        actions = {
            set_ecn_threshold;
            set_ecn_red;
            NoAction;
        }
        default_action = NoAction();
        size = 512;
    }

    apply {
        bit<32> idx = (bit<32>)standard_metadata.egress_port * 8 +
                      (bit<32>)standard_metadata.priority;
        egress_queue_counter.count(idx);

        bit<32> depth = (bit<32>)standard_metadata.enq_qdepth;
        queue_depth.write(idx, depth);
        bit<32> peak;
        queue_peak.read(peak, idx);
        if (depth > peak) {
            queue_peak.write(idx, depth);
        }
        queue_delay.write(idx, standard_metadata.deq_timedelta);

        if (hdr.ipv4.isValid()) {
            ecn_config.apply();
            /* ECT(0), ECT(1) or CE: the sender understands ECN. */
            if (meta.ecn_enabled == 1 && hdr.ipv4.ecn != 0 &&
                standard_metadata.enq_qdepth >= meta.ecn_threshold) {
                bit<32> r = 0;
                if (standard_metadata.enq_qdepth < meta.ecn_kmax) {
                    random(r, 0, 0xffff);
                    r = r + 1; /* 1..2^16: a zero slope never marks */
                }
                if (r <= (bit<32>)(standard_metadata.enq_qdepth -
                                   meta.ecn_threshold) * meta.ecn_slope) {
                    hdr.ipv4.ecn = 3;
                }
            }
        }

        /* BMv2's trimming: the frame already waited in its queue and stays
         * in it (see the header comment); the embedded target trims at
         * enqueue and sends the header in queue 7. */
        if (meta.mode == MODE_TRIM_ABOVE && hdr.homa.isValid() &&
            hdr.homa.type == HOMA_TYPE_DATA &&
            (hdr.homa.flags & HOMA_FLAG_TRIMMED) == 0 &&
            standard_metadata.packet_length > TRIMMED_FRAME_LEN &&
            (bit<32>)standard_metadata.enq_qdepth >= meta.mode_arg) {
            truncate(TRIMMED_FRAME_LEN);
            hdr.ipv4.totalLen = TRIMMED_IPV4_LEN;
            hdr.homa.flags = hdr.homa.flags | HOMA_FLAG_TRIMMED;
        }
        /* UET: a trimmed packet is no longer than its trimmed length, so
         * it is not trimmed again; its DSCP keeps it in queue 7 at the
         * next switch. */
        if (meta.mode == MODE_TRIM_ABOVE && hdr.uet.isValid() &&
            (hdr.uet.type == UET_RUD_REQ || hdr.uet.type == UET_ROD_REQ ||
             hdr.uet.type == UET_RUD_CC_REQ || hdr.uet.type == UET_ROD_CC_REQ) &&
            standard_metadata.packet_length > UET_TRIMMED_FRAME_LEN &&
            (bit<32>)standard_metadata.enq_qdepth >= meta.mode_arg) {
            truncate(UET_TRIMMED_FRAME_LEN);
            hdr.ipv4.totalLen = UET_TRIMMED_IPV4_LEN;
            hdr.ipv4.dscp = UET_TRIMMED_DSCP;
            hdr.udp.length = UET_TRIMMED_UDP_LEN;
            hdr.udp.checksum = 0;
        }
    }
}

control TorComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control TorDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.arp);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.homa);
        packet.emit(hdr.udp);
        packet.emit(hdr.uet);
    }
}

V1Switch(
    TorParser(),
    TorVerifyChecksum(),
    TorIngress(),
    TorEgress(),
    TorComputeChecksum(),
    TorDeparser()
) main;
