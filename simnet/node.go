package simnet

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/p4/dataplane"
	"github.com/homatb/homatb/simnet/tcpmodel"
	"github.com/homatb/homatb/wire"
)

// Node is a host of the simulated network: its NIC (a FIFO at the link
// rate, or the emulated hosts' shaper) and, once started, its Homa
// endpoint.
type Node struct {
	n *Network
	Host
	nic    *port   // a real NIC, or
	shaper *bucket // the emulated hosts' shaper (Config.HostBurstBytes)
	d      *homa.Driven
	// wakeAt is when the pacer's wake-up is scheduled, if wakeSet.
	wakeAt  time.Duration
	wakeSet bool
	rx      [1]homa.Packet
	wakeFn  func(int64) // wake, made once
	// wakeSched is when the wake-up is scheduled on the simulation's clock.
	wakeSched int64
	// NoRoute counts packets the endpoint sent to an address no host has.
	NoRoute uint64
	// tcp is the host's TCP model when started with StartTCP instead;
	// rxSeg is the segment being delivered to it, sendSegFn its output.
	tcp       *tcpmodel.Host
	rxSeg     tcpmodel.Segment
	sendSegFn tcpmodel.Output
	// udpPort: the endpoint's packets are UDP payloads to this port (the
	// roce variant's RoCEv2 on 4791, uet's on 4793), framed with a UDP
	// header, not IP protocol 146; 0 for Homa's packets.
	udpPort uint16
	// nicPrio: the NIC serves the TCP model's frames by their DSCP class
	// (PrioritizeNIC) instead of in one FIFO.
	nicPrio bool
	// qd is the queue in front of the NIC (UseQdisc), nil for none.
	qd *qdisc
}

// clockBase is virtual time 0 on an endpoint's clock, where 0 means "not
// yet".
const clockBase = time.Second

// Start attaches a Homa endpoint with configuration cfg (its LinkBps and
// framing should be the network's) and starts its ticks. Its RPC ids
// start after firstID; epoch is the wall time CallInfo reports for
// virtual time 0.
func (h *Node) Start(cfg homaconf.Config, firstID uint64, epoch time.Time, log *slog.Logger) error {
	if h.d != nil {
		return fmt.Errorf("simnet: host %s started twice", h.Name)
	}
	clock := &h.n.clock
	d, err := homa.NewDriven(nodeConn{h}, cfg, homa.DrivenConfig{
		Clock: func() time.Duration { return time.Duration(clock.now) + clockBase },
		Epoch: epoch.Add(-clockBase), FirstID: firstID, HeadBytes: h.n.cfg.HeadBytes}, log)
	if err != nil {
		return fmt.Errorf("simnet: host %s: %w", h.Name, err)
	}
	h.d = d
	switch cfg.Variant {
	case homaconf.VariantRoCE:
		h.udpPort = wire.RoCEPort
	case homaconf.VariantUET:
		h.udpPort = d.Endpoint().Config().UETPort
	}
	tick := d.Endpoint().Config().Tick.Nanoseconds()
	var next func()
	next = func() {
		if h.d == nil {
			return
		}
		h.d.Tick()
		h.settle()
		clock.At(clock.now+tick, next)
	}
	clock.At(clock.now+tick, next)
	return nil
}

// StartTCP attaches the TCP model (simnet/tcpmodel) with configuration
// cfg, instead of a Homa endpoint or beside it (Homa's frames and TCP's
// share the NIC).
func (h *Node) StartTCP(cfg tcpmodel.Config) error {
	if h.tcp != nil {
		return fmt.Errorf("simnet: host %s started twice", h.Name)
	}
	if h.n.tcp == nil {
		h.n.tcp = tcpmodel.NewNet()
	}
	h.sendSegFn = h.sendSeg
	t, err := h.n.tcp.NewHost(h.IP, cfg, h.sendSegFn, h.n.scheduleFn)
	if err != nil {
		return fmt.Errorf("simnet: host %s: %w", h.Name, err)
	}
	h.tcp = t
	return nil
}

// PrioritizeNIC has the host's NIC queue each TCP model segment by its
// DSCP's class (CSp in queue p, the switch's default policy) and serve the
// queues in strict priority, as the switches do, instead of in one FIFO:
// the hosts of the PIAS and pFabric papers' ns-2 simulations, whose links
// from host to switch carry the switches' queues, so a flow's packets at
// a high level pass the host's own lower ones. Not with the emulated
// hosts' shaper (Config.HostBurstBytes).
func (h *Node) PrioritizeNIC() error {
	if h.shaper != nil {
		return fmt.Errorf("simnet: host %s: its NIC is the emulated hosts' shaper, which has one queue", h.Name)
	}
	h.nicPrio = true
	return nil
}

