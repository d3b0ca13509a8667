package simnet

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/homatb/homatb/hostagent/homa"
	"github.com/homatb/homatb/hostagent/homa/homaconf"
	"github.com/homatb/homatb/hostagent/homa/wire"
	"github.com/homatb/homatb/p4/dataplane"
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
	// udp: the endpoint's packets are UDP payloads (the roce variant's
	// RoCEv2 on port 4791), framed with a UDP header, not IP protocol 146.
	udp bool
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
		Epoch: epoch.Add(-clockBase), FirstID: firstID}, log)
	if err != nil {
		return fmt.Errorf("simnet: host %s: %w", h.Name, err)
	}
	h.d = d
	h.udp = cfg.Variant == homaconf.VariantRoCE
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

// Stop closes the endpoint: its outstanding Calls fail (their callbacks
// run) and its ticks end.
func (h *Node) Stop() {
	if h.d != nil {
		_ = h.d.Close()
		h.d = nil
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

// receive hands a frame that arrived at h to its endpoint.
func (h *Node) receive(f []byte) {
	if h.d == nil || len(f) < frameHdr {
		h.n.freeFrame(f)
		return
	}
	ip := f[ethLen:]
	p := homa.Packet{Buf: f[frameHdr:], Addr: netip.AddrFrom4([4]byte(ip[12:16])), TOS: ip[1]}
	if ip[9] == udpProto {
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

// WriteBatch copies each packet into a frame and queues it on the NIC.
func (c nodeConn) WriteBatch(pkts []homa.Packet) error {
	h := c.h
	for _, p := range pkts {
		dst := h.n.byIP[p.Addr]
		if dst == nil {
			h.NoRoute++
			continue
		}
		f := h.n.frame(&h.Host, &dst.Host, p.TOS, p.Buf, h.udp)
		if h.shaper != nil {
			h.shaper.send(f)
		} else {
			h.nic.enqueue(f, dataplane.Verdict{})
		}
	}
	return nil
}