// TCP is the host's TCP model, nil unless StartTCP started it.
func (h *Node) TCP() *tcpmodel.Host { return h.tcp }

// Stop closes the endpoint: its outstanding Calls fail (their callbacks
// run) and its ticks end. A TCP model stops its timers; its outstanding
// calls' callbacks do not run.
func (h *Node) Stop() {
	if h.d != nil {
		_ = h.d.Close()
		h.d = nil
	}
	if h.tcp != nil {
		h.tcp.Close()
	}
}

// Endpoint is the host's Homa endpoint, nil before Start.
func (h *Node) Endpoint() *homa.Endpoint {
	if h.d == nil {
		return nil
	}
	return h.d.Endpoint()
}

// Call starts an RPC from h; done runs when it ends (homa.Driven.Call).
func (h *Node) Call(dest netip.AddrPort, req []byte, done func(resp []byte, info homa.CallInfo, err error)) {
	h.d.Call(dest, req, done)
	h.settle()
}

// Send starts a one-way message from h; done runs when it ends
// (homa.Driven.Send). It returns the message's id.
func (h *Node) Send(dest netip.AddrPort, msg []byte, done func(info homa.CallInfo, err error)) uint64 {
	id := h.d.Send(dest, msg, done)
	h.settle()
	return id
}

// Delivered ends h's one-way message id as its receiver has it whole
// (homa.Driven.Delivered): the simulation's acknowledgement, free on the
// wire.
func (h *Node) Delivered(id uint64) {
	if h.d == nil {
		return
	}
	h.d.Delivered(id)
	h.settle()
}

// Drop ends a one-way message h's server received, without a response.
func (h *Node) Drop(sr *homa.ServerRPC) error {
	err := sr.Drop()
	h.settle()
	return err
}

// Serve takes the requests to port with handler (homa.Driven.Serve).
func (h *Node) Serve(port uint16, handler func(*homa.ServerRPC)) error {
	return h.d.Serve(port, handler)
}

// Reply answers a request h's server received.
func (h *Node) Reply(sr *homa.ServerRPC, resp []byte) error {
	err := sr.Reply(resp)
	h.settle()
	return err
}

// settle schedules the pacer's wake-up the endpoint asks for after a call.
func (h *Node) settle() {
	if h.d == nil {
		return
	}
	at, armed := h.d.Timer()
	if !armed || (h.wakeSet && h.wakeAt == at) {
		return
	}
	h.wakeAt, h.wakeSet = at, true
	h.wakeSched = max((at - clockBase).Nanoseconds(), h.n.clock.now)
	h.n.clock.AtTime(h.wakeSched, h.wakeFn)
}

// wake is the pacer's wake-up scheduled for virtual time t, unless a
// later arm replaced it.
func (h *Node) wake(t int64) {
	if h.d == nil || !h.wakeSet || h.wakeSched != t {
		return
	}
	h.wakeSet = false
	h.d.Wake()
	h.settle()
}

// receive hands a frame that arrived at h to its endpoint (or its TCP
// model).
func (h *Node) receive(f []byte) {
	if h.n.cfg.PFC.On() && h.pauseNode(f) {
		return
	}
	if h.tcp != nil && len(f) >= frameHdr+tcpmodel.HeaderLen && f[ethLen+9] == ipProtoTCP {
		h.receiveTCP(f)
		return
	}
	if h.d == nil || len(f) < frameHdr {
		h.n.freeFrame(f)
		return
	}
	ip := f[ethLen:]
	p := homa.Packet{Buf: f[frameHdr:], Addr: netip.AddrFrom4([4]byte(ip[12:16])), TOS: ip[1]}
	if ip[9] == ipProtoUDP {
		p.Buf = p.Buf[min(len(p.Buf), wire.UDPHeaderLen):]
	} else if c, err := wire.ParseCommon(p.Buf); err == nil && c.Trimmed() {
		p.TOS = homa.TOS(dataplane.TrimQueue)
	}
	h.rx[0] = p
	h.d.Deliver(h.rx[:])
	h.rx[0] = homa.Packet{}
	h.n.freeFrame(f) // the endpoint copied what it keeps
	h.settle()
}

// nodeConn is a Node's homa.Conn: what the endpoint writes goes to the
// NIC as frames.
type nodeConn struct{ h *Node }

func (c nodeConn) LocalAddr() netip.Addr { return c.h.IP }
func (c nodeConn) BatchSize() int        { return 16 }
func (c nodeConn) Close() error          { return nil }

func (c nodeConn) ReadBatch([]homa.Packet) (int, error) { return 0, net.ErrClosed }

// WriteBatch copies each packet into a frame and queues it on the NIC; a
// packet's Pad bytes are in the frame's length but not written (the
// frame's buffer keeps whatever it held: nobody reads them).
func (c nodeConn) WriteBatch(pkts []homa.Packet) error {
	h := c.h
	for _, p := range pkts {
		dst := h.n.byIP[v4(p.Addr)]
		if dst == nil {
			h.NoRoute++
			continue
		}
		if h.udpPort != 0 {
			h.transmit(h.n.udpFrame(&h.Host, &dst.Host, p.TOS, p.Buf, p.Pad, cmp.Or(p.Entropy, h.udpPort), h.udpPort), 0)
			continue
		}
		h.transmit(h.n.frame(&h.Host, &dst.Host, wire.IPProto, p.TOS, p.Buf, p.Pad), 0)
	}
	return nil
}

// transmit queues frame f on the host's NIC (or shaper), in queue q of a
// NIC with priorities (PrioritizeNIC; q is 0 otherwise).
func (h *Node) transmit(f []byte, q uint8) {
	switch {
	case h.qd != nil:
		h.qd.send(f)
	case h.shaper != nil:
		h.shaper.send(f)
	default:
		h.nic.enqueue(f, dataplane.Verdict{Queue: q}, 0)
	}
}

// ipProtoTCP is IPv4's protocol number of TCP.
const ipProtoTCP = 6

// ipProtoUDP is IPv4's protocol number of UDP.
const ipProtoUDP = 17

// udpFrame builds the frame carrying payload and pad uncarried bytes (a
// RoCEv2 or UET packet) as a UDP datagram from port sport to port dport
// (UET's source port is the packet's entropy, which the switches'
// multipath hash reads).
func (n *Network) udpFrame(src, dst *Host, tos uint8, payload []byte, pad int, sport, dport uint16) []byte {
	f := n.frameOf(src, dst, ipProtoUDP, tos, wire.UDPHeaderLen+len(payload)+pad)
	u := f[frameHdr:]
	binary.BigEndian.PutUint16(u[0:], sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(wire.UDPHeaderLen+len(payload)+pad))
	binary.BigEndian.PutUint16(u[6:], 0) // no checksum: allowed over IPv4
	copy(u[wire.UDPHeaderLen:], payload)
	return f
}

// sendSeg frames a TCP model's segment (a TCP header with the segment's
// options, then payload bytes the model does not fill) and queues it on
// the NIC.
func (h *Node) sendSeg(dst netip.Addr, s *tcpmodel.Segment) {
	d := h.n.byIP[v4(dst)]
	if d == nil {
		h.NoRoute++
		return
	}
	hl := tcpmodel.HeaderLen + s.OptionsLen()
	f := h.n.frameOf(&h.Host, &d.Host, ipProtoTCP, s.TOS, hl+s.Len)
	t := f[frameHdr:]
	binary.BigEndian.PutUint16(t[0:], s.SrcPort)
	binary.BigEndian.PutUint16(t[2:], s.DstPort)
	binary.BigEndian.PutUint32(t[4:], s.Seq)
	binary.BigEndian.PutUint32(t[8:], s.Ack)
	t[12], t[13] = uint8(hl/4)<<4, s.Flags
	s.PutOptions(t[tcpmodel.HeaderLen:hl])
	var q uint8
	if h.nicPrio {
		q = s.TOS >> 5 // the DSCP's class: CSp is p
	}
	h.transmit(f, q)
}

// receiveTCP hands a TCP frame to the host's model.
func (h *Node) receiveTCP(f []byte) {
	ip, t := f[ethLen:], f[frameHdr:]
	s := &h.rxSeg
	*s = tcpmodel.Segment{SrcPort: binary.BigEndian.Uint16(t[0:]), DstPort: binary.BigEndian.Uint16(t[2:]),
		Seq: binary.BigEndian.Uint32(t[4:]), Ack: binary.BigEndian.Uint32(t[8:]), Flags: t[13], TOS: ip[1],
		Len: int(binary.BigEndian.Uint16(ip[2:])) - ipLen - int(t[12]>>4)*4}
	if hl := int(t[12]>>4) * 4; hl > tcpmodel.HeaderLen && hl <= len(t) {
		s.ParseOptions(t[tcpmodel.HeaderLen:hl])
	}
	src := netip.AddrFrom4([4]byte(ip[12:16]))
	h.n.freeFrame(f)
	h.tcp.Deliver(h.n.clock.now, src, s)
}
